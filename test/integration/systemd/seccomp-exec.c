/*
 * seccomp-exec: runs a command under the system-call filter and the socket-family
 * restriction that a systemd unit asks for, so that units.test.ts can check that Node
 * (and dssync) still work inside the units' sandbox on a machine where systemd is not
 * PID 1 (containers, CI).
 *
 *   seccomp-exec [-a ALLOWLIST] [-f FAMILY,...] -- COMMAND [ARG...]
 *
 *   -a  SystemCallFilter= as an allow-list: a file with one system-call name per line.
 *       Any other call KILLS the process (systemd's default action; stricter than the
 *       units' SystemCallErrorNumber=EPERM, so that no refused call goes unnoticed).
 *   -f  RestrictAddressFamilies=: the allowed socket() families as numbers (1 = AF_UNIX,
 *       2 = AF_INET, 10 = AF_INET6); socket() with any other family fails with
 *       EAFNOSUPPORT, as under systemd.
 *
 * libseccomp is used through its stable ABI (libseccomp.so.2) with the few declarations
 * below, so that only the runtime library is needed, not its development headers.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

typedef void *scmp_filter_ctx;
struct scmp_arg_cmp {
  unsigned int arg;
  int op;
  uint64_t datum_a;
  uint64_t datum_b;
};
scmp_filter_ctx seccomp_init(uint32_t def_action);
int seccomp_rule_add(scmp_filter_ctx ctx, uint32_t action, int syscall, unsigned int arg_cnt, ...);
int seccomp_syscall_resolve_name(const char *name);
int seccomp_load(scmp_filter_ctx ctx);
void seccomp_release(scmp_filter_ctx ctx);

#define ACT_ALLOW 0x7fff0000U
#define ACT_KILL_PROCESS 0x80000000U
#define ACT_ERRNO(x) (0x00050000U | ((x) & 0x0000ffffU))
#define CMP_EQ 4
#define CMP_GE 5
#define MAX_FAMILY 64

static void load_or_die(scmp_filter_ctx ctx, const char *what) {
  int r = seccomp_load(ctx);
  if (r != 0) {
    fprintf(stderr, "seccomp-exec: loading the %s filter failed: %s\n", what, strerror(-r));
    exit(126);
  }
  seccomp_release(ctx);
}

static void restrict_families(const char *list) {
  int allowed[MAX_FAMILY] = {0};
  char *copy = strdup(list);
  for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
    int f = atoi(tok);
    if (f >= 0 && f < MAX_FAMILY) allowed[f] = 1;
  }
  free(copy);
  scmp_filter_ctx ctx = seccomp_init(ACT_ALLOW);
  int nr = seccomp_syscall_resolve_name("socket");
  int failed = 0;
  for (int f = 0; f < MAX_FAMILY; f++) {
    if (allowed[f]) continue;
    struct scmp_arg_cmp eq = {0, CMP_EQ, (uint64_t)f, 0};
    failed |= seccomp_rule_add(ctx, ACT_ERRNO(EAFNOSUPPORT), nr, 1, eq);
  }
  struct scmp_arg_cmp above = {0, CMP_GE, MAX_FAMILY, 0};
  failed |= seccomp_rule_add(ctx, ACT_ERRNO(EAFNOSUPPORT), nr, 1, above);
  if (failed) {
    fprintf(stderr, "seccomp-exec: adding the socket family rules failed\n");
    exit(126);
  }
  load_or_die(ctx, "socket family");
}

static void allow_only(const char *file) {
  FILE *f = fopen(file, "r");
  if (!f) {
    fprintf(stderr, "seccomp-exec: cannot read %s: %s\n", file, strerror(errno));
    exit(126);
  }
  scmp_filter_ctx ctx = seccomp_init(ACT_KILL_PROCESS);
  char line[128];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0]) continue;
    int nr = seccomp_syscall_resolve_name(line);
    if (nr < 0) continue; /* not a call of this architecture */
    if (seccomp_rule_add(ctx, ACT_ALLOW, nr, 0) != 0) {
      fprintf(stderr, "seccomp-exec: cannot allow %s\n", line);
      exit(126);
    }
  }
  fclose(f);
  load_or_die(ctx, "system call");
}

int main(int argc, char **argv) {
  const char *allowlist = NULL, *families = NULL;
  int i = 1;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "-a") && i + 1 < argc) allowlist = argv[++i];
    else if (!strcmp(argv[i], "-f") && i + 1 < argc) families = argv[++i];
    else if (!strcmp(argv[i], "--")) { i++; break; }
    else { fprintf(stderr, "seccomp-exec: unknown argument %s\n", argv[i]); return 126; }
  }
  if (i >= argc) { fprintf(stderr, "usage: seccomp-exec [-a FILE] [-f N,...] -- COMMAND...\n"); return 126; }
  /* As under systemd (NoNewPrivileges=yes): required to load a filter without privileges. */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) { perror("seccomp-exec: PR_SET_NO_NEW_PRIVS"); return 126; }
  /* The family filter first: once the allow-list is loaded, loading another filter may be refused. */
  if (families) restrict_families(families);
  if (allowlist) allow_only(allowlist);
  execvp(argv[i], argv + i);
  fprintf(stderr, "seccomp-exec: cannot run %s: %s\n", argv[i], strerror(errno));
  return 127;
}
