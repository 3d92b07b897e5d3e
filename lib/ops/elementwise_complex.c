/* Elementwise family, complex dtypes: the ops of KILN_COMPLEX_*_OPS, kiln_complex and the views. */
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "kiln/complex.h"
#include "ops/elementwise_complex.h"
#include "ops/ops_common.h"

enum cresult { CRES_SAME, CRES_REAL, CRES_BOOL };

struct crow {
  int op;            /* kiln_unary_op or kiln_binary_op */
  const char *kname; /* the kernel in complex.cl */
  enum cresult res;
};

static const struct crow unary_rows[] = {
#define X(E, res, expr) {KILN_OP_##E, "cunary_" #E, CRES_##res},
    KILN_COMPLEX_UNARY_OPS(X)
#undef X
};

static const struct crow binary_rows[] = {
#define X(E, res, expr) {KILN_OP_##E, "cbinary_" #E, CRES_##res},
    KILN_COMPLEX_BINARY_OPS(X)
#undef X
};

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

static const struct crow *
find(const struct crow *rows, size_t n, int op)
{
  for (size_t i = 0; i < n; i++)
    if (rows[i].op == op)
      return &rows[i];
  return NULL;
}

static int
dtype_ok(kiln_dtype dtype)
{
  return kiln__dtype_is_complex(dtype);
}

int
kiln__ew_complex_unary_supports(kiln_unary_op op, kiln_dtype dtype)
{
  return dtype_ok(dtype) && find(unary_rows, NROWS(unary_rows), (int)op);
}

int
kiln__ew_complex_binary_supports(kiln_binary_op op, kiln_dtype dtype)
{
  return dtype_ok(dtype) && find(binary_rows, NROWS(binary_rows), (int)op);
}

static kiln_dtype
result_dtype(enum cresult res, kiln_dtype in)
{
  return res == CRES_BOOL ? KILN_BOOL : res == CRES_REAL ? kiln__dtype_real_part(in) : in;
}

/* The message for an op without a complex row: names the ops that do accept complex. */
static kiln_status
unsupported(const char *op, const char *name, kiln_dtype dtype, const struct crow *rows, size_t n,
            const char *(*op_name)(int))
{
  char list[512] = "";
  size_t len = 0;
  for (size_t i = 0; i < n && len < sizeof list; i++)
    len +=
        (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", op_name(rows[i].op));
  return kiln__fail(KILN_ERR_DTYPE, op, 0, "%s does not accept %s (complex dtypes accept %s)", name,
                    kiln_dtype_name(dtype), list);
}

static const char *
unary_name(int op)
{
  return kiln_unary_op_name((kiln_unary_op)op);
}

static const char *
binary_name(int op)
{
  return kiln_binary_op_name((kiln_binary_op)op);
}

kiln_status
kiln__ew_complex_unary(const char *op, kiln_context *ctx, kiln_unary_op uop, const kiln_tensor *x,
                       kiln_tensor **out)
{
  const struct crow *row = find(unary_rows, NROWS(unary_rows), (int)uop);
  if (!row)
    return unsupported(op, kiln_unary_op_name(uop), x->dtype, unary_rows, NROWS(unary_rows),
                       unary_name);
  return kiln__ew_map(op, ctx, "complex", row->kname, x, result_dtype(row->res, x->dtype), out);
}

kiln_status
kiln__ew_complex_binary(const char *op, kiln_context *ctx, kiln_binary_op bop, const kiln_tensor *a,
                        const kiln_tensor *b, const unsigned char *scalar, kiln_tensor **out)
{
  const struct crow *row = find(binary_rows, NROWS(binary_rows), (int)bop);
  const kiln_tensor *t = a ? a : b;
  if (!row)
    return unsupported(op, kiln_binary_op_name(bop), t->dtype, binary_rows, NROWS(binary_rows),
                       binary_name);
  return kiln__ew_bcast_run(op, ctx, "complex", row->kname, t->dtype,
                            result_dtype(row->res, t->dtype), a, b, scalar,
                            kiln_dtype_size(t->dtype), out);
}

/* ---------------------------------------------------------------- building and viewing */

static kiln_status
check_common(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  return kiln__tensor_check(op, x, ctx);
}

kiln_status
kiln_complex(kiln_context *ctx, const kiln_tensor *re, const kiln_tensor *im, kiln_tensor **out)
{
  static const char op[] = "kiln_complex";
  KILN_TRY(check_common(op, ctx, re, out));
  KILN_TRY(kiln__tensor_check(op, im, ctx));
  KILN_RETURN_IF(re->dtype != im->dtype, KILN_ERR_DTYPE, op,
                 "re and im have different dtypes (%s and %s)", kiln_dtype_name(re->dtype),
                 kiln_dtype_name(im->dtype));
  KILN_RETURN_IF(!kiln__dtype_is_float(re->dtype), KILN_ERR_DTYPE, op,
                 "parts must be f32 or f64, not %s", kiln_dtype_name(re->dtype));
  kiln_dtype c = re->dtype == KILN_F32 ? KILN_C64 : KILN_C128;
  return kiln__ew_bcast_run(op, ctx, "complex", "make_complex", c, c, re, im, NULL,
                            kiln_dtype_size(re->dtype), out);
}

/*
 * The view of x as dtype with shape (ndim, dims), or a copy into a given
 * *out (which must have that dtype and shape). x's bytes are the result's.
 */
static kiln_status
view_or_copy(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_dtype dtype, size_t ndim,
             const int64_t *dims, kiln_tensor **out)
{
  kiln__shape s;
  uint64_t numel;
  KILN_TRY(kiln__shape_make(op, ndim, dims, kiln_dtype_size(dtype), &s, &numel, NULL));
  if (!*out)
    return kiln__tensor_view_as(op, (kiln_tensor *)x, 0, dtype, &s, out);
  int made;
  KILN_TRY(kiln__output_prepare(op, ctx, dtype, &s, out, &made));
  kiln__ctx_lock(ctx);
  kiln_status st = kiln__ops_copy(op, ctx, x, *out);
  kiln__ctx_unlock(ctx);
  return st;
}

kiln_status
kiln_view_as_real(kiln_context *ctx, const kiln_tensor *c, kiln_tensor **out)
{
  static const char op[] = "kiln_view_as_real";
  KILN_TRY(check_common(op, ctx, c, out));
  KILN_RETURN_IF(!kiln__dtype_is_complex(c->dtype), KILN_ERR_DTYPE, op,
                 "x must be c64 or c128, not %s", kiln_dtype_name(c->dtype));
  size_t nd = c->shape.ndim;
  KILN_RETURN_IF(nd >= KILN_MAX_DIMS, KILN_ERR_SHAPE, op,
                 "x has %zu dimensions; the view adds one and the maximum is %d", nd,
                 KILN_MAX_DIMS);
  int64_t dims[KILN_MAX_DIMS];
  for (size_t i = 0; i < nd; i++)
    dims[i] = c->shape.dims[i];
  dims[nd] = 2;
  return view_or_copy(op, ctx, c, kiln__dtype_real_part(c->dtype), nd + 1, dims, out);
}

kiln_status
kiln_view_as_complex(kiln_context *ctx, const kiln_tensor *r, kiln_tensor **out)
{
  static const char op[] = "kiln_view_as_complex";
  KILN_TRY(check_common(op, ctx, r, out));
  KILN_RETURN_IF(!kiln__dtype_is_float(r->dtype), KILN_ERR_DTYPE, op,
                 "x must be f32 or f64, not %s", kiln_dtype_name(r->dtype));
  size_t nd = r->shape.ndim;
  char sh[160];
  KILN_RETURN_IF(nd == 0 || r->shape.dims[nd - 1] != 2, KILN_ERR_SHAPE, op,
                 "the last dimension must be 2 (real, imaginary), x is %s",
                 kiln__shape_format(&r->shape, sh, sizeof sh));
  KILN_RETURN_IF(kiln__ops_elem_offset(r) % 2, KILN_ERR_INVALID_ARGUMENT, op,
                 "x starts at element %llu of its buffer, which is odd: a complex view must start "
                 "at a whole number",
                 (unsigned long long)kiln__ops_elem_offset(r));
  kiln_dtype c = r->dtype == KILN_F32 ? KILN_C64 : KILN_C128;
  KILN_RETURN_IF(c == KILN_C128 && !ctx->info.has_fp64, KILN_ERR_UNSUPPORTED, op,
                 "c128 needs fp64 support, which device \"%s\" lacks", ctx->info.name);
  return view_or_copy(op, ctx, r, c, nd - 1, r->shape.dims, out);
}
