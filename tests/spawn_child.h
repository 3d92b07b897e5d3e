/*
 * A suite's binary run again as a child process ("NAME --child ARGS"), for the suites that
 * check what a second process sees (test_cache, test_expr, test_user_kernel): the child's
 * environment is ours with overrides, its stdout comes back through a pipe.
 */
#ifndef KILN_TESTS_SPAWN_CHILD_H
#define KILN_TESTS_SPAWN_CHILD_H

#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

/* Our environment with overrides: "NAME=value" replaces or adds NAME, a bare "NAME" removes
 * it (overrides may be NULL). The array is new (free it); its strings are borrowed. */
static inline char **
child_env(const char *const *overrides)
{
  size_t ne = 0, no = 0;
  while (environ[ne])
    ne++;
  while (overrides && overrides[no])
    no++;
  char **envp = calloc(ne + no + 1, sizeof *envp);
  ck_assert_ptr_nonnull(envp);
  size_t k = 0;
  for (size_t i = 0; i < ne; i++) {
    int drop = 0;
    for (size_t j = 0; j < no; j++) {
      size_t l = strcspn(overrides[j], "=");
      drop |= strncmp(environ[i], overrides[j], l) == 0 && environ[i][l] == '=';
    }
    if (!drop)
      envp[k++] = environ[i];
  }
  for (size_t j = 0; j < no; j++)
    if (strchr(overrides[j], '='))
      envp[k++] = (char *)overrides[j];
  envp[k] = NULL;
  return envp;
}

/*
 * Runs exe (this binary: "/proc/self/exe") as "name --child args..." (at most 13 args)
 * under child_env(overrides) and waits for it: its exit status (128 + the signal when one
 * killed it), its stdout in out (at most outlen - 1 bytes, NUL-terminated).
 */
static inline int
spawn_child(const char *exe, const char *name, const char *const *args,
            const char *const *overrides, char *out, size_t outlen)
{
  int pipefd[2];
  ck_assert_int_eq(pipe(pipefd), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  char *argv[16];
  int n = 0;
  argv[n++] = (char *)name;
  argv[n++] = (char *)"--child";
  for (int i = 0; args && args[i] && n < 15; i++)
    argv[n++] = (char *)args[i];
  argv[n] = NULL;
  char **envp = child_env(overrides);
  pid_t pid;
  int rc = posix_spawn(&pid, exe, &fa, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  free(envp);
  close(pipefd[1]);
  ck_assert_msg(rc == 0, "posix_spawn: %s", strerror(rc));
  size_t got = 0;
  for (;;) {
    ssize_t r = read(pipefd[0], out + got, outlen - 1 - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
    if (got == outlen - 1)
      break;
  }
  out[got] = 0;
  close(pipefd[0]);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
