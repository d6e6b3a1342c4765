// A conversion worker whose converter keeps allocating: isolated.ts's memory limit must stop it.
const held = [];
for (;;) held.push(new Array(1e5).fill({ x: held.length }));
