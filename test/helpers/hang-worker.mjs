// A conversion worker that never answers (a converter stuck in a loop): isolated.ts's time limit must stop it.
for (;;);
