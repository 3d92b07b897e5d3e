/*
 * User kernels (include/kiln/kernel.h) and the runtime's text programs
 * (runtime/program_text.h) they are built on: every kind against a host
 * reference, the disk cache across processes, one build for many threads,
 * build errors with their log.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "runtime/program_text.h"
#include "runtime/runtime.h"

extern char **environ;

/* ------------------------------------------------------------ text programs */

static const char axpb_text[] =
    "__kernel void axpb(__global float *y, __global const float *x, float a, float b, uint n)\n"
    "{\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n)\n"
    "    y[i] = a * x[i] + b;\n"
    "}\n";

/* Runs axpb from text (with a distinguishing comment) over n elements and checks it. */
static void
run_axpb(kiln_context *ctx, const char *text, uint32_t n)
{
  float *h = malloc((n ? n : 1) * sizeof *h), *r = malloc((n ? n : 1) * sizeof *r);
  for (uint32_t i = 0; i < n; i++)
    h[i] = (float)i * 0.5f - 3.0f;
  int64_t shape[1] = {n};
  kiln_tensor *x, *y;
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, shape, &x));
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, shape, &y));
  if (n)
    KOK(kiln_tensor_upload(x, h, n * sizeof *h));
  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln_status s = kiln__text_kernel_get("test", ctx, "axpb test", text, strlen(text), "-cl-std=CL1.2",
                                        "axpb", &k);
  ck_assert_msg(s == KILN_OK, "%s", kiln_last_error());
  if (n) {
    float a = 2.0f, b = 1.0f;
    cl_mem ym = y->mem, xm = x->mem;
    ck_assert(y->offset == 0 && x->offset == 0);
    clSetKernelArg(k, 0, sizeof ym, &ym);
    clSetKernelArg(k, 1, sizeof xm, &xm);
    clSetKernelArg(k, 2, sizeof a, &a);
    clSetKernelArg(k, 3, sizeof b, &b);
    clSetKernelArg(k, 4, sizeof n, &n);
    size_t g = n;
    ck_assert_int_eq(clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &g, NULL, 0, NULL, NULL), 0);
  }
  kiln__ctx_unlock(ctx);
  if (n) {
    KOK(kiln_tensor_download(y, r, n * sizeof *r));
    for (uint32_t i = 0; i < n; i++)
      ck_assert_msg(r[i] == 2.0f * h[i] + 1.0f, "axpb[%u] = %g", i, (double)r[i]);
  }
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  free(h);
  free(r);
}

/* A text no earlier run has compiled: a comment that differs per process and call. */
static char *
fresh_text(const char *base)
{
  static int serial;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char *t = malloc(strlen(base) + 96);
  sprintf(t, "/* %d %ld %ld %d */\n%s", (int)getpid(), (long)ts.tv_sec, ts.tv_nsec, serial++, base);
  return t;
}

START_TEST(text_program_runs_and_is_registered_once)
{
  kiln_context *ctx = harness_ctx();
  char *text = fresh_text(axpb_text);
  uint64_t c0 = kiln__text_compiles();
  run_axpb(ctx, text, 1);
  run_axpb(ctx, text, 1000);
  run_axpb(ctx, text, 0);
  ck_assert_uint_eq(kiln__text_compiles() - c0, 1);
  /* Other options are another program. */
  kiln__ctx_lock(ctx);
  cl_kernel k1, k2;
  KOK(kiln__text_kernel_get("test", ctx, "x", text, strlen(text), "-cl-std=CL1.2", "axpb", &k1));
  KOK(kiln__text_kernel_get("test", ctx, "x", text, strlen(text), "-cl-std=CL1.2 -DX=1", "axpb", &k2));
  ck_assert_ptr_ne(k1, k2);
  ck_assert_uint_eq(kiln__text_compiles() - c0, 2);
  kiln__ctx_unlock(ctx);
  free(text);
}
END_TEST

START_TEST(text_program_bad_input)
{
  kiln_context *ctx = harness_ctx();
  cl_kernel k;
  kiln__ctx_lock(ctx);
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", "", 0, NULL, "k", &k), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", NULL, 4, NULL, "k", &k), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", "ab\0c", 4, NULL, "k", &k),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", axpb_text, strlen(axpb_text), NULL, "", &k),
          KILN_ERR_INVALID_ARGUMENT);
  /* A kernel name the program lacks is the caller's mistake, not kiln's. */
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", axpb_text, strlen(axpb_text), NULL, "nope", &k),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(kiln_last_error(), "nope"), "%s", kiln_last_error());
  /* A compile error: the build log and the numbered source line it points at. */
  const char *bad = "__kernel void broken(__global float *y)\n"
                    "{\n"
                    "  y[0] = undeclared_thing + 1.0f;\n"
                    "}\n";
  KEXPECT(kiln__text_kernel_get("test", ctx, "broken one", bad, strlen(bad), NULL, "broken", &k),
          KILN_ERR_BUILD);
  const char *msg = kiln_last_error();
  ck_assert_msg(strstr(msg, "undeclared_thing"), "no build log: %s", msg);
  ck_assert_msg(strstr(msg, "text:broken one"), "no label: %s", msg);
  ck_assert_msg(strstr(msg, "    3 |   y[0] = undeclared_thing"), "no numbered line: %s", msg);
  kiln__ctx_unlock(ctx);
}
END_TEST

struct race {
  kiln_context *ctx;
  const char *text;
  pthread_barrier_t *bar;
  cl_kernel k;
  kiln_status s;
};

static void *
race_thread(void *arg)
{
  struct race *r = arg;
  pthread_barrier_wait(r->bar);
  kiln__ctx_lock(r->ctx);
  r->s = kiln__text_kernel_get("test", r->ctx, "race", r->text, strlen(r->text), "-cl-std=CL1.2",
                               "axpb", &r->k);
  kiln__ctx_unlock(r->ctx);
  return NULL;
}

START_TEST(many_threads_build_one_text_once)
{
  enum { N = 8 };
  kiln_context *ctx = harness_ctx();
  char *text = fresh_text(axpb_text);
  uint64_t c0 = kiln__text_compiles();
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, N);
  struct race r[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    r[i] = (struct race){ctx, text, &bar, NULL, KILN_ERR_INTERNAL};
    pthread_create(&th[i], NULL, race_thread, &r[i]);
  }
  for (int i = 0; i < N; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(r[i].s, KILN_OK);
    ck_assert_ptr_eq(r[i].k, r[0].k);
  }
  ck_assert_uint_eq(kiln__text_compiles() - c0, 1);
  pthread_barrier_destroy(&bar);
  free(text);
}
END_TEST

/* Runs this binary with --child args under extra environment; returns the exit status, stdout in out. */
static int
spawn_child(const char *const *args, const char *const *env_extra, char *out, size_t outlen)
{
  int pipefd[2];
  ck_assert_int_eq(pipe(pipefd), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  char *argv[16];
  int n = 0;
  argv[n++] = (char *)"test_user_kernel";
  argv[n++] = (char *)"--child";
  for (int i = 0; args[i] && n < 15; i++)
    argv[n++] = (char *)args[i];
  argv[n] = NULL;
  size_t ne = 0;
  while (environ[ne])
    ne++;
  char **envp = calloc(ne + 16, sizeof *envp);
  size_t k = 0;
  for (size_t i = 0; i < ne; i++) {
    int drop = 0;
    for (int j = 0; env_extra[j]; j++) {
      size_t l = strcspn(env_extra[j], "=");
      drop |= strncmp(environ[i], env_extra[j], l) == 0 && environ[i][l] == '=';
    }
    if (!drop)
      envp[k++] = environ[i];
  }
  for (int j = 0; env_extra[j]; j++)
    envp[k++] = (char *)env_extra[j];
  envp[k] = NULL;
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp);
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

/* Child: builds the text program argv[3] names (a comment tag) and reports the cache counters. */
static int
child_text(const char *tag)
{
  kiln_context *ctx;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return 3;
  char *text = malloc(strlen(axpb_text) + strlen(tag) + 16);
  sprintf(text, "/* %s */\n%s", tag, axpb_text);
  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln_status s =
      kiln__text_kernel_get("child", ctx, "child axpb", text, strlen(text), NULL, "axpb", &k);
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK) {
    printf("error %s\n", kiln_last_error());
    return 4;
  }
  kiln_cache_stats st;
  kiln_context_cache_stats(ctx, &st);
  printf("compiles=%llu hits=%llu misses=%llu stores=%llu\n",
         (unsigned long long)kiln__text_compiles(), (unsigned long long)st.session.hits,
         (unsigned long long)st.session.misses, (unsigned long long)st.session.stores);
  kiln_context_release(ctx);
  free(text);
  return 0;
}

START_TEST(second_process_gets_a_disk_hit)
{
  char *dir = harness_tempdir();
  char env_dir[4200], tag[64];
  snprintf(env_dir, sizeof env_dir, "KILN_CACHE_DIR=%s", dir);
  snprintf(tag, sizeof tag, "%d-%ld", (int)getpid(), (long)time(NULL));
  /* The default store policy: a text program is stored on a miss on every platform. */
  const char *env[] = {env_dir, "KILN_CACHE=on", "KILN_CACHE_STORE=auto", NULL};
  const char *args[] = {"text", tag, NULL};
  char out[4096];
  ck_assert_msg(spawn_child(args, env, out, sizeof out) == 0, "first child: %s", out);
  ck_assert_msg(strstr(out, "compiles=1 hits=0 misses=1 stores=1"), "first child: %s", out);
  ck_assert_msg(spawn_child(args, env, out, sizeof out) == 0, "second child: %s", out);
  ck_assert_msg(strstr(out, "compiles=0 hits=1 misses=0 stores=0"), "second child: %s", out);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *
user_kernel_suite(void)
{
  Suite *s = suite_create("user_kernel");
  TCase *tc = tcase_create("text programs");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, text_program_runs_and_is_registered_once);
  tcase_add_test(tc, text_program_bad_input);
  tcase_add_test(tc, many_threads_build_one_text_once);
  tcase_add_test(tc, second_process_gets_a_disk_hit);
  suite_add_tcase(s, tc);
  return s;
}

int
main(int argc, char **argv)
{
  if (argc > 3 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "text") == 0)
    return child_text(argv[3]);
  return harness_main(user_kernel_suite(), 1);
}
