/*
 * kiln bench cases of the sort family (issue 19's PyTorch reference cases; the PyTorch
 * and NumPy equivalents are in bench/peers_torch.py and bench/peers.py under the same names):
 *   sort.sort          sort of n values (values only)
 *   sort.argsort       the indices only
 *   sort.sort_rows     rows of 8192 (n / 8192 of them; one row of n below that)
 *   sort.topk          the 100 largest of n, sorted
 *   sort.topk_rows     the 16 largest of each row of 8192
 *   sort.unique        unique with counts of n i32 in [0, 10^5) (the dtype names the row)
 *   sort.searchsorted  n queries into n / 16 values, the sort of those included
 */
#include <stdlib.h>

#include "tools/bench_sort.h"

int
bench_sort_dtype(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64 || d == KILN_I32 || d == KILN_I64;
}

int
bench_sort_i32(kiln_dtype d)
{
  return d == KILN_I32;
}

static int64_t
row_len(int64_t n)
{
  return n < 8192 ? n : 8192;
}

kiln_status
bench_setup_sort(struct bench_state *st)
{
  return bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
}

kiln_status
bench_run_sort(struct bench_state *st)
{
  return kiln_sort(st->ctx, st->in[0], -1, NULL, &st->out, NULL);
}

kiln_status
bench_setup_argsort(struct bench_state *st)
{
  return bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
}

kiln_status
bench_run_argsort(struct bench_state *st)
{
  return kiln_argsort(st->ctx, st->in[0], -1, NULL, &st->out);
}

kiln_status
bench_setup_sort_rows(struct bench_state *st)
{
  int64_t len = row_len(st->n), shape[2] = {len ? st->n / len : 0, len};
  return bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
}

kiln_status
bench_setup_topk(struct bench_state *st)
{
  return bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
}

kiln_status
bench_run_topk(struct bench_state *st)
{
  uint64_t k = st->n < 100 ? (uint64_t)st->n : 100;
  return kiln_topk(st->ctx, st->in[0], k, 0, 1, 1, &st->out, &st->in[1]);
}

kiln_status
bench_setup_topk_rows(struct bench_state *st)
{
  return bench_setup_sort_rows(st);
}

kiln_status
bench_run_topk_rows(struct bench_state *st)
{
  int64_t len = row_len(st->n);
  uint64_t k = len < 16 ? (uint64_t)len : 16;
  return kiln_topk(st->ctx, st->in[0], k, -1, 1, 1, &st->out, &st->in[1]);
}

kiln_status
bench_setup_unique(struct bench_state *st)
{
  int64_t n = st->n;
  int32_t *h = malloc((size_t)(n ? n : 1) * sizeof *h);
  if (!h)
    return KILN_ERR_HOST_MEMORY;
  uint32_t x = 777;
  for (int64_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    h[i] = (int32_t)((x >> 8) % 100000u);
  }
  kiln_status s = kiln_tensor_from_host(st->ctx, KILN_I32, 1, &n, h, &st->in[0]);
  free(h);
  return s;
}

kiln_status
bench_run_unique(struct bench_state *st)
{
  /* The results' sizes depend on the data: kiln makes them each call. */
  kiln_tensor_release(st->out);
  kiln_tensor_release(st->in[1]);
  st->out = st->in[1] = NULL;
  return kiln_unique(st->ctx, st->in[0], NULL, &st->out, NULL, NULL, &st->in[1]);
}

kiln_status
bench_setup_searchsorted(struct bench_state *st)
{
  int64_t m = st->n / 16 > 0 ? st->n / 16 : 1;
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 1, &m, &st->in[0]);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[1]);
  return s;
}

kiln_status
bench_run_searchsorted(struct bench_state *st)
{
  kiln_status s = kiln_sort(st->ctx, st->in[0], 0, NULL, &st->in[2], NULL);
  if (s == KILN_OK)
    s = kiln_searchsorted(st->ctx, st->in[2], st->in[1], 0, NULL, &st->out);
  return s;
}

double
bench_bytes_sort(int64_t n, size_t esz)
{
  return 2.0 * (double)n * (double)esz;
}

double
bench_bytes_argsort(int64_t n, size_t esz)
{
  return (double)n * ((double)esz + 8.0);
}

double
bench_bytes_read(int64_t n, size_t esz)
{
  return (double)n * (double)esz;
}

double
bench_bytes_unique(int64_t n, size_t esz)
{
  (void)esz;
  return 4.0 * (double)n;
}

double
bench_bytes_searchsorted(int64_t n, size_t esz)
{
  return (double)n * ((double)esz + 8.0);
}
