/*
 * expr suite: fused expressions (include/kiln/expr.h).
 *
 * - Every op of the op table inside expressions (several ops per expression, as its
 *   outputs) against the host references of the elementwise suite (ew_ref.c) with the
 *   same per-op tolerances, for f32, f64 (with fp64), i32, i64, u8 and bool; casts between
 *   every pair of those dtypes against the kiln_cast rules (cast_value).
 * - The demo's chain, broadcasting (merged, split and strided inputs, a one-element
 *   input), where/clamp, and trailing reductions (sum, prod, mean, max, min, any, all;
 *   all axes, single and several axes, keepdims, empty slices, a split reduction with
 *   partial results) against the unfused composition of kiln ops: bitwise for integers;
 *   floats within FUSED_REL of the unfused value (elementwise; the fused kernel runs the
 *   same helper expressions one statement per op, so they agree to rounding of the
 *   compiler's choices) or, for sums and means, within RED_REL times the sum of the
 *   absolute values of the reduced elements (the order of additions differs).
 * - Canonicalisation: equal hashes for reordered equivalent constructions (commutative
 *   operands, x > y as y < x, other constant values, text and C construction), different
 *   ones when an op, dtype, operand order of a non-commutative op, output or reduction
 *   differs.
 * - Scalars and constants changed without a compile (kiln__text_compiles counts them),
 *   many threads planning one expression (one compile), a second process getting a disk
 *   hit for a fused kernel, malformed texts (KILN_ERR_PARSE with the column), type errors
 *   at construction naming the node, and bad arguments.
 * Sizes 0, 1, 7, 1031 (prime) and 2^18 + 3 (the last skipped in the small mode).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ew_ref.h"
#include "expr/expr_internal.h"
#include "harness.h"
#include "runtime/launch.h"
#include "runtime/program_text.h"
#include "spawn_child.h"

#define FUSED_REL_F32 1e-6
#define FUSED_REL_F64 1e-14
#define RED_REL_F32 2e-6
#define RED_REL_F64 1e-14

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64,  KILN_I32, KILN_I64,
                                     KILN_U8,  KILN_BOOL, KILN_F16, KILN_BF16};
#define NDT (sizeof dtypes / sizeof dtypes[0])

static int
dt_ok(kiln_dtype dt)
{
  return dt != KILN_F64 || harness_has_fp64();
}

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t
rnext(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static double
runi(double lo, double hi)
{
  return lo + (hi - lo) * (double)(rnext() >> 11) / 9007199254740992.0;
}

static void *
xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  ck_assert_ptr_nonnull(p);
  return p;
}

static const double fspecials[] = {NAN,  INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5,  -1.5,
                                   2.5,  -2.5,     1.0,       -1.0, 2.0, 3.0, 0.1, -0.1, 1e-3,
                                   100., -100.};
#define NFSPEC (sizeof fspecials / sizeof fspecials[0])

/* n values of dt: special values first, then random ones (small integers among them). */
static void *
make_data(kiln_dtype dt, size_t n, double lo, double hi)
{
  void *h = xmalloc(n * kiln_dtype_size(dt));
  for (size_t i = 0; i < n; i++) {
    if (is_float(dt)) {
      putf(dt, h, i, i < NFSPEC ? fspecials[i] : runi(lo, hi));
    } else if (dt == KILN_BOOL) {
      puti(dt, h, i, (int64_t)(rnext() & 1));
    } else {
      int64_t v;
      uint64_t r = rnext();
      if (i < 8) {
        const int64_t sp[8] = {int_min(dt), int_max(dt), 0, -1, 1, 2, 7, int_min(dt) + 1};
        v = sp[i];
      } else if (r % 3 == 0) {
        v = (int64_t)(rnext() % 41) - 20; /* shift counts around 0 and the width */
      } else {
        v = (int64_t)rnext();
      }
      puti(dt, h, i, wrap(dt, (uint64_t)v));
    }
  }
  return h;
}

static kiln_tensor *
upload(kiln_dtype dt, size_t nd, const int64_t *shape, const void *h)
{
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, nd, shape, h, &t));
  return t;
}

static void *
download(const kiln_tensor *t)
{
  void *h = xmalloc(kiln_tensor_nbytes(t));
  KOK(kiln_tensor_download(t, h, kiln_tensor_nbytes(t)));
  return h;
}

static kiln_tensor *
up1(kiln_dtype dt, size_t n, const void *h)
{
  int64_t s[1] = {(int64_t)n};
  return upload(dt, 1, s, h);
}

/* ------------------------------------------------------------------ every op */

/* Runs ops[0..nops) of one kind on the same inputs as outputs of one expression. */
static void
check_unary_chunk(kiln_dtype dt, const kiln_unary_op *ops, size_t nops, const void *hx, size_t n)
{
  kiln_expr *e;
  int32_t x, y;
  KOK(kiln_expr_create(&e));
  KOK(kiln_expr_input(e, "x", dt, &x));
  for (size_t k = 0; k < nops; k++) {
    KOK(kiln_expr_unary(e, ops[k], x, &y));
    KOK(kiln_expr_output(e, kiln_unary_op_name(ops[k]), y));
  }
  kiln_tensor *tx = up1(dt, n, hx);
  kiln_tensor *outs[KILN_EXPR_MAX_OUTPUTS] = {0};
  const kiln_tensor *in[1] = {tx};
  KOK(kiln_expr_eval(harness_ctx(), e, in, 1, NULL, 0, outs, nops));
  for (size_t k = 0; k < nops; k++) {
    kiln_dtype rdt = kiln_tensor_dtype(outs[k]);
    void *got = download(outs[k]);
    void *want = xmalloc(n * kiln_dtype_size(rdt));
    tol_t tol = unary_tol(ops[k], dt);
    for (size_t i = 0; i < n; i++) {
      rv_t r = {0, 0};
      double xf = is_float(dt) ? getf(dt, hx, i) : (double)geti(dt, hx, i);
      ck_assert(unary_ref(ops[k], dt, xf, is_float(dt) ? 0 : geti(dt, hx, i), &r));
      if (is_float(rdt))
        putf(rdt, want, i, r.f);
      else
        puti(rdt, want, i, r.i);
      if (!elem_matches(rdt, got, want, i, tol))
        ck_abort_msg("%s(%s) element %zu: x %.17g got %.17g want %.17g", kiln_unary_op_name(ops[k]),
                     kiln_dtype_name(dt), i, xf, getf(rdt, got, i), getf(rdt, want, i));
    }
    free(got);
    free(want);
    kiln_tensor_release(outs[k]);
  }
  kiln_tensor_release(tx);
  kiln_expr_release(e);
}

START_TEST(every_unary_op)
{
  const size_t n = harness_small() ? 67 : 1031;
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype dt = dtypes[d];
    if (!dt_ok(dt))
      continue;
    void *hx = make_data(dt, n, -6, 6);
    kiln_unary_op ops[KILN_EXPR_MAX_OUTPUTS];
    size_t nops = 0;
    for (int op = 0; op < KILN_UNARY_OP_COUNT; op++) {
      if (!kiln_unary_op_supports((kiln_unary_op)op, dt))
        continue;
      ops[nops++] = (kiln_unary_op)op;
      if (nops == KILN_EXPR_MAX_OUTPUTS) {
        check_unary_chunk(dt, ops, nops, hx, n);
        nops = 0;
      }
    }
    if (nops)
      check_unary_chunk(dt, ops, nops, hx, n);
    free(hx);
  }
}
END_TEST

static void
check_binary_chunk(kiln_dtype dt, const kiln_binary_op *ops, size_t nops, const void *ha,
                   const void *hb, size_t n)
{
  kiln_expr *e;
  int32_t a, b, y;
  KOK(kiln_expr_create(&e));
  KOK(kiln_expr_input(e, "a", dt, &a));
  KOK(kiln_expr_input(e, "b", dt, &b));
  for (size_t k = 0; k < nops; k++) {
    KOK(kiln_expr_binary(e, ops[k], a, b, &y));
    KOK(kiln_expr_output(e, kiln_binary_op_name(ops[k]), y));
  }
  kiln_tensor *ta = up1(dt, n, ha), *tb = up1(dt, n, hb);
  kiln_tensor *outs[KILN_EXPR_MAX_OUTPUTS] = {0};
  const kiln_tensor *in[2] = {ta, tb};
  KOK(kiln_expr_eval(harness_ctx(), e, in, 2, NULL, 0, outs, nops));
  for (size_t k = 0; k < nops; k++) {
    kiln_dtype rdt = kiln_tensor_dtype(outs[k]);
    void *got = download(outs[k]);
    void *want = xmalloc(n * kiln_dtype_size(rdt));
    tol_t tol = binary_tol(ops[k], dt);
    for (size_t i = 0; i < n; i++) {
      rv_t r = {0, 0};
      double af = getf(dt, ha, i), bf = getf(dt, hb, i);
      int64_t ai = is_float(dt) ? 0 : geti(dt, ha, i), bi = is_float(dt) ? 0 : geti(dt, hb, i);
      ck_assert(binary_ref(ops[k], dt, af, bf, ai, bi, &r));
      if (is_float(rdt))
        putf(rdt, want, i, r.f);
      else
        puti(rdt, want, i, r.i);
      if (!elem_matches(rdt, got, want, i, tol))
        ck_abort_msg("%s(%s) element %zu: a %.17g b %.17g got %.17g want %.17g",
                     kiln_binary_op_name(ops[k]), kiln_dtype_name(dt), i, af, bf,
                     getf(rdt, got, i), getf(rdt, want, i));
    }
    free(got);
    free(want);
    kiln_tensor_release(outs[k]);
  }
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_expr_release(e);
}

START_TEST(every_binary_op)
{
  const size_t n = harness_small() ? 67 : 1031;
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype dt = dtypes[d];
    if (!dt_ok(dt))
      continue;
    void *ha = make_data(dt, n, -6, 6);
    void *hb = make_data(dt, n, -6, 6);
    /* b's specials in another order, so special meets special of another kind */
    if (is_float(dt))
      for (size_t i = 0; i < NFSPEC && i < n; i++)
        putf(dt, hb, i, fspecials[(i * 7 + 3) % NFSPEC]);
    kiln_binary_op ops[KILN_EXPR_MAX_OUTPUTS];
    size_t nops = 0;
    for (int op = 0; op < KILN_BINARY_OP_COUNT; op++) {
      if (!kiln_binary_op_supports((kiln_binary_op)op, dt))
        continue;
      ops[nops++] = (kiln_binary_op)op;
      if (nops == KILN_EXPR_MAX_OUTPUTS) {
        check_binary_chunk(dt, ops, nops, ha, hb, n);
        nops = 0;
      }
    }
    if (nops)
      check_binary_chunk(dt, ops, nops, ha, hb, n);
    free(ha);
    free(hb);
  }
}
END_TEST

START_TEST(every_cast)
{
  const size_t n = harness_small() ? 67 : 1031;
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype from = dtypes[d];
    if (!dt_ok(from))
      continue;
    void *hx = make_data(from, n, -300, 300);
    kiln_expr *e;
    int32_t x, y;
    KOK(kiln_expr_create(&e));
    KOK(kiln_expr_input(e, "x", from, &x));
    size_t nout = 0;
    kiln_dtype to_list[NDT];
    for (size_t t = 0; t < NDT; t++) {
      if (!dt_ok(dtypes[t]))
        continue;
      KOK(kiln_expr_cast(e, x, dtypes[t], &y));
      KOK(kiln_expr_output(e, kiln_dtype_name(dtypes[t]), y));
      to_list[nout++] = dtypes[t];
    }
    kiln_tensor *tx = up1(from, n, hx);
    kiln_tensor *outs[NDT] = {0};
    const kiln_tensor *in[1] = {tx};
    KOK(kiln_expr_eval(harness_ctx(), e, in, 1, NULL, 0, outs, nout));
    for (size_t k = 0; k < nout; k++) {
      kiln_dtype to = to_list[k];
      ck_assert_int_eq(kiln_tensor_dtype(outs[k]), to);
      void *got = download(outs[k]);
      void *want = xmalloc(n * kiln_dtype_size(to));
      for (size_t i = 0; i < n; i++) {
        cast_elem(from, hx, i, to, want, i);
        if (!elem_matches(to, got, want, i, EXACT_NOSIGN))
          ck_abort_msg("cast %s -> %s element %zu: x %.17g got %.17g want %.17g",
                       kiln_dtype_name(from), kiln_dtype_name(to), i, getf(from, hx, i),
                       getf(to, got, i), getf(to, want, i));
      }
      free(got);
      free(want);
      kiln_tensor_release(outs[k]);
    }
    kiln_tensor_release(tx);
    kiln_expr_release(e);
    free(hx);
  }
}
END_TEST

/* ------------------------------------------------------------------ against the unfused ops */

/* Floats within rel (and rel * 1e-3 absolute), or abs where abs is larger. */
static void
compare_unfused_tol(const char *what, const kiln_tensor *fused, const kiln_tensor *unfused,
                    double abs_f32, double abs_f64)
{
  kiln_dtype dt = kiln_tensor_dtype(unfused);
  ck_assert_int_eq(kiln_tensor_dtype(fused), dt);
  ck_assert_uint_eq(kiln_tensor_ndim(fused), kiln_tensor_ndim(unfused));
  for (size_t j = 0; j < kiln_tensor_ndim(fused); j++)
    ck_assert_int_eq(kiln_tensor_dim(fused, j), kiln_tensor_dim(unfused, j));
  size_t n = kiln_tensor_numel(fused);
  void *g = download(fused), *w = download(unfused);
  if (!is_float(dt)) {
    ck_assert_msg(memcmp(g, w, n * kiln_dtype_size(dt)) == 0, "%s: integer results differ", what);
  } else {
    double rel = dt == KILN_F64 ? FUSED_REL_F64 : FUSED_REL_F32;
    double abs = dt == KILN_F64 ? abs_f64 : abs_f32;
    /* f16, bf16: each op rounds as the unfused kernel stores, but the f32 builtins under
       them may be scalar in one and vector in the other: one ulp of the 16-bit type */
    tol_t tol = {rel, abs > rel * 1e-3 ? abs : rel * 1e-3, 0, is_half(dt)};
    for (size_t i = 0; i < n; i++)
      if (!elem_matches(dt, g, w, i, tol))
        ck_abort_msg("%s element %zu: fused %.17g unfused %.17g", what, i, getf(dt, g, i),
                     getf(dt, w, i));
  }
  free(g);
  free(w);
}

static void
compare_unfused(const char *what, const kiln_tensor *fused, const kiln_tensor *unfused)
{
  compare_unfused_tol(what, fused, unfused, 0, 0);
}

/* sigmoid(2x + 1) * cos(x) - relu(x), unfused through kiln's own ops. */
static kiln_tensor *
demo_unfused(kiln_context *ctx, const kiln_tensor *x)
{
  kiln_tensor *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL, *t5 = NULL, *t6 = NULL, *y = NULL;
  KOK(kiln_binary_scalar(ctx, KILN_OP_MUL, x, kiln_scalar_f64(2), 0, &t1));
  KOK(kiln_binary_scalar(ctx, KILN_OP_ADD, t1, kiln_scalar_f64(1), 0, &t2));
  KOK(kiln_unary(ctx, KILN_OP_SIGMOID, t2, &t3));
  KOK(kiln_unary(ctx, KILN_OP_COS, x, &t4));
  KOK(kiln_binary(ctx, KILN_OP_MUL, t3, t4, &t5));
  KOK(kiln_unary(ctx, KILN_OP_RELU, x, &t6));
  KOK(kiln_binary(ctx, KILN_OP_SUB, t5, t6, &y));
  kiln_tensor *ts[] = {t1, t2, t3, t4, t5, t6};
  for (size_t i = 0; i < 6; i++)
    kiln_tensor_release(ts[i]);
  return y;
}

START_TEST(demo_chain_sizes)
{
  kiln_context *ctx = harness_ctx();
  const size_t sizes[] = {0, 1, 7, 1031, (1u << 18) + 3};
  const kiln_dtype fts[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16};
  for (size_t d = 0; d < 4; d++) {
    if (!dt_ok(fts[d]))
      continue;
    kiln_expr_var v = {"x", fts[d], 0};
    kiln_expr *e;
    KOK(kiln_expr_parse("y = sigmoid(2*x + 1) * cos(x) - relu(x)", &v, 1, &e));
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      size_t n = sizes[s];
      if (!harness_fits(n))
        continue;
      void *hx = make_data(fts[d], n, -8, 8);
      kiln_tensor *x = up1(fts[d], n, hx);
      const kiln_tensor *in[1] = {x};
      kiln_tensor *y = NULL;
      KOK(kiln_expr_eval(ctx, e, in, 1, NULL, 0, &y, 1));
      kiln_tensor *w = demo_unfused(ctx, x);
      char what[64];
      snprintf(what, sizeof what, "demo chain %s n=%zu", kiln_dtype_name(fts[d]), n);
      /*
       * On CPUs the fused kernel calls the vector forms of exp and cos (docs/expr.md), which
       * may differ from the scalar ones by their ulp bounds (OpenCL: 3 and 4 in f32); the
       * subtraction can cancel, so the bound is 8 ulp of the terms (x up to 8), absolute.
       */
      compare_unfused_tol(what, y, w, 8 * 8 * 0x1p-23, 8 * 8 * 0x1p-52);
      kiln_tensor_release(y);
      kiln_tensor_release(w);
      kiln_tensor_release(x);
      free(hx);
    }
    kiln_expr_release(e);
  }
}
END_TEST

/* a * b + c - d * 3 over broadcast shapes, against kiln_binary's broadcasting. */
static void
check_broadcast(kiln_dtype dt, const int64_t shapes[4][4], const size_t nds[4])
{
  kiln_context *ctx = harness_ctx();
  kiln_expr_var v[4] = {{"a", dt, 0}, {"b", dt, 0}, {"c", dt, 0}, {"d", dt, 0}};
  kiln_expr *e;
  /* every output has the broadcast shape of all inputs: z uses all four */
  KOK(kiln_expr_parse("y = a * b + c - d * 3\nz = max(a * b, c * d)", v, 4, &e));
  kiln_tensor *t[4];
  void *h[4];
  for (int k = 0; k < 4; k++) {
    size_t n = 1;
    for (size_t j = 0; j < nds[k]; j++)
      n *= (size_t)shapes[k][j];
    h[k] = make_data(dt, n, -4, 4);
    t[k] = upload(dt, nds[k], shapes[k], h[k]);
  }
  const kiln_tensor *in[4] = {t[0], t[1], t[2], t[3]};
  kiln_tensor *out[2] = {NULL, NULL};
  KOK(kiln_expr_eval(ctx, e, in, 4, NULL, 0, out, 2));
  kiln_tensor *ab = NULL, *abc = NULL, *d3 = NULL, *y = NULL, *z = NULL;
  KOK(kiln_binary(ctx, KILN_OP_MUL, t[0], t[1], &ab));
  KOK(kiln_binary(ctx, KILN_OP_ADD, ab, t[2], &abc));
  KOK(kiln_binary_scalar(ctx, KILN_OP_MUL, t[3], kiln_scalar_i64(3), 0, &d3));
  KOK(kiln_binary(ctx, KILN_OP_SUB, abc, d3, &y));
  kiln_tensor *cd = NULL;
  KOK(kiln_binary(ctx, KILN_OP_MUL, t[2], t[3], &cd));
  KOK(kiln_binary(ctx, KILN_OP_MAX, ab, cd, &z));
  kiln_tensor_release(cd);
  compare_unfused("broadcast y", out[0], y);
  compare_unfused("broadcast z", out[1], z);
  kiln_tensor *rel[] = {ab, abc, d3, y, z, out[0], out[1], t[0], t[1], t[2], t[3]};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
    kiln_tensor_release(rel[i]);
  for (int k = 0; k < 4; k++)
    free(h[k]);
  kiln_expr_release(e);
}

START_TEST(broadcasting)
{
  /* merged (every input full), split (a row and a column), strided (middle axes), one element */
  const int64_t cases[][4][4] = {
      {{5, 7}, {5, 7}, {5, 7}, {5, 7}},
      {{3, 1, 5}, {4, 1}, {5}, {1}},
      {{6, 1, 3, 2}, {1, 4, 1, 2}, {2}, {6, 4, 3, 1}},
      {{1031}, {1}, {1031}, {1}},
      {{0, 3}, {3}, {1, 3}, {1}},
  };
  const size_t nds[][4] = {{2, 2, 2, 2}, {3, 2, 1, 1}, {4, 4, 1, 4}, {1, 1, 1, 1}, {2, 1, 2, 1}};
  /* f32 and i32 every case; f64 and u8 the strided one */
  const kiln_dtype bts[] = {KILN_F32, KILN_I32, KILN_F64, KILN_U8};
  for (size_t d = 0; d < 4; d++) {
    if (!dt_ok(bts[d]))
      continue;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
      if ((d < 2 || c == 2) && !(harness_small() && d > 0 && c != 2))
        check_broadcast(bts[d], cases[c], nds[c]);
  }
}
END_TEST

START_TEST(where_clamp_scalars)
{
  kiln_context *ctx = harness_ctx();
  const size_t n = 1031;
  kiln_expr_var v[3] = {{"x", KILN_F32, 0}, {"lo", KILN_F32, 1}, {"hi", KILN_F32, 1}};
  kiln_expr *e;
  KOK(kiln_expr_parse("y = where(x > 0, x, -x) ; z = clamp(x, lo, hi)", v, 3, &e));
  void *hx = make_data(KILN_F32, n, -5, 5);
  kiln_tensor *x = up1(KILN_F32, n, hx);
  const kiln_tensor *in[1] = {x};
  kiln_expr_plan *p;
  KOK(kiln_expr_plan_create(ctx, e, in, 1, &p));
  const double bounds[][2] = {{-1, 2}, {0.5, 0.25}, {-INFINITY, 3}};
  for (size_t b = 0; b < 3; b++) {
    kiln_scalar sc[2] = {kiln_scalar_f64(bounds[b][0]), kiln_scalar_f64(bounds[b][1])};
    kiln_tensor *out[2] = {NULL, NULL};
    KOK(kiln_expr_plan_run(p, in, 1, sc, 2, out, 2));
    kiln_tensor *pos = NULL, *neg = NULL, *w = NULL, *c = NULL;
    KOK(kiln_binary_scalar(ctx, KILN_OP_GT, x, kiln_scalar_f64(0), 0, &pos));
    KOK(kiln_unary(ctx, KILN_OP_NEG, x, &neg));
    KOK(kiln_where(ctx, pos, x, neg, &w));
    KOK(kiln_clamp(ctx, x, sc[0], sc[1], &c));
    compare_unfused("where", out[0], w);
    compare_unfused("clamp", out[1], c);
    kiln_tensor *rel[] = {pos, neg, w, c, out[0], out[1]};
    for (size_t i = 0; i < 6; i++)
      kiln_tensor_release(rel[i]);
  }
  kiln_expr_plan_release(p);
  kiln_tensor_release(x);
  free(hx);
  kiln_expr_release(e);
}
END_TEST

/* ------------------------------------------------------------------ reductions */

/* Sum of |v| over each output element's slice (host), for the float tolerance. */
static double *
abs_sums(kiln_dtype dt, const void *v, size_t nd, const int64_t *shape, const int *reduced,
         size_t nout)
{
  double *s = calloc(nout ? nout : 1, sizeof *s);
  size_t n = 1;
  for (size_t j = 0; j < nd; j++)
    n *= (size_t)shape[j];
  for (size_t i = 0; i < n; i++) {
    size_t rem = i, o = 0, scale = 1;
    for (size_t j = nd; j-- > 0;) {
      size_t c = rem % (size_t)shape[j];
      rem /= (size_t)shape[j];
      if (!reduced[j]) {
        o += c * scale;
        scale *= (size_t)shape[j];
      }
    }
    s[o] += fabs(getf(dt, v, i));
  }
  return s;
}

static void
check_reduction(kiln_dtype dt, kiln_reduce_op rop, size_t nd, const int64_t *shape,
                const int64_t *axes, size_t naxes, int keepdims, const char *text)
{
  kiln_context *ctx = harness_ctx();
  size_t n = 1;
  for (size_t j = 0; j < nd; j++)
    n *= (size_t)shape[j];
  void *ha = make_data(dt, n, rop == KILN_REDUCE_PROD ? 0.7 : -3,
                       rop == KILN_REDUCE_PROD ? 1.3 : 3);
  void *hb = make_data(dt, n, -2, 2);
  if (is_float(dt)) /* no NaN or infinities in the reduced values: their sums would be NaN */
    for (size_t i = 0; i < n && i < NFSPEC; i++) {
      putf(dt, ha, i, rop == KILN_REDUCE_PROD ? 1.1 : 0.25 * (double)i);
      putf(dt, hb, i, 0.5);
    }
  kiln_tensor *a = upload(dt, nd, shape, ha), *b = upload(dt, nd, shape, hb);
  kiln_expr_var v[2] = {{"a", dt, 0}, {"b", dt, 0}};
  kiln_expr *e;
  KOK(kiln_expr_parse(text, v, 2, &e));
  KOK(kiln_expr_reduce(e, rop, axes, naxes, keepdims));
  const kiln_tensor *in[2] = {a, b};
  kiln_tensor *y = NULL;
  KOK(kiln_expr_eval(ctx, e, in, 2, NULL, 0, &y, 1));
  /* unfused: the same elementwise expression, then kiln_reduce */
  kiln_expr *e0;
  KOK(kiln_expr_parse(text, v, 2, &e0));
  kiln_tensor *m = NULL, *w = NULL;
  KOK(kiln_expr_eval(ctx, e0, in, 2, NULL, 0, &m, 1));
  KOK(kiln_reduce(ctx, rop, m, axes, naxes, keepdims, NULL, &w));
  char what[160];
  snprintf(what, sizeof what, "%s %s of '%s' naxes %zu keepdims %d n %zu", kiln_reduce_op_name(rop),
           kiln_dtype_name(dt), text, naxes, keepdims, n);
  kiln_dtype rdt = kiln_tensor_dtype(w);
  ck_assert_msg(kiln_tensor_dtype(y) == rdt, "%s: dtype %s, kiln_reduce gives %s", what,
                kiln_dtype_name(kiln_tensor_dtype(y)), kiln_dtype_name(rdt));
  ck_assert_uint_eq(kiln_tensor_ndim(y), kiln_tensor_ndim(w));
  for (size_t j = 0; j < kiln_tensor_ndim(w); j++)
    ck_assert_int_eq(kiln_tensor_dim(y, j), kiln_tensor_dim(w, j));
  size_t nout = kiln_tensor_numel(w);
  void *g = download(y), *want = download(w);
  if (!is_float(rdt)) {
    ck_assert_msg(memcmp(g, want, nout * kiln_dtype_size(rdt)) == 0, "%s: results differ", what);
  } else {
    int reduced[KILN_MAX_DIMS] = {0};
    for (size_t j = 0; j < nd; j++)
      reduced[j] = axes == NULL;
    for (size_t i = 0; i < naxes; i++)
      reduced[axes[i] < 0 ? axes[i] + (int64_t)nd : axes[i]] = 1;
    void *hm = download(m);
    double *as = abs_sums(kiln_tensor_dtype(m), hm, nd, shape, reduced, nout);
    double rel = rdt == KILN_F32 ? RED_REL_F32 : RED_REL_F64;
    size_t cnt = n / (nout ? nout : 1);
    for (size_t i = 0; i < nout; i++) {
      double gv = getf(rdt, g, i), wv = getf(rdt, want, i);
      double tol;
      if (rop == KILN_REDUCE_SUM)
        tol = rel * (as[i] + 1) * 8;
      else if (rop == KILN_REDUCE_MEAN)
        tol = rel * (as[i] + 1) * 8 / (double)(cnt ? cnt : 1);
      else if (rop == KILN_REDUCE_PROD)
        tol = rel * 8 * (double)(cnt + 1) * fabs(wv);
      else
        tol = 0;
      if (!((isnan(gv) && isnan(wv)) || gv == wv || fabs(gv - wv) <= tol))
        ck_abort_msg("%s: element %zu fused %.17g unfused %.17g (tolerance %g)", what, i, gv, wv,
                     tol);
    }
    free(as);
    free(hm);
  }
  free(g);
  free(want);
  kiln_tensor *rel[] = {a, b, y, m, w};
  for (size_t i = 0; i < 5; i++)
    kiln_tensor_release(rel[i]);
  kiln_expr_release(e);
  kiln_expr_release(e0);
  free(ha);
  free(hb);
}

/* f16 and bf16 with other dtypes, a named 16-bit scalar, a reduction, the text form's casts. */
START_TEST(halves)
{
  kiln_context *ctx = harness_ctx();
  const size_t n = harness_small() ? 67 : 1031;
  const kiln_dtype hts[] = {KILN_F16, KILN_BF16};
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype h = hts[d];
    void *hx = make_data(h, n, -20, 20), *hf = make_data(KILN_F32, n, -4, 4);
    kiln_tensor *x = up1(h, n, hx), *f = up1(KILN_F32, n, hf);
    /* y = x * s + x: s rounds to the 16-bit type once (0.1 -> f16's 0.0999755859375);
       z = x * f promotes to f32 (the 16-bit value converts exactly);
       w = f16(f) / bf16(f): one rounding, as kiln_cast */
    kiln_expr_var v[3] = {{"x", h, 0}, {"f", KILN_F32, 0}, {"s", h, 1}};
    kiln_expr *e;
    KOK(kiln_expr_parse(h == KILN_F16 ? "y = x * s + x\nz = x * f\nw = f16(f)"
                                      : "y = x * s + x\nz = x * f\nw = bf16(f)",
                        v, 3, &e));
    const kiln_tensor *in[2] = {x, f};
    kiln_scalar sv = kiln_scalar_f64(0.1);
    kiln_tensor *out[3] = {NULL, NULL, NULL};
    KOK(kiln_expr_eval(ctx, e, in, 2, &sv, 1, out, 3));
    ck_assert_int_eq(kiln_tensor_dtype(out[0]), h);
    ck_assert_int_eq(kiln_tensor_dtype(out[1]), KILN_F32);
    ck_assert_int_eq(kiln_tensor_dtype(out[2]), h);
    kiln_tensor *t = NULL, *y = NULL, *xf = NULL, *z = NULL, *w = NULL;
    KOK(kiln_binary_scalar(ctx, KILN_OP_MUL, x, sv, 0, &t));
    KOK(kiln_binary(ctx, KILN_OP_ADD, t, x, &y));
    KOK(kiln_cast(ctx, x, KILN_F32, &xf));
    KOK(kiln_binary(ctx, KILN_OP_MUL, xf, f, &z));
    KOK(kiln_cast(ctx, f, h, &w));
    compare_unfused("halves y", out[0], y);
    compare_unfused("halves z", out[1], z);
    compare_unfused("halves w", out[2], w);
    /* s = sum(x * 0.5 + 1): f32 accumulation, one rounding at the end, as kiln_reduce */
    kiln_expr *r;
    KOK(kiln_expr_parse("s = sum(x * 0.5 + 1)", v, 1, &r));
    kiln_tensor *fs = NULL, *a = NULL, *b = NULL, *us = NULL;
    KOK(kiln_expr_eval(ctx, r, in, 1, NULL, 0, &fs, 1));
    KOK(kiln_binary_scalar(ctx, KILN_OP_MUL, x, kiln_scalar_f64(0.5), 0, &a));
    KOK(kiln_binary_scalar(ctx, KILN_OP_ADD, a, kiln_scalar_f64(1), 0, &b));
    KOK(kiln_reduce(ctx, KILN_REDUCE_SUM, b, NULL, 0, 0, NULL, &us));
    ck_assert_int_eq(kiln_tensor_dtype(fs), h);
    void *g = download(fs), *want = download(us);
    /* the same terms in another order: within two units of the 16-bit type */
    ck_assert_msg(elem_matches(h, g, want, 0, (tol_t){0, 0, 0, 2}), "%s sum: fused %.9g unfused %.9g",
                  kiln_dtype_name(h), getf(h, g, 0), getf(h, want, 0));
    free(g);
    free(want);
    kiln_tensor *all[] = {x, f, out[0], out[1], out[2], t, y, xf, z, w, fs, a, b, us};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
      kiln_tensor_release(all[i]);
    kiln_expr_release(e);
    kiln_expr_release(r);
    free(hx);
    free(hf);
  }
}
END_TEST

START_TEST(reductions)
{
  const kiln_reduce_op ops[] = {KILN_REDUCE_SUM, KILN_REDUCE_PROD, KILN_REDUCE_MEAN,
                                KILN_REDUCE_MAX, KILN_REDUCE_MIN,  KILN_REDUCE_ANY,
                                KILN_REDUCE_ALL};
  const int64_t shape[3] = {6, 7, 5};
  const int64_t ax0[1] = {0}, axl[1] = {-1}, ax02[2] = {0, 2}, ax1[1] = {1};
  const kiln_dtype rts[] = {KILN_F32, KILN_I32, KILN_F64};
  for (size_t d = 0; d < (harness_small() ? 1u : 3u); d++) {
    kiln_dtype dt = rts[d];
    if (!dt_ok(dt))
      continue;
    /* each op with one of the axis sets in turn (every set for every dtype: one compile each) */
    const int64_t *axs[5] = {NULL, ax0, axl, ax02, ax1};
    const size_t nax[5] = {0, 1, 1, 2, 1};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
      const char *text = ops[o] == KILN_REDUCE_PROD ? "y = a * 1 + b * 0" : "y = a * b + a";
      size_t v = (o + d) % 5;
      check_reduction(dt, ops[o], 3, shape, axs[v], nax[v], (int)(o & 1), text);
    }
  }
  /* bool any/all and integer sums of bool (i64 results) */
  check_reduction(KILN_U8, KILN_REDUCE_SUM, 3, shape, ax02, 2, 0, "y = a < b");
  check_reduction(KILN_I32, KILN_REDUCE_ANY, 3, shape, ax1, 1, 0, "y = a < b");
  check_reduction(KILN_I32, KILN_REDUCE_ALL, 3, shape, NULL, 0, 1, "y = a != 7");
  /* empty slices (sum, mean of nothing) and empty outputs */
  const int64_t e0[2] = {0, 4}, e1[2] = {4, 0};
  check_reduction(KILN_F32, KILN_REDUCE_SUM, 2, e0, ax0, 1, 0, "y = a + b");
  check_reduction(KILN_F32, KILN_REDUCE_MEAN, 2, e0, ax0, 1, 1, "y = a + b");
  check_reduction(KILN_F32, KILN_REDUCE_SUM, 2, e1, ax0, 1, 0, "y = a + b");
  check_reduction(KILN_I32, KILN_REDUCE_PROD, 2, e0, NULL, 0, 0, "y = a + b");
  /* one long slice: per-group partials and the final kernel */
  if (!harness_small()) {
    const int64_t big[1] = {(1 << 18) + 3}, wide[2] = {3, 100003};
    check_reduction(KILN_F32, KILN_REDUCE_SUM, 1, big, NULL, 0, 0, "y = a * b + a");
    check_reduction(KILN_I64, KILN_REDUCE_SUM, 1, big, NULL, 0, 0, "y = a * b + a");
    check_reduction(KILN_F32, KILN_REDUCE_MAX, 1, big, NULL, 0, 0, "y = a * b + a");
    check_reduction(KILN_F32, KILN_REDUCE_MEAN, 2, wide, axl, 1, 0, "y = a * b + a");
    check_reduction(KILN_I32, KILN_REDUCE_MIN, 2, wide, ax0, 1, 0, "y = a * b + a");
  }
  /* min over nothing has no value */
  kiln_expr_var v = {"a", KILN_F32, 0};
  kiln_expr *e;
  KOK(kiln_expr_parse("y = amin(a * 2, 0)", &v, 1, &e));
  kiln_tensor *a = NULL;
  KOK(kiln_tensor_zeros(harness_ctx(), KILN_F32, 2, e0, &a));
  const kiln_tensor *in[1] = {a};
  kiln_tensor *y = NULL;
  KEXPECT(kiln_expr_eval(harness_ctx(), e, in, 1, NULL, 0, &y, 1), KILN_ERR_SHAPE);
  ck_assert_ptr_null(y);
  kiln_tensor_release(a);
  kiln_expr_release(e);
}
END_TEST

static void
check_scan(kiln_dtype dt, kiln_scan_op sop, size_t nd, const int64_t *shape, int64_t axis,
           int exclusive)
{
  kiln_context *ctx = harness_ctx();
  size_t n = 1;
  for (size_t j = 0; j < nd; j++)
    n *= (size_t)shape[j];
  int prod = sop == KILN_SCAN_CUMPROD;
  void *ha = make_data(dt, n, prod ? 0.9 : -3, prod ? 1.1 : 3);
  void *hb = make_data(dt, n, -2, 2);
  if (is_float(dt)) /* finite values: running sums of infinities would be NaN on both sides */
    for (size_t i = 0; i < n && i < NFSPEC; i++) {
      putf(dt, ha, i, prod ? 1.01 : 0.5 * (double)i - 3);
      putf(dt, hb, i, 0.25);
    }
  if (prod && !is_float(dt))
    for (size_t i = 0; i < n; i++)
      puti(dt, ha, i, (int64_t)(rnext() % 3)); /* small factors: the products wrap like kiln's */
  kiln_tensor *a = upload(dt, nd, shape, ha), *b = upload(dt, nd, shape, hb);
  kiln_expr_var v[2] = {{"a", dt, 0}, {"b", dt, 0}};
  const char *text = prod ? "y = a + b * 0" : "y = a * b + a";
  kiln_expr *e, *e0;
  KOK(kiln_expr_parse(text, v, 2, &e));
  KOK(kiln_expr_scan(e, sop, axis, exclusive));
  KOK(kiln_expr_parse(text, v, 2, &e0));
  const kiln_tensor *in[2] = {a, b};
  kiln_tensor *y = NULL, *m = NULL, *w = NULL;
  KOK(kiln_expr_eval(ctx, e, in, 2, NULL, 0, &y, 1));
  KOK(kiln_expr_eval(ctx, e0, in, 2, NULL, 0, &m, 1));
  kiln_scan_options opts = {exclusive, KILN_NAN_PROPAGATE};
  KOK(kiln_scan(ctx, sop, m, axis, &opts, &w));
  char what[160];
  snprintf(what, sizeof what, "%s %s axis %lld exclusive %d n %zu", kiln_scan_op_name(sop),
           kiln_dtype_name(dt), (long long)axis, exclusive, n);
  kiln_dtype rdt = kiln_tensor_dtype(w);
  ck_assert_msg(kiln_tensor_dtype(y) == rdt, "%s: dtype", what);
  void *g = download(y), *want = download(w);
  if (!is_float(rdt)) {
    ck_assert_msg(memcmp(g, want, n * kiln_dtype_size(rdt)) == 0, "%s: results differ", what);
  } else {
    /* running sums: the tolerance of the reduction of the longest prefix */
    int64_t len = shape[axis < 0 ? axis + (int64_t)nd : axis];
    double rel = rdt == KILN_F32 ? RED_REL_F32 : RED_REL_F64;
    for (size_t i = 0; i < n; i++) {
      double gv = getf(rdt, g, i), wv = getf(rdt, want, i);
      double tol = sop == KILN_SCAN_CUMSUM    ? rel * 8 * 4 * (double)(len + 1)
                   : sop == KILN_SCAN_CUMPROD ? rel * 8 * (double)(len + 1) * fabs(wv)
                                              : 0;
      if (!((isnan(gv) && isnan(wv)) || gv == wv || fabs(gv - wv) <= tol))
        ck_abort_msg("%s: element %zu fused %.17g unfused %.17g", what, i, gv, wv);
    }
  }
  free(g);
  free(want);
  kiln_tensor *rel[] = {a, b, y, m, w};
  for (size_t i = 0; i < 5; i++)
    kiln_tensor_release(rel[i]);
  kiln_expr_release(e);
  kiln_expr_release(e0);
  free(ha);
  free(hb);
}

START_TEST(scans)
{
  const kiln_scan_op ops[] = {KILN_SCAN_CUMSUM, KILN_SCAN_CUMPROD, KILN_SCAN_CUMMIN,
                              KILN_SCAN_CUMMAX};
  const int64_t shape[3] = {6, 7, 5};
  const int64_t axes[4] = {0, 1, -1, 2};
  const kiln_dtype sts[] = {KILN_F32, KILN_I32};
  for (size_t d = 0; d < 2; d++)
    for (size_t o = 0; o < 4; o++)
      check_scan(sts[d], ops[o], 3, shape, axes[(o + d) % 4], (int)((o + d) & 1));
  /* rows longer than a work-group (the carry between chunks), and empty ones */
  const int64_t row[2] = {3, harness_small() ? 300 : 3001}, empty[2] = {0, 4};
  check_scan(KILN_F32, KILN_SCAN_CUMSUM, 2, row, 1, 0);
  check_scan(KILN_I32, KILN_SCAN_CUMMAX, 2, row, -1, 1);
  check_scan(KILN_F32, KILN_SCAN_CUMSUM, 2, empty, 0, 0);
  /* the text form */
  kiln_expr_var v = {"x", KILN_F32, 0};
  kiln_expr *e;
  uint64_t h1, h2;
  KOK(kiln_expr_parse("y = cumsum(x * 2, -1, exclusive)", &v, 1, &e));
  KOK(kiln_expr_hash(e, &h1));
  kiln_expr_release(e);
  int32_t x, t;
  KOK(kiln_expr_create(&e));
  KOK(kiln_expr_input(e, "x", KILN_F32, &x));
  KOK(kiln_expr_constant(e, kiln_scalar_i64(3), &t));
  KOK(kiln_expr_binary(e, KILN_OP_MUL, t, x, &t));
  KOK(kiln_expr_output(e, "y", t));
  KOK(kiln_expr_scan(e, KILN_SCAN_CUMSUM, -1, 1));
  KOK(kiln_expr_hash(e, &h2));
  ck_assert_uint_eq(h1, h2);
  KOK(kiln_expr_scan(e, KILN_SCAN_CUMSUM, -1, 0));
  KOK(kiln_expr_hash(e, &h2));
  ck_assert_uint_ne(h1, h2);
  KEXPECT(kiln_expr_scan(e, KILN_SCAN_LOGCUMSUMEXP, 0, 0), KILN_ERR_INVALID_ARGUMENT);
  kiln_expr_release(e);
  kiln_expr *bad = NULL;
  KEXPECT(kiln_expr_parse("y = cumsum(x)", &v, 1, &bad), KILN_ERR_PARSE);
  KEXPECT(kiln_expr_parse("y = 1 + cumsum(x, 0)", &v, 1, &bad), KILN_ERR_PARSE);
}
END_TEST

START_TEST(reduction_launch_shapes)
{
  /* few groups: the kernels' group loops take several turns */
  size_t saved = kiln__launch_max_groups;
  kiln__launch_max_groups = 2;
  const int64_t shape[3] = {6, 7, 5};
  const int64_t ax02[2] = {0, 2};
  check_reduction(KILN_F32, KILN_REDUCE_SUM, 3, shape, ax02, 2, 0, "y = a * b + a");
  check_reduction(KILN_I32, KILN_REDUCE_MAX, 3, shape, NULL, 0, 0, "y = a * b + a");
  if (!harness_small()) {
    const int64_t big[1] = {(1 << 18) + 3};
    check_reduction(KILN_F32, KILN_REDUCE_SUM, 1, big, NULL, 0, 0, "y = a * b + a");
  }
  kiln__launch_max_groups = saved;
}
END_TEST

START_TEST(gpu_launch_shapes)
{
  /* the kernels a GPU gets (several elements a work-item, strided reductions), run here */
  kiln__expr_test_gpu_shapes = 1;
  kiln_context *ctx = harness_ctx();
  kiln_expr_var v = {"x", KILN_F32, 0};
  kiln_expr *e;
  KOK(kiln_expr_parse("y = sigmoid(2*x + 1) * cos(x) - relu(x)", &v, 1, &e));
  const size_t sizes[] = {0, 1, 7, 1031, (1u << 18) + 3};
  for (size_t s = 0; s < 5; s++) {
    if (!harness_fits(sizes[s]))
      continue;
    void *hx = make_data(KILN_F32, sizes[s], -8, 8);
    kiln_tensor *x = up1(KILN_F32, sizes[s], hx), *y = NULL;
    const kiln_tensor *in[1] = {x};
    KOK(kiln_expr_eval(ctx, e, in, 1, NULL, 0, &y, 1));
    kiln_tensor *w = demo_unfused(ctx, x);
    /* The fused product minus relu may contract to an fma on a GPU (OpenCL's default
     * FP_CONTRACT; the H200 does): as in demo_chain_sizes, 8 ulp of the terms, absolute. */
    compare_unfused_tol("gpu shapes: demo chain", y, w, 8 * 8 * 0x1p-23, 8 * 8 * 0x1p-52);
    kiln_tensor *rel[] = {x, y, w};
    for (size_t i = 0; i < 3; i++)
      kiln_tensor_release(rel[i]);
    free(hx);
  }
  kiln_expr_release(e);
  const int64_t cases[][4][4] = {{{6, 1, 3, 2}, {1, 4, 1, 2}, {2}, {6, 4, 3, 1}},
                                 {{1031}, {1}, {1031}, {1}}};
  const size_t nds[][4] = {{4, 4, 1, 4}, {1, 1, 1, 1}};
  for (size_t c = 0; c < 2; c++)
    check_broadcast(KILN_I32, cases[c], nds[c]);
  const int64_t shape[3] = {6, 7, 5}, ax02[2] = {0, 2};
  check_reduction(KILN_F32, KILN_REDUCE_SUM, 3, shape, ax02, 2, 0, "y = a * b + a");
  check_reduction(KILN_I32, KILN_REDUCE_MAX, 3, shape, NULL, 0, 1, "y = a * b + a");
  if (!harness_small()) {
    const int64_t big[1] = {(1 << 18) + 3};
    check_reduction(KILN_F32, KILN_REDUCE_MEAN, 1, big, NULL, 0, 0, "y = a * b + a");
  }
  kiln__expr_test_gpu_shapes = 0;
}
END_TEST

/* ------------------------------------------------------------------ canonical form */

static uint64_t
hash_of(const char *text, kiln_dtype dt)
{
  kiln_expr_var v[3] = {{"x", dt, 0}, {"y", dt, 0}, {"s", dt, 1}};
  kiln_expr *e;
  KOK(kiln_expr_parse(text, v, 3, &e));
  uint64_t h;
  KOK(kiln_expr_hash(e, &h));
  kiln_expr_release(e);
  return h;
}

START_TEST(canonical_hashes)
{
  const kiln_dtype f = KILN_F32;
  /* the same math */
  ck_assert_uint_eq(hash_of("o = x * y + 1", f), hash_of("o = 1 + y * x", f));
  ck_assert_uint_eq(hash_of("o = (x + 1) * (x + 2)", f), hash_of("o = (x + 2) * (x + 1)", f));
  ck_assert_uint_eq(hash_of("o = 2 * x + 1", f), hash_of("o = 3 * x + 7.5", f));
  ck_assert_uint_eq(hash_of("o = x > y", f), hash_of("o = y < x", f));
  ck_assert_uint_eq(hash_of("o = max(x, s) * sin(y)", f), hash_of("o = sin(y) * max(s, x)", f));
  /* a shared subexpression is one node however it was written */
  ck_assert_uint_eq(hash_of("o = sin(x) * cos(y) + sin(x)", f),
                    hash_of("o = sin(x) + cos(y) * sin(x)", f));
  /* C construction equals the text */
  kiln_expr *e;
  int32_t x, y, s, c, t;
  KOK(kiln_expr_create(&e));
  KOK(kiln_expr_input(e, "x", f, &x));
  KOK(kiln_expr_input(e, "y", f, &y));
  KOK(kiln_expr_scalar(e, "s", f, &s));
  KOK(kiln_expr_constant(e, kiln_scalar_i64(5), &c));
  KOK(kiln_expr_binary(e, KILN_OP_MUL, y, x, &t));
  KOK(kiln_expr_binary(e, KILN_OP_ADD, c, t, &t));
  KOK(kiln_expr_output(e, "o", t));
  uint64_t h;
  KOK(kiln_expr_hash(e, &h));
  ck_assert_uint_eq(h, hash_of("o = x * y + 1", f));
  kiln_expr_release(e);
  /* anything else differs */
  const char *texts[] = {"o = x * y + 1",        "o = x * y - 1",     "o = x / y + 1",
                         "o = y / x + 1",        "o = x - y",         "o = y - x",
                         "o = x * y + s",        "o = sum(x * y + 1)", "o = mean(x * y + 1)",
                         "o = sum(x * y + 1, 0)", "o = x * y + 1\np = x", "o = x\np = x * y + 1",
                         "o = sin(x)",           "o = cos(x)",        "o = x * x + 1"};
  const size_t nt = sizeof texts / sizeof texts[0];
  uint64_t hs[16];
  for (size_t i = 0; i < nt; i++)
    hs[i] = hash_of(texts[i], f);
  for (size_t i = 0; i < nt; i++)
    for (size_t j = 0; j < i; j++)
      ck_assert_msg(hs[i] != hs[j], "'%s' and '%s' have one hash", texts[i], texts[j]);
  ck_assert_uint_ne(hash_of("o = x * y + 1", KILN_F32), hash_of("o = x * y + 1", KILN_I32));
}
END_TEST

START_TEST(scalars_without_recompile)
{
  kiln_context *ctx = harness_ctx();
  const size_t n = 301;
  kiln_expr_var v[2] = {{"x", KILN_F32, 0}, {"a", KILN_F32, 1}};
  /* a tag no other test uses: the first plan compiles once */
  kiln_expr *e1, *e2;
  KOK(kiln_expr_parse("y = a * x + 2 - tanh(x) * 0.25", v, 2, &e1));
  KOK(kiln_expr_parse("y = a * x + 7 - tanh(x) * 0.5", v, 2, &e2));
  void *hx = make_data(KILN_F32, n, -3, 3);
  kiln_tensor *x = up1(KILN_F32, n, hx);
  const kiln_tensor *in[1] = {x};
  uint64_t c0 = kiln__text_compiles();
  kiln_expr_plan *p1, *p2;
  KOK(kiln_expr_plan_create(ctx, e1, in, 1, &p1));
  ck_assert_uint_eq(kiln__text_compiles() - c0, 1);
  KOK(kiln_expr_plan_create(ctx, e2, in, 1, &p2));
  ck_assert_uint_eq(kiln__text_compiles() - c0, 1); /* other constants: the same kernel */
  const double as[] = {1.0, -3.5, 0.0};
  for (size_t k = 0; k < 3; k++) {
    kiln_scalar sa = kiln_scalar_f64(as[k]);
    kiln_tensor *y1 = NULL, *y2 = NULL;
    KOK(kiln_expr_plan_run(p1, in, 1, &sa, 1, &y1, 1));
    KOK(kiln_expr_plan_run(p2, in, 1, &sa, 1, &y2, 1));
    float *g1 = download(y1), *g2 = download(y2);
    for (size_t i = 0; i < n; i++) {
      float xv = ((float *)hx)[i];
      double w1 = (float)as[k] * (double)xv + 2 - tanh((double)xv) * 0.25;
      double w2 = (float)as[k] * (double)xv + 7 - tanh((double)xv) * 0.5;
      if (isnan(xv) || isinf(xv))
        continue;
      ck_assert_msg(fabs(g1[i] - w1) <= 1e-5 * (fabs(w1) + 1), "a=%g x=%g got %g want %g", as[k],
                    xv, g1[i], w1);
      ck_assert_msg(fabs(g2[i] - w2) <= 1e-5 * (fabs(w2) + 1), "a=%g x=%g got %g want %g", as[k],
                    xv, g2[i], w2);
    }
    free(g1);
    free(g2);
    kiln_tensor_release(y1);
    kiln_tensor_release(y2);
  }
  ck_assert_uint_eq(kiln__text_compiles() - c0, 1);
  kiln_expr_plan_release(p1);
  kiln_expr_plan_release(p2);
  kiln_tensor_release(x);
  kiln_expr_release(e1);
  kiln_expr_release(e2);
  free(hx);
}
END_TEST

struct thread_arg {
  const kiln_expr *e;
  const kiln_tensor *x;
  kiln_status status;
  char msg[256];
};

static void *
plan_thread(void *p)
{
  struct thread_arg *a = p;
  const kiln_tensor *in[1] = {a->x};
  kiln_expr_plan *plan = NULL;
  a->status = kiln_expr_plan_create(harness_ctx(), a->e, in, 1, &plan);
  if (a->status == KILN_OK) {
    kiln_tensor *y = NULL;
    a->status = kiln_expr_plan_run(plan, in, 1, NULL, 0, &y, 1);
    kiln_tensor_release(y);
  }
  if (a->status != KILN_OK)
    snprintf(a->msg, sizeof a->msg, "%s", kiln_last_error());
  kiln_expr_plan_release(plan);
  return NULL;
}

START_TEST(threads_compile_once)
{
  char text[128];
  /* an expression of this run only (its constant count is new), so it is built here */
  snprintf(text, sizeof text, "y = exp(-x) * 3 + sqrt(x * x + 1) - 0.5%s",
           harness_small() ? "" : " + log1p(x * x)");
  kiln_expr_var v = {"x", KILN_F32, 0};
  kiln_expr *e;
  KOK(kiln_expr_parse(text, &v, 1, &e));
  float hx[64];
  for (int i = 0; i < 64; i++)
    hx[i] = (float)i / 7;
  kiln_tensor *x = up1(KILN_F32, 64, hx);
  uint64_t c0 = kiln__text_compiles();
  enum { NT = 8 };
  pthread_t th[NT];
  struct thread_arg args[NT];
  for (int i = 0; i < NT; i++) {
    args[i] = (struct thread_arg){e, x, KILN_OK, ""};
    ck_assert_int_eq(pthread_create(&th[i], NULL, plan_thread, &args[i]), 0);
  }
  for (int i = 0; i < NT; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(args[i].status == KILN_OK, "thread %d: %s", i, args[i].msg);
  }
  ck_assert_uint_eq(kiln__text_compiles() - c0, 1);
  kiln_tensor_release(x);
  kiln_expr_release(e);
}
END_TEST

/* ------------------------------------------------------------------ a second process */

/* Child: plans and runs a fused expression, reports compiles and cache counters. */
static int
child_main(const char *tag)
{
  kiln_context *ctx;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return 3;
  kiln_expr_var v = {"x", KILN_F32, 0};
  kiln_expr *e;
  char text[256];
  /* tag picks the number of terms, so that concurrent runs of the suite do not share the text */
  snprintf(text, sizeof text, "y = sigmoid(2*x + 1) * cos(x) - relu(x) + %s", tag);
  if (kiln_expr_parse(text, &v, 1, &e) != KILN_OK) {
    printf("error %s\n", kiln_last_error());
    return 4;
  }
  float hx[16] = {0};
  int64_t sh[1] = {16};
  kiln_tensor *x = NULL, *y = NULL;
  if (kiln_tensor_from_host(ctx, KILN_F32, 1, sh, hx, &x) != KILN_OK)
    return 5;
  const kiln_tensor *in[1] = {x};
  if (kiln_expr_eval(ctx, e, in, 1, NULL, 0, &y, 1) != KILN_OK) {
    printf("error %s\n", kiln_last_error());
    return 6;
  }
  float hy[16];
  kiln_tensor_download(y, hy, sizeof hy);
  kiln_cache_stats st;
  memset(&st, 0, sizeof st);
  /* without the statistics call (which waits for queued stores), the release must store */
  const char *no_stats = getenv("KILN_TEST_EXPR_NO_STATS");
  if (!no_stats || !*no_stats)
    kiln_context_cache_stats(ctx, &st);
  printf("compiles=%llu hits=%llu stores=%llu y0=%g\n",
         (unsigned long long)kiln__text_compiles(), (unsigned long long)st.session.hits,
         (unsigned long long)st.session.stores, (double)hy[0]);
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  kiln_expr_release(e);
  kiln_context_release(ctx);
  return 0;
}

START_TEST(second_process_disk_hit)
{
  /* stores as the device does them (PoCL: the background storer), on the calling thread, and
     in the background with no statistics call before the release (which must store) */
  const char *modes[3][2] = {{"KILN_DEBUG_STORE_BG=", "KILN_TEST_EXPR_NO_STATS="},
                             {"KILN_DEBUG_STORE_BG=0", "KILN_TEST_EXPR_NO_STATS="},
                             {"KILN_DEBUG_STORE_BG=1", "KILN_TEST_EXPR_NO_STATS=1"}};
  for (int m = 0; m < 3; m++) {
    char *dir = harness_tempdir();
    char env_dir[4200], tag[64];
    snprintf(env_dir, sizeof env_dir, "KILN_CACHE_DIR=%s", dir);
    snprintf(tag, sizeof tag, "%d", (int)(getpid() % 1000) + 1000 * m);
    const char *env[] = {env_dir, "KILN_CACHE=on", "KILN_CACHE_STORE=auto", modes[m][0],
                         modes[m][1], NULL};
    const char *args[] = {tag, NULL};
    char out[4096];
    ck_assert_msg(spawn_child("/proc/self/exe", "test_expr", args, env, out, sizeof out) == 0,
                  "first child: %s", out);
    ck_assert_msg(strstr(out, "compiles=1 ") && (m == 2 || !strstr(out, "stores=0")),
                  "first child (mode %d): %s", m, out);
    /* the second child reads the statistics, so it must not find a store pending */
    const char *env2[] = {env_dir, "KILN_CACHE=on", "KILN_CACHE_STORE=auto", modes[m][0], NULL};
    ck_assert_msg(spawn_child("/proc/self/exe", "test_expr", args, env2, out, sizeof out) == 0,
                  "second child: %s", out);
    ck_assert_msg(strstr(out, "compiles=0 ") && !strstr(out, "hits=0"),
                  "second child (mode %d): %s", m, out);
    /* sigmoid(1) * cos(0) - 0 + tag */
    char want[64];
    snprintf(want, sizeof want, "y0=%g", (double)(float)(1 / (1 + exp(-1.0)) + atoi(tag)));
    ck_assert_msg(strstr(out, want), "second child: %s (want %s)", out, want);
    harness_rmtree(dir);
    free(dir);
  }
}
END_TEST

START_TEST(warm_file_expressions)
{
  /* `kiln cache warm --from FILE`'s [expr] sections build the kernel a later plan uses */
  char *dir = harness_tempdir();
  char path[4200];
  snprintf(path, sizeof path, "%s/warm.ini", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "[expr chain]\ntext = y = tanh(3*u + 1) * u - abs(u) + 17\n\n"
             "[expr sums]\ntext = s = sum(p * q + 0.5, 1)\n");
  fclose(f);
  uint64_t c0 = kiln__text_compiles();
  KOK(kiln_user_kernel_warm_file(harness_ctx(), path, NULL, NULL, NULL));
  ck_assert_uint_eq(kiln__text_compiles() - c0, 2);
  /* the same expressions under other names and sizes: no compile */
  kiln_expr_var v[2] = {{"x", KILN_F32, 0}, {"w", KILN_F32, 0}};
  kiln_expr *e1, *e2;
  KOK(kiln_expr_parse("out = tanh(3*x + 1) * x - abs(x) + 17", v, 1, &e1));
  KOK(kiln_expr_parse("t = sum(x * w + 0.5, 1)", v, 2, &e2));
  const int64_t shape[2] = {5, 9};
  kiln_tensor *a = NULL, *b = NULL, *y1 = NULL, *y2 = NULL;
  KOK(kiln_tensor_zeros(harness_ctx(), KILN_F32, 2, shape, &a));
  KOK(kiln_tensor_zeros(harness_ctx(), KILN_F32, 2, shape, &b));
  const kiln_tensor *in[2] = {a, b};
  KOK(kiln_expr_eval(harness_ctx(), e1, in, 1, NULL, 0, &y1, 1));
  KOK(kiln_expr_eval(harness_ctx(), e2, in, 2, NULL, 0, &y2, 1));
  ck_assert_uint_eq(kiln__text_compiles() - c0, 2);
  float h[5];
  KOK(kiln_tensor_download(y2, h, sizeof h));
  ck_assert(fabsf(h[4] - 4.5f) < 1e-6f);
  kiln_tensor *rel[] = {a, b, y1, y2};
  for (size_t i = 0; i < 4; i++)
    kiln_tensor_release(rel[i]);
  kiln_expr_release(e1);
  kiln_expr_release(e2);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------------ errors */

static void
expect_parse_error(const char *text, int column)
{
  kiln_expr_var v[2] = {{"x", KILN_F32, 0}, {"k", KILN_I32, 0}};
  kiln_expr *e = (kiln_expr *)1;
  KEXPECT(kiln_expr_parse(text, v, 2, &e), KILN_ERR_PARSE);
  ck_assert_ptr_null(e);
  char col[32];
  snprintf(col, sizeof col, "column %d:", column);
  ck_assert_msg(strstr(kiln_last_error(), col), "'%s': message '%s' lacks '%s'", text,
                kiln_last_error(), col);
}

START_TEST(malformed_texts)
{
  expect_parse_error("y = 2 * ", 9);
  expect_parse_error("y = sigmoid(x", 14);
  expect_parse_error("y = foo(x)", 5);
  expect_parse_error("y = x +* 2", 8);
  expect_parse_error("= x", 1);
  expect_parse_error("y x", 3);
  expect_parse_error("y = z + 1", 5);
  expect_parse_error("y = x\ny = x", 1);
  expect_parse_error("y = 1.5e + x", 8);
  expect_parse_error("y = 3abc", 6);
  expect_parse_error("y = sin(x, x)", 5);
  expect_parse_error("y = x < x < x", 11);
  expect_parse_error("y = sum(x) + 1", 12);
  expect_parse_error("y = 1 + sum(x)", 9);
  expect_parse_error("y = cast(x, f99)", 13);
  expect_parse_error("y = (x + 1", 11);
  expect_parse_error("y = x @ 2", 7);
  expect_parse_error("x = 1", 1);
  expect_parse_error("", 1);
  expect_parse_error("y = sum(x)\nz = x", 1);
  /* a type error in text: KILN_ERR_DTYPE with the column and the node */
  kiln_expr_var v[2] = {{"x", KILN_F32, 0}, {"k", KILN_I32, 0}};
  kiln_expr *e = NULL;
  KEXPECT(kiln_expr_parse("y = 1 + bitwise_and(x, 3)", v, 2, &e), KILN_ERR_DTYPE);
  ck_assert_msg(strstr(kiln_last_error(), "column 9") &&
                    strstr(kiln_last_error(), "bitwise_and(x, 3)"),
                "%s", kiln_last_error());
  KEXPECT(kiln_expr_parse(NULL, v, 2, &e), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_expr_parse("y = x", NULL, 2, &e), KILN_ERR_INVALID_ARGUMENT);
  /* every grammar piece once */
  KOK(kiln_expr_parse("# comment\ny = -x ** 2 + (x % 3) / 2 - +1e-3 ; z = where(x >= 0, f64(k), "
                      "cast(x, f64)) * pi\nw = shl(k, 2) != k",
                      v, 2, &e));
  size_t ni, ns, no;
  KOK(kiln_expr_counts(e, &ni, &ns, &no));
  ck_assert_uint_eq(ni, 2);
  ck_assert_uint_eq(ns, 0);
  ck_assert_uint_eq(no, 3);
  kiln_expr_release(e);
}
END_TEST

START_TEST(type_errors_and_bad_arguments)
{
  kiln_expr *e;
  int32_t x, k, y;
  KOK(kiln_expr_create(&e));
  KOK(kiln_expr_input(e, "x", KILN_F32, &x));
  KOK(kiln_expr_input(e, "k", KILN_I32, &k));
  KEXPECT(kiln_expr_binary(e, KILN_OP_BITWISE_AND, x, x, &y), KILN_ERR_DTYPE);
  ck_assert_msg(strstr(kiln_last_error(), "bitwise_and(x, x)") &&
                    strstr(kiln_last_error(), "f32"),
                "%s", kiln_last_error());
  KEXPECT(kiln_expr_unary(e, KILN_OP_SQRT, k, &y), KILN_ERR_DTYPE);
  ck_assert_msg(strstr(kiln_last_error(), "sqrt(k)"), "%s", kiln_last_error());
  KEXPECT(kiln_expr_unary(e, KILN_OP_BITWISE_NOT, x, &y), KILN_ERR_DTYPE);
  KEXPECT(kiln_expr_binary(e, KILN_OP_SHL, x, k, &y), KILN_ERR_DTYPE); /* promoted to f32 */
  KEXPECT(kiln_expr_input(e, "x", KILN_F32, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_expr_input(e, "9x", KILN_F32, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_expr_input(e, "h", KILN_C64, &y), KILN_ERR_DTYPE);
  KEXPECT(kiln_expr_unary(e, KILN_OP_SIN, 99, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_expr_unary(e, (kiln_unary_op)999, x, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_expr_reduce(e, KILN_REDUCE_ARGMAX, NULL, 0, 0), KILN_ERR_INVALID_ARGUMENT);
  const int64_t twice[2] = {1, 1};
  KEXPECT(kiln_expr_reduce(e, KILN_REDUCE_SUM, twice, 2, 0), KILN_ERR_INVALID_ARGUMENT);
  uint64_t h;
  KEXPECT(kiln_expr_hash(e, &h), KILN_ERR_INVALID_ARGUMENT); /* no output */
  KEXPECT(kiln_expr_hash(NULL, &h), KILN_ERR_INVALID_HANDLE);
  /* mixed dtypes promote: x + k is f32 */
  KOK(kiln_expr_binary(e, KILN_OP_ADD, x, k, &y));
  KOK(kiln_expr_output(e, "y", y));
  kiln_context *ctx = harness_ctx();
  const int64_t s3[1] = {3}, s4[1] = {4};
  kiln_tensor *tx = NULL, *tk = NULL, *tk4 = NULL, *ti = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, s3, &tx));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 1, s3, &tk));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 1, s4, &tk4));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 1, s3, &ti));
  kiln_expr_plan *p = NULL;
  const kiln_tensor *bad_dt[2] = {tk, tk}, *bad_shape[2] = {tx, tk4}, *good[2] = {tx, tk};
  KEXPECT(kiln_expr_plan_create(ctx, e, bad_dt, 2, &p), KILN_ERR_DTYPE);
  KEXPECT(kiln_expr_plan_create(ctx, e, bad_shape, 2, &p), KILN_ERR_SHAPE);
  KEXPECT(kiln_expr_plan_create(ctx, e, good, 1, &p), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_expr_plan_create(ctx, e, good, 2, &p));
  kiln_dtype odt;
  size_t ond;
  int64_t osh[KILN_MAX_DIMS];
  KOK(kiln_expr_plan_output(p, 0, &odt, &ond, osh));
  ck_assert_int_eq(odt, KILN_F32);
  ck_assert_uint_eq(ond, 1);
  ck_assert_int_eq(osh[0], 3);
  kiln_tensor *out = NULL;
  kiln_scalar sc = kiln_scalar_f64(1);
  KEXPECT(kiln_expr_plan_run(p, good, 2, &sc, 1, &out, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_expr_plan_run(p, bad_shape, 2, NULL, 0, &out, 1), KILN_ERR_SHAPE);
  out = ti; /* wrong dtype */
  KEXPECT(kiln_expr_plan_run(p, good, 2, NULL, 0, &out, 1), KILN_ERR_DTYPE);
  out = tx; /* in place over x: fine for an elementwise output */
  KOK(kiln_expr_plan_run(p, good, 2, NULL, 0, &out, 1));
  kiln_tensor *view = NULL; /* partly over x: refused */
  cl_mem mem;
  size_t off;
  KOK(kiln_tensor_cl_mem(tx, &mem, &off));
  const int64_t s2[1] = {2};
  KOK(kiln_tensor_wrap(ctx, mem, off + 4, KILN_F32, 1, s2, &view));
  kiln_expr *e2;
  kiln_expr_var v2 = {"x", KILN_F32, 0};
  const int64_t s3b[1] = {2};
  kiln_tensor *t2 = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, s3b, &t2));
  KOK(kiln_expr_parse("y = x + 1", &v2, 1, &e2));
  kiln_expr_plan *p2 = NULL;
  const kiln_tensor *in2[1] = {t2};
  KOK(kiln_expr_plan_create(ctx, e2, in2, 1, &p2));
  /* an output partly over an input (one element apart): refused */
  const kiln_tensor *in3[1] = {view};
  kiln_tensor *view2 = NULL;
  KOK(kiln_tensor_wrap(ctx, mem, off, KILN_F32, 1, s2, &view2));
  out = view2;
  KEXPECT(kiln_expr_plan_run(p2, in3, 1, NULL, 0, &out, 1), KILN_ERR_INVALID_ARGUMENT);
  kiln_expr_plan_release(p2);
  kiln_expr_release(e2);
  kiln_tensor_release(t2);
  kiln_tensor_release(view2);
  kiln_expr_plan_release(p);
  ck_assert_ptr_null(kiln_expr_plan_source(NULL));
  kiln_tensor *rel[] = {tx, tk, tk4, ti, view};
  for (size_t i = 0; i < 5; i++)
    kiln_tensor_release(rel[i]);
  kiln_expr_release(e);
}
END_TEST

/* Nesting past the parser's bound is a parse error, not a stack overflow: 20000 parentheses
 * crashed the process before. 200 levels still parse. */
START_TEST(deep_nesting_is_a_parse_error)
{
  enum { DEEP = 100000 };
  char *t = malloc((size_t)DEEP * 5 + 64); /* "exp(" and ")" a level */
  ck_assert_ptr_nonnull(t);
  kiln_expr_var v = {"x", KILN_F32, 0};
  for (int kind = 0; kind < 3; kind++) {
    for (int depth = 200; depth <= DEEP; depth = depth == 200 ? DEEP : DEEP + 1) {
      char *p = t + sprintf(t, "y = ");
      for (int i = 0; i < depth; i++)
        p += sprintf(p, "%s", kind == 0 ? "(" : kind == 1 ? "-" : "exp(");
      *p++ = 'x';
      for (int i = 0; kind != 1 && i < depth; i++)
        *p++ = ')';
      *p = 0;
      kiln_expr *e = NULL;
      kiln_status s = kiln_expr_parse(t, &v, 1, &e);
      if (depth == 200) {
        ck_assert_msg(s == KILN_OK, "kind %d, %d levels: %s", kind, depth, kiln_last_error());
        kiln_expr_release(e);
      } else {
        ck_assert_int_eq(s, KILN_ERR_PARSE);
        ck_assert_ptr_null(e);
        ck_assert_ptr_nonnull(strstr(kiln_last_error(), "nesting deeper than 256 levels"));
      }
    }
  }
  free(t);
}
END_TEST

static Suite *
expr_suite(void)
{
  Suite *s = suite_create("expr");
  TCase *tc = tcase_create("expr");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, every_unary_op);
  tcase_add_test(tc, every_binary_op);
  tcase_add_test(tc, every_cast);
  tcase_add_test(tc, halves);
  tcase_add_test(tc, demo_chain_sizes);
  tcase_add_test(tc, broadcasting);
  tcase_add_test(tc, where_clamp_scalars);
  tcase_add_test(tc, reductions);
  tcase_add_test(tc, reduction_launch_shapes);
  tcase_add_test(tc, gpu_launch_shapes);
  tcase_add_test(tc, canonical_hashes);
  tcase_add_test(tc, malformed_texts);
  tcase_add_test(tc, type_errors_and_bad_arguments);
  if (!harness_small()) {
    tcase_add_test(tc, scalars_without_recompile);
    tcase_add_test(tc, threads_compile_once);
    tcase_add_test(tc, second_process_disk_hit);
    tcase_add_test(tc, warm_file_expressions);
  }
  suite_add_tcase(s, tc);
  TCase *ts = tcase_create("scans"); /* CK_RUN_CASE=scans runs it alone */
  tcase_set_timeout(ts, 600);
  tcase_add_test(ts, scans);
  suite_add_tcase(s, ts);
  TCase *tn = tcase_create("nesting");
  tcase_add_test(tn, deep_nesting_is_a_parse_error);
  suite_add_tcase(s, tn);
  return s;
}

int
main(int argc, char **argv)
{
  if (argc > 2 && strcmp(argv[1], "--child") == 0)
    return child_main(argv[2]);
  /*
   * Programs are not stored here (second_process_disk_hit turns the cache on in its
   * children): on PoCL, asking for a binary to store costs a second compile of each of
   * this suite's hundred-odd programs.
   */
  setenv("KILN_CACHE", "off", 1);
  return harness_main(expr_suite(), 1);
}
