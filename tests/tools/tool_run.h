/*
 * Programs run as child processes for the tools suites (test_cache_cli.c, test_cli_args.c):
 * the kiln tool (KILN_TEST_KILN) or another program, our environment with additions
 * (spawn_child.h's child_env), stdout and stderr into files under the suite's scratch
 * directory and read back whole, and a deadline past which the child is killed.
 */
#ifndef KILN_TESTS_TOOL_RUN_H
#define KILN_TESTS_TOOL_RUN_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "spawn_child.h"

struct run {
  int status; /* exit status; 128 + signal; -1 when killed at the deadline */
  char *out, *err;
};

/* The whole file at path, NUL-terminated (its length in *len unless len is NULL). */
static inline char *
slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n - 1 == 0)
      buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  buf[n] = 0;
  if (len)
    *len = n;
  return buf;
}

static inline void
run_free(struct run *r)
{
  free(r->out);
  free(r->err);
  memset(r, 0, sizeof *r);
}

/*
 * Runs argv (argv[0] a path) with our environment plus env ("NAME=VALUE", replacing same
 * names; NULL-terminated or NULL), stdin from in_path (NULL: /dev/null), stdout and stderr
 * into files under scratch, or stderr to err_path when given (a terminal, say; r->err is
 * then ""); kills it after deadline_s seconds (0: waits for it however long it takes).
 */
static inline void
run_cmd(struct run *r, const char *scratch, const char *const *env, const char *in_path,
        const char *err_path, int deadline_s, const char *const *argv)
{
  char out[4300], err[4300];
  snprintf(out, sizeof out, "%s/out", scratch);
  snprintf(err, sizeof err, "%s/err", scratch);
  char **envp = child_env(env);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path ? err_path : err,
                                   err_path ? O_RDWR | O_NOCTTY : O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  pid_t pid;
  int e = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  free(envp);
  ck_assert_msg(e == 0, "cannot run %s: %s", argv[0], strerror(e));
  int st = 0;
  pid_t w = 0;
  if (deadline_s > 0) {
    struct timespec nap = {0, 20 * 1000 * 1000};
    for (int ticks = 0; (w = waitpid(pid, &st, WNOHANG)) == 0 && ticks < deadline_s * 50;
         ticks++)
      nanosleep(&nap, NULL);
  }
  if (w == 0 && deadline_s > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    r->status = -1;
  } else {
    if (w == 0)
      ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  r->out = slurp(out, NULL);
  r->err = err_path ? strdup("") : slurp(err, NULL);
}

/* The kiln tool's path (KILN_TEST_KILN, which tests/meson.build sets). */
static inline const char *
kiln_path(void)
{
  const char *p = getenv("KILN_TEST_KILN");
  ck_assert_msg(p && *p, "KILN_TEST_KILN is not set (tests/meson.build sets it)");
  return p;
}

/* run_cmd of the kiln tool with args (a NULL-terminated list). */
static inline void
run_kiln(struct run *r, const char *scratch, const char *const *env, int deadline_s,
         const char *const *args)
{
  const char *argv[64];
  size_t n = 0;
  argv[n++] = kiln_path();
  for (size_t i = 0; args[i]; i++) {
    ck_assert_uint_lt(n, 63);
    argv[n++] = args[i];
  }
  argv[n] = NULL;
  run_cmd(r, scratch, env, NULL, NULL, deadline_s, argv);
}

#endif
