/*
 * Concurrency suite (meson suite runtime): contexts created, used and released from many threads
 * at once, in a process whose first OpenCL calls are those threads' (harness_main_cold), since
 * the ICD loader and PoCL 3.1 initialise their platforms on first use and their platform and
 * device listing is not thread-safe: before kiln serialised it, threads got KILN_ERR_NO_DEVICE on
 * every attempt or the process crashed in PoCL's device query. Every call must succeed.
 */
#include <pthread.h>
#include <string.h>

#include "harness.h"

#define CHURN_THREADS 8
#define CHURN_ITERS 12

struct churn {
  int id;
  int failures;
  char first[512];
};

static void
churn_fail(struct churn *c, const char *what, kiln_status s)
{
  if (c->failures++ == 0)
    snprintf(c->first, sizeof c->first, "thread %d: %s: %s (%s)", c->id, what, kiln_status_name(s),
             kiln_last_error());
}

/* x = [id, id+1, ...] + iteration, y = x * 3 on ctx; checks y. */
static void
churn_op(struct churn *c, kiln_context *ctx, int it)
{
  int32_t h[37], r[37];
  int64_t n[1] = {37};
  for (int i = 0; i < 37; i++)
    h[i] = c->id * 1000 + it + i;
  kiln_tensor *x = NULL, *y = NULL;
  kiln_status s = kiln_tensor_from_host(ctx, KILN_I32, 1, n, h, &x);
  if (s == KILN_OK)
    s = kiln_binary_scalar(ctx, KILN_OP_MUL, x, kiln_scalar_i64(3), 0, &y);
  if (s == KILN_OK)
    s = kiln_tensor_download(y, r, sizeof r);
  if (s != KILN_OK)
    churn_fail(c, "op", s);
  for (int i = 0; i < 37 && s == KILN_OK; i++)
    if (r[i] != 3 * h[i]) {
      churn_fail(c, "wrong result", KILN_OK);
      break;
    }
  kiln_tensor_release(x);
  kiln_tensor_release(y);
}

static void *
churn_run(void *arg)
{
  struct churn *c = arg;
  for (int it = 0; it < CHURN_ITERS; it++) {
    kiln_context *ctx = NULL, *wrap = NULL;
    kiln_status s = kiln_context_create(NULL, &ctx);
    if (s != KILN_OK) {
      churn_fail(c, "kiln_context_create", s);
      continue;
    }
    churn_op(c, ctx, it);
    /* A second kiln context over the first one's cl objects, with its queue or a new one. */
    cl_context clc;
    cl_device_id dev;
    cl_command_queue q;
    kiln_context_cl_objects(ctx, &clc, &dev, &q);
    s = kiln_context_create_from_cl(clc, dev, it % 2 ? q : NULL, &wrap);
    if (s == KILN_OK)
      churn_op(c, wrap, it);
    else
      churn_fail(c, "kiln_context_create_from_cl", s);
    size_t count = 0;
    if ((s = kiln_device_list(NULL, 0, &count, NULL)) != KILN_OK || count == 0)
      churn_fail(c, "kiln_device_list", s);
    if ((s = kiln_context_release(wrap)) != KILN_OK)
      churn_fail(c, "kiln_context_release (wrapped)", s);
    if ((s = kiln_context_release(ctx)) != KILN_OK)
      churn_fail(c, "kiln_context_release", s);
  }
  return NULL;
}

START_TEST(contexts_from_many_threads)
{
  pthread_t th[CHURN_THREADS];
  struct churn c[CHURN_THREADS];
  for (int i = 0; i < CHURN_THREADS; i++) {
    memset(&c[i], 0, sizeof c[i]);
    c[i].id = i + 1;
    ck_assert_int_eq(pthread_create(&th[i], NULL, churn_run, &c[i]), 0);
  }
  for (int i = 0; i < CHURN_THREADS; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < CHURN_THREADS; i++)
    ck_assert_msg(c[i].failures == 0, "%d failures, first %s", c[i].failures, c[i].first);
}
END_TEST

static Suite *
concurrency_suite(void)
{
  Suite *s = suite_create("concurrency");
  TCase *tc = tcase_create("concurrency");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, contexts_from_many_threads);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main_cold(concurrency_suite());
}
