/*
 * OpenCL C for a canonical expression and a layout: helpers for each dtype
 * the expression computes in (the op table's k_* helpers, named with the
 * dtype as suffix so several types live in one program), then one kernel
 * for elementwise expressions (kx_map) or two for a trailing reduction
 * (kx_reduce, and kx_final which folds per-group partial results).
 *
 * Every node is one statement with its own typed variable, so no
 * floating-point contraction joins two ops: each op rounds as the unfused
 * kernel of the elementwise family does. The op expressions are the op
 * table's own strings (include/kiln/op_table.h), with x, a, b, T and UT
 * replaced by the operands and types.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "expr/expr_internal.h"

static const char *const unary_expr[] = {
#define X(E, n, d, r, expr) #expr,
    KILN_UNARY_OPS(X)
#undef X
};

static const char *const binary_expr[] = {
#define X(E, n, d, r, expr) #expr,
    KILN_BINARY_OPS(X)
#undef X
};

/* ------------------------------------------------------------------ text buffer */

struct sb {
  char *p;
  size_t n, cap;
  int oom;
};

static void
sb_add(struct sb *b, const char *s, size_t len)
{
  if (b->oom)
    return;
  if (b->n + len + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + len + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, len);
  b->n += len;
  b->p[b->n] = 0;
}

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(struct sb *b, const char *fmt, ...)
{
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (w < 0)
    return;
  if ((size_t)w < sizeof tmp) {
    sb_add(b, tmp, (size_t)w);
    return;
  }
  char *big = malloc((size_t)w + 1);
  if (!big) {
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)w + 1, fmt, ap);
  va_end(ap);
  sb_add(b, big, (size_t)w);
  free(big);
}

/* ------------------------------------------------------------------ types */

struct dt_info {
  const char *ctype, *utype, *sfx;
  int is_float, is_signed, bits, is_bool;
  const char *tmin, *tmax;
  const char *st; /* the element type in memory (f16: half, bf16: ushort; computed as float) */
};

static const struct dt_info *
dti(kiln_dtype dt)
{
  static const struct dt_info f32 = {"float", "uint", "f32", 1, 1, 32, 0, "(-INFINITY)", "INFINITY",
                                     "float"};
  static const struct dt_info f64 = {"double", "ulong", "f64", 1, 1, 64, 0, "(-(double)INFINITY)",
                                     "((double)INFINITY)", "double"};
  static const struct dt_info i32 = {"int", "uint", "i32", 0, 1, 32, 0, "INT_MIN", "INT_MAX", "int"};
  static const struct dt_info i64 = {"long", "ulong", "i64", 0, 1, 64, 0, "LONG_MIN", "LONG_MAX",
                                     "long"};
  static const struct dt_info u8 = {"uchar", "uchar", "u8", 0, 0, 8, 0, "(uchar)0", "(uchar)255",
                                    "uchar"};
  static const struct dt_info b8 = {"uchar", "uchar", "b8", 0, 0, 8, 1, "(uchar)0", "(uchar)1",
                                    "uchar"};
  static const struct dt_info f16 = {"float", "uint", "f16", 1, 1, 32, 0, "(-INFINITY)", "INFINITY",
                                     "half"};
  static const struct dt_info bf16 = {"float", "uint", "bf16", 1, 1, 32, 0, "(-INFINITY)",
                                      "INFINITY", "ushort"};
  switch (dt) {
  case KILN_F16:
    return &f16;
  case KILN_BF16:
    return &bf16;
  case KILN_F64:
    return &f64;
  case KILN_I32:
    return &i32;
  case KILN_I64:
    return &i64;
  case KILN_U8:
    return &u8;
  case KILN_BOOL:
    return &b8;
  default:
    return &f32;
  }
}

const char *
kiln__expr_ctype(kiln_dtype dt)
{
  return dti(dt)->ctype;
}

/*
 * Nonzero while emitting CPU vector code: every value is a VEC-wide vector of its
 * dtype (float8, double8) and helpers carry the suffix <sfx>v. Only f32 and f64 values
 * and the ops vec_expr_ok accepts get there (codegen runs in many threads at once).
 */
static _Thread_local int vec_mode;
#define VEC 8

/* The C type of a value of dt in the code being emitted (a vector in vec_mode). */
static const char *
ct(kiln_dtype dt)
{
  if (vec_mode)
    return dt == KILN_F64 ? "double8" : "float8";
  return dti(dt)->ctype;
}

/* The suffix of dt's helpers in the code being emitted. */
static const char *
sfx(kiln_dtype dt)
{
  if (vec_mode)
    return dt == KILN_F64 ? "f64v" : "f32v";
  return dti(dt)->sfx;
}

/*
 * Copies template text, replacing identifiers: T and UT by the types of
 * dt, SIGNED, BITS and ISBOOL by its numbers, k_<name> by k_<name>_<sfx>,
 * and x, a, b (when given) by operand names.
 */
static void
subst(struct sb *b, const char *tpl, kiln_dtype dt, const char *x, const char *a, const char *bb)
{
  const struct dt_info *d = dti(dt);
  const char *p = tpl;
  while (*p) {
    if (!(isalpha((unsigned char)*p) || *p == '_')) {
      const char *q = p;
      /* numbers (1e-5, 0x1f) pass whole, so their letters are not names */
      if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        while (isalnum((unsigned char)*q) || *q == '.' || *q == '_' ||
               ((*q == '-' || *q == '+') && (q[-1] == 'e' || q[-1] == 'E')))
          q++;
      } else {
        q++;
      }
      sb_add(b, p, (size_t)(q - p));
      p = q;
      continue;
    }
    const char *q = p;
    while (isalnum((unsigned char)*q) || *q == '_')
      q++;
    size_t len = (size_t)(q - p);
    char id[64];
    snprintf(id, sizeof id, "%.*s", (int)(len < 63 ? len : 63), p);
    if (!strcmp(id, "T"))
      sb_printf(b, "%s", ct(dt));
    else if (!strcmp(id, "UT"))
      sb_printf(b, "%s", d->utype);
    else if (!strcmp(id, "SIGNED"))
      sb_printf(b, "ks_%s", d->sfx); /* a variable: a literal 0 && c warns in clang */
    else if (!strcmp(id, "SIGNEDNESS"))
      sb_printf(b, "%d", d->is_signed);
    else if (!strcmp(id, "BITS"))
      sb_printf(b, "%d", d->bits);
    else if (!strcmp(id, "ISBOOL"))
      sb_printf(b, "%d", d->is_bool);
    else if (x && !strcmp(id, "x"))
      sb_printf(b, "%s", x);
    else if (a && !strcmp(id, "a"))
      sb_printf(b, "%s", a);
    else if (bb && !strcmp(id, "b"))
      sb_printf(b, "%s", bb);
    else if (len > 2 && p[0] == 'k' && p[1] == '_')
      sb_printf(b, "%s_%s", id, sfx(dt));
    else
      sb_add(b, p, len);
    p = q;
  }
}

/*
 * The op table's helpers (cl_kernels/elementwise.cl defines the same for
 * one T per program) for one dtype; each is stamped once per dtype used.
 */
/* Valid for vector T too (CPU vector code, vec_mode): arithmetic, builtins and ?: only. */
static const char float_helpers[] =
    "inline T k_add(T a, T b) { return a + b; }\n"
    "inline T k_sub(T a, T b) { return a - b; }\n"
    "inline T k_mul(T a, T b) { return a * b; }\n"
    "inline T k_neg(T x) { return -x; }\n"
    "inline T k_abs(T x) { return fabs(x); }\n"
    "inline T k_div(T a, T b) { return a / b; }\n"
    "inline T k_fmod(T a, T b) { return fmod(a, b); }\n"
    "inline T k_sign(T x) { return x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : x; }\n"
    "inline T k_exp(T x) { return exp(x); }\n"
    "inline T k_sigmoid(T x) { return (T)1 / ((T)1 + exp(-x)); }\n"
    "inline T k_gelu(T x) { return (T)0.5 * x * erfc(-x * (T)0.70710678118654752440); }\n"
    "inline T k_gelu_tanh(T x)\n{\n"
    "  T u = (T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x);\n"
    "  return x / ((T)1 + exp((T)-2 * u));\n}\n"
    "inline T k_softplus(T x) { return fmax(x, (T)0) + log1p(exp(-fabs(x))); }\n";

/* Scalar T only. */
static const char float_scalar_helpers[] =
    "inline int k_isnan(T x) { return isnan(x); }\n"
    "inline int k_isinf(T x) { return isinf(x); }\n"
    "inline int k_isfinite(T x) { return isfinite(x); }\n"
    "inline T k_bitwise_not(T x) { return x; }\n"
    "inline T k_remainder(T a, T b)\n{\n"
    "  T r = fmod(a, b);\n"
    "  if (r != (T)0) {\n    if ((r < (T)0) != (b < (T)0))\n      r += b;\n"
    "  } else {\n    r = copysign((T)0, b);\n  }\n  return r;\n}\n"
    "inline T k_shl(T a, T b) { return a; }\n"
    "inline T k_shr(T a, T b) { return a; }\n";

static const char int_helpers[] =
    "constant int SIGNED = SIGNEDNESS;\n"
    "inline T k_add(T a, T b) { return (T)((UT)a + (UT)b); }\n"
    "inline T k_sub(T a, T b) { return (T)((UT)a - (UT)b); }\n"
    "inline T k_mul(T a, T b) { return (T)((UT)a * (UT)b); }\n"
    "inline T k_neg(T x) { return (T)((UT)0 - (UT)x); }\n"
    "inline int k_isnan(T x) { return 0; }\n"
    "inline int k_isinf(T x) { return 0; }\n"
    "inline int k_isfinite(T x) { return 1; }\n"
    "inline T k_bitwise_not(T x) { return ISBOOL ? (T)(x == (T)0) : (T)~x; }\n"
    "inline T k_abs(T x) { return SIGNED && x < (T)0 ? k_neg(x) : x; }\n"
    "inline T k_sign(T x) { return (T)((x > (T)0) - (SIGNED && x < (T)0)); }\n"
    "inline T k_div(T a, T b)\n{\n"
    "  if (b == (T)0)\n    return (T)0;\n"
    "  if (SIGNED && b == (T)-1)\n    return k_neg(a);\n"
    "  return a / b;\n}\n"
    "inline T k_fmod(T a, T b)\n{\n"
    "  if (b == (T)0)\n    return (T)0;\n"
    "  if (SIGNED && b == (T)-1)\n    return (T)0;\n"
    "  return a % b;\n}\n"
    "inline T k_remainder(T a, T b)\n{\n"
    "  T r = k_fmod(a, b);\n"
    "  if (SIGNED && r != (T)0 && ((r < (T)0) != (b < (T)0)))\n    r += b;\n"
    "  return r;\n}\n"
    "inline T k_shl(T a, T b)\n{\n"
    "  if ((SIGNED && b < (T)0) || b >= (T)BITS)\n    return (T)0;\n"
    "  return (T)((UT)a << (UT)b);\n}\n"
    "inline T k_shr(T a, T b)\n{\n"
    "  if ((SIGNED && b < (T)0) || b >= (T)BITS)\n"
    "    return SIGNED && a < (T)0 ? (T)-1 : (T)0;\n"
    "  return a >> b;\n}\n"
    "inline T k_exp(T x) { return x; }\n"
    "inline T k_sigmoid(T x) { return x; }\n"
    "inline T k_gelu(T x) { return x; }\n"
    "inline T k_gelu_tanh(T x) { return x; }\n"
    "inline T k_softplus(T x) { return x; }\n";

/* NaN-propagating max/min for floats (NumPy maximum), plain ones for integers. */
static const char float_minmax[] =
    "inline T k_max(T a, T b) { return (a > b || a != a) ? a : b; }\n"
    "inline T k_min(T a, T b) { return (a < b || a != a) ? a : b; }\n";
static const char int_minmax[] = "inline T k_max(T a, T b) { return a > b ? a : b; }\n"
                                 "inline T k_min(T a, T b) { return a < b ? a : b; }\n";

/* Both classes: relu, clamp with NaN passing. */
static const char common_helpers[] =
    "inline T k_relu(T x) { return x < (T)0 ? (T)0 : x; }\n"
    "inline T k_clamp(T x, T lo, T hi)\n{\n  x = x < lo ? lo : x;\n  return x > hi ? hi : x;\n}\n";

/*
 * f16 and bf16 are storage types (docs/ops.md, "f16 and bf16"): loaded exactly into
 * float, every op computed in float and its result rounded to the 16-bit type (kx_r_*),
 * stored rounded to nearest even. The conversions are cast.cl's: NaN keeps its sign and,
 * from a float, its top payload bits; f64 goes to f16 in one rounding (the double
 * vstore_half_rte), to bf16 through float rounded to odd, as i64 does.
 */
static const char half_helpers[] =
    "inline float kx_ld_f16(global const half *p, ulong i)\n{\n"
    "  uint h = ((global const ushort *)p)[i];\n"
    "  float f = vload_half(i, p);\n"
    "  uint nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);\n"
    "  return nan ? as_float(((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13)) : f;\n}\n"
    "inline void kx_st_f16(global half *p, ulong i, float v)\n{\n"
    "  uint u = as_uint(v);\n"
    "  if (isnan(v))\n"
    "    ((global ushort *)p)[i] = (ushort)(((u >> 16) & 0x8000u) | 0x7e00u | ((u & 0x7fffffu) >> 13));\n"
    "  else\n    vstore_half_rte(v, i, p);\n}\n"
    "inline float kx_r_f16(float v)\n{\n"
    "  ushort u;\n  if (isnan(v))\n    return v;\n"
    "  vstore_half_rte(v, 0, (half *)&u);\n  return vload_half(0, (const half *)&u);\n}\n"
    "inline float kx_bf16_f32(ushort h) { return as_float((uint)h << 16); }\n"
    "inline ushort kx_f32_bf16(float f)\n{\n"
    "  uint u = as_uint(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u)\n    return (ushort)((u >> 16) | 0x40u);\n"
    "  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n}\n"
    "inline float kx_r_bf16(float v) { return kx_bf16_f32(kx_f32_bf16(v)); }\n"
    "inline float kx_r_bf16_l(long v)\n{\n"
    "  float f = convert_float_rtz(v);\n"
    "  uint odd = convert_long(f) != v ? 1u : 0u;\n"
    "  return kx_r_bf16(as_float(as_uint(f) | odd));\n}\n";

/* The same from double (programs with fp64 only). */
static const char half_helpers64[] =
    "inline float kx_r_f16_d(double v)\n{\n"
    "  ushort u;\n  if (isnan(v))\n    return as_float(signbit(v) ? 0xffc00000u : 0x7fc00000u);\n"
    "  vstore_half_rte(v, 0, (half *)&u);\n  return vload_half(0, (const half *)&u);\n}\n"
    "inline float kx_r_bf16_d(double v)\n{\n"
    "  if (isnan(v))\n    return as_float(signbit(v) ? 0xffc00000u : 0x7fc00000u);\n"
    "  float f = convert_float_rtz(v);\n"
    "  uint odd = (double)f != v ? 1u : 0u;\n"
    "  return kx_r_bf16(as_float(as_uint(f) | odd));\n}\n";

static int
is_half_dt(kiln_dtype dt)
{
  return dt == KILN_F16 || dt == KILN_BF16;
}

/* "in<k>[idx]" read as the computing type (f16, bf16 converted exactly to float). */
static void
emit_load_expr(struct sb *b, kiln_dtype dt, int k, const char *idx)
{
  if (dt == KILN_F16)
    sb_printf(b, "kx_ld_f16(in%d, %s)", k, idx);
  else if (dt == KILN_BF16)
    sb_printf(b, "kx_bf16_f32(in%d[%s])", k, idx);
  else
    sb_printf(b, "in%d[%s]", k, idx);
}

/* out<k>[idx] = value, rounded to the 16-bit types. */
static void
emit_store(struct sb *b, kiln_dtype dt, size_t k, const char *idx, const char *value)
{
  if (dt == KILN_F16)
    sb_printf(b, "kx_st_f16(out%zu, %s, %s);\n", k, idx, value);
  else if (dt == KILN_BF16)
    sb_printf(b, "out%zu[%s] = kx_f32_bf16(%s);\n", k, idx, value);
  else
    sb_printf(b, "out%zu[%s] = %s;\n", k, idx, value);
}

/* ------------------------------------------------------------------ nodes */

/* Nonzero while emitting the lane loop of a vector-loaded map (FLAT inputs come from L<k>). */
static _Thread_local int lane_mode; /* codegen runs in many threads at once */

static void
emit_input_load(struct sb *b, const struct kx_layout *l, const struct kx_node *n, size_t id)
{
  int k = n->slot;
  const char *t = ct(n->dtype);
  if (vec_mode) {
    /* VEC consecutive elements from i0 (STRIDED inputs never get here) */
    if (l->access[k] == KX_FLAT)
      sb_printf(b, "    %s v%zu = vload%d(0, in%d + o%d + i0);\n", t, id, VEC, k, k);
    else
      sb_printf(b, "    %s v%zu = (%s)(in%d[o%d]);\n", t, id, t, k, k);
    return;
  }
  if (lane_mode && l->access[k] == KX_FLAT) {
    sb_printf(b, "    %s v%zu = L%d.s[l];\n", t, id, k);
    return;
  }
  char idx[64];
  switch (l->access[k]) {
  case KX_SPLAT:
    snprintf(idx, sizeof idx, "o%d", k);
    break;
  case KX_FLAT:
    snprintf(idx, sizeof idx, "o%d + i", k);
    break;
  default:
    snprintf(idx, sizeof idx, "o%d + ko%d + ro%d", k, k, k);
    break;
  }
  sb_printf(b, "    %s v%zu = ", t, id);
  emit_load_expr(b, n->dtype, k, idx);
  sb_printf(b, ";\n");
}

static void
emit_cast(struct sb *b, kiln_dtype to, kiln_dtype from, size_t id, int32_t a)
{
  const struct dt_info *t = dti(to), *f = dti(from);
  if (is_half_dt(to)) {
    const char *r = to == KILN_F16 ? "kx_r_f16" : "kx_r_bf16";
    if (from == KILN_F64)
      sb_printf(b, "    float v%zu = %s_d(v%d);\n", id, r, (int)a);
    else if (to == KILN_BF16 && (from == KILN_I32 || from == KILN_I64))
      sb_printf(b, "    float v%zu = kx_r_bf16_l(convert_long(v%d));\n", id, (int)a);
    else
      sb_printf(b, "    float v%zu = %s(convert_float(v%d));\n", id, r, (int)a);
    return;
  }
  if (to == KILN_BOOL)
    sb_printf(b, "    uchar v%zu = (uchar)(v%d != (%s)0);\n", id, (int)a, f->ctype);
  else if (t->is_float)
    sb_printf(b, "    %s v%zu = convert_%s(v%d);\n", ct(to), id, ct(to), (int)a);
  else if (f->is_float)
    /* NaN is 0 (the _sat conversions say so, but not every implementation does) */
    sb_printf(b, "    %s v%zu = isnan(v%d) ? (%s)0 : convert_%s_sat_rtz(v%d);\n", t->ctype, id,
              (int)a, t->ctype, t->ctype, (int)a);
  else
    sb_printf(b, "    %s v%zu = (%s)v%d;\n", t->ctype, id, t->ctype, (int)a);
}

/* An op's f16/bf16 result, computed in float, rounded as the elementwise family stores it. */
static void
emit_round(struct sb *b, kiln_dtype dt, size_t id)
{
  if (is_half_dt(dt))
    sb_printf(b, "    v%zu = %s(v%zu);\n", id, dt == KILN_F16 ? "kx_r_f16" : "kx_r_bf16", id);
}

static void
emit_nodes(struct sb *b, const struct kx_canon *c, const struct kx_layout *l)
{
  for (size_t i = 0; i < c->nnodes; i++) {
    const struct kx_node *n = &c->nodes[i];
    const char *t = ct(n->dtype);
    char x[24], y[24];
    switch (n->kind) {
    case KX_INPUT:
      emit_input_load(b, l, n, i);
      break;
    case KX_SCALAR:
      sb_printf(b, "    %s v%zu = (%s)(s%d);\n", t, i, t, (int)n->slot);
      break;
    case KX_CONST:
      sb_printf(b, "    %s v%zu = (%s)(s%zu);\n", t, i, t,
                l->nscalars - c->nconsts + (size_t)n->slot);
      break;
    case KX_UNARY:
      snprintf(x, sizeof x, "v%d", (int)n->a);
      sb_printf(b, "    %s v%zu = (%s)(", t, i, t);
      subst(b, unary_expr[n->op], c->nodes[n->a].dtype, x, NULL, NULL);
      sb_printf(b, ");\n");
      emit_round(b, n->dtype, i);
      break;
    case KX_BINARY:
      snprintf(x, sizeof x, "v%d", (int)n->a);
      snprintf(y, sizeof y, "v%d", (int)n->b);
      sb_printf(b, "    %s v%zu = (%s)(", t, i, t);
      subst(b, binary_expr[n->op], c->nodes[n->a].dtype, NULL, x, y);
      sb_printf(b, ");\n");
      emit_round(b, n->dtype, i);
      break;
    case KX_WHERE:
      sb_printf(b, "    %s v%zu = v%d ? v%d : v%d;\n", t, i, (int)n->a, (int)n->b, (int)n->c);
      break;
    case KX_CLAMP:
      sb_printf(b, "    %s v%zu = k_clamp_%s(v%d, v%d, v%d);\n", t, i, sfx(n->dtype),
                (int)n->a, (int)n->b, (int)n->c);
      break;
    case KX_CAST:
      emit_cast(b, n->dtype, c->nodes[n->a].dtype, i, n->a);
      break;
    }
  }
}

/* ------------------------------------------------------------------ CPU vector code */

/* Which ops give a value of their operand's dtype (vector code has no bool values). */
enum { KX_RES_BOOL, KX_RES_SAME };
static const unsigned char unary_same[] = {
#define X(E, n, d, r, expr) KX_RES_##r,
    KILN_UNARY_OPS(X)
#undef X
};
static const unsigned char binary_same[] = {
#define X(E, n, d, r, expr) KX_RES_##r,
    KILN_BINARY_OPS(X)
#undef X
};

static int
vec_dtype(kiln_dtype dt)
{
  return dt == KILN_F32 || dt == KILN_F64;
}

/*
 * Whether the expression runs as vector code on CPUs: VEC consecutive elements a
 * work-item, every value a float8 or double8, the builtins their vector forms. PoCL
 * calls its vectorised math (SLEEF) then, where the lane-by-lane loop calls the scalar
 * functions eight times: the demo's chain ran about 10x faster over 2^22 floats. Needs
 * f32/f64 values only, no strided inputs, and ops whose helpers take vectors (not
 * remainder's branches, no bool results, no where).
 */
static int
vec_expr_ok(const struct kx_canon *c, const struct kx_layout *l)
{
  int map = !l->reduce && !l->scan && l->items == 1 && l->lanes == VEC;
  int red = l->reduce && l->blocked && vec_dtype(l->acc_dtype) && l->rop != KILN_REDUCE_ANY &&
            l->rop != KILN_REDUCE_ALL;
  if (!map && !red)
    return 0;
  for (size_t k = 0; k < l->ninputs; k++)
    if (l->access[k] == KX_STRIDED || !vec_dtype(l->in_dtype[k]))
      return 0;
  for (size_t i = 0; i < c->nnodes; i++) {
    const struct kx_node *n = &c->nodes[i];
    if (!vec_dtype(n->dtype))
      return 0;
    if (n->kind == KX_WHERE || (n->kind == KX_UNARY && unary_same[n->op] != KX_RES_SAME) ||
        (n->kind == KX_BINARY &&
         (binary_same[n->op] != KX_RES_SAME || n->op == KILN_OP_REMAINDER)) ||
        (n->kind == KX_CAST && !vec_dtype(c->nodes[n->a].dtype)))
      return 0;
  }
  /* a reduction's vector accumulator takes the outputs as they are */
  for (size_t k = 0; red && k < c->noutputs; k++)
    if (c->out_dtype[k] != l->acc_dtype)
      return 0;
  return 1;
}

/* ------------------------------------------------------------------ kernels */

static int
any_strided(const struct kx_layout *l)
{
  for (size_t k = 0; k < l->ninputs; k++)
    if (l->access[k] == KX_STRIDED)
      return 1;
  return 0;
}

/* Nonzero when the kernel takes the merged dimensions: strided inputs, or a scan's output. */
static int
needs_dims(const struct kx_layout *l)
{
  return any_strided(l) || l->scan;
}

/* Inputs, scalars and outputs, the arguments both kernels start with (kx_final: outputs only). */
static void
emit_args(struct sb *b, const struct kx_canon *c, const struct kx_layout *l)
{
  for (size_t k = 0; k < l->ninputs; k++)
    sb_printf(b, "global const %s *in%zu, ulong o%zu, ", dti(l->in_dtype[k])->st, k, k);
  sb_printf(b, "\n    ");
  for (size_t s = 0; s < l->nscalars; s++)
    sb_printf(b, "%s s%zu, ", dti(l->scalar_dtype[s])->ctype, s);
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "global %s *out%zu, ulong q%zu, ", dti(l->res_dtype[k])->st, k, k);
  sb_printf(b, "\n    ");
  /* iteration dimensions (innermost last) and each strided input's strides */
  if (needs_dims(l)) {
    for (uint32_t j = 0; j < l->kdims; j++)
      sb_printf(b, "ulong dk%u, ", j);
    for (uint32_t j = 0; j < l->rdims; j++)
      sb_printf(b, "ulong dr%u, ", j);
    for (size_t k = 0; k < l->ninputs; k++) {
      if (l->access[k] != KX_STRIDED)
        continue;
      for (uint32_t j = 0; j < l->kdims; j++)
        sb_printf(b, "ulong tk%zu_%u, ", k, j);
      for (uint32_t j = 0; j < l->rdims; j++)
        sb_printf(b, "ulong tr%zu_%u, ", k, j);
    }
  }
}

/* ko<k> (from index o over the kept dims) or ro<k> (from r over the reduced ones). */
static void
emit_offsets(struct sb *b, const struct kx_layout *l, const char *idx, int reduced)
{
  uint32_t nd = reduced ? l->rdims : l->kdims;
  const char *d = reduced ? "dr" : "dk", *t = reduced ? "tr" : "tk", *o = reduced ? "ro" : "ko";
  for (size_t k = 0; k < l->ninputs; k++)
    if (l->access[k] == KX_STRIDED)
      sb_printf(b, "    ulong %s%zu = 0;\n", o, k);
  if (!any_strided(l) || nd == 0)
    return;
  sb_printf(b, "    {\n      ulong rem = %s;\n", idx);
  for (uint32_t j = nd; j-- > 0;) {
    if (j > 0)
      sb_printf(b, "      ulong c%u = rem %% %s%u;\n      rem /= %s%u;\n", j, d, j, d, j);
    else
      sb_printf(b, "      ulong c0 = rem;\n");
    for (size_t k = 0; k < l->ninputs; k++)
      if (l->access[k] == KX_STRIDED)
        sb_printf(b, "      %s%zu += c%u * %s%zu_%u;\n", o, k, j, t, k, j);
  }
  sb_printf(b, "    }\n");
}

/* The statements of element i of kx_map. */
static void
emit_map_body(struct sb *b, const struct kx_canon *c, const struct kx_layout *l)
{
  emit_offsets(b, l, "i", 0);
  for (size_t k = 0; k < l->ninputs; k++)
    if (l->access[k] == KX_STRIDED)
      sb_printf(b, "    const ulong ro%zu = 0;\n", k);
  emit_nodes(b, c, l);
  for (size_t k = 0; k < c->noutputs; k++) {
    char idx[32], val[24];
    snprintf(idx, sizeof idx, "q%zu + i", k);
    snprintf(val, sizeof val, "v%d", (int)c->outputs[k]);
    if (lane_mode)
      sb_printf(b, "    O%zu.s[l] = v%d;\n", k, (int)c->outputs[k]);
    else {
      sb_printf(b, "    ");
      emit_store(b, l->res_dtype[k], k, idx, val);
    }
  }
}

/* The CPU kernel's last partial vector, and the grid-stride loop for grids beyond 2^31. */
static void
emit_map_tail(struct sb *b, const struct kx_canon *c, const struct kx_layout *l)
{
  sb_printf(b, "   for (ulong i = i0; i < n; i++) {\n");
  emit_map_body(b, c, l);
  sb_printf(b, "   }\n   return;\n  }\n");
  sb_printf(b, "  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {\n");
  emit_map_body(b, c, l);
  sb_printf(b, "  }\n}\n");
}

static void
emit_map(struct sb *b, const struct kx_canon *c, const struct kx_layout *l)
{
  sb_printf(b, "kernel void\nkx_map(");
  emit_args(b, c, l);
  sb_printf(b, "ulong n)\n{\n");
  if (l->items == 1 && l->lanes == 1) {
    /* CPUs, 16-bit values: one element a work-item, no loop while the grid covers n */
    sb_printf(b, "  if (n <= get_global_size(0)) {\n   const ulong i = get_global_id(0);\n"
                 "   if (i < n) {\n");
    emit_map_body(b, c, l);
    sb_printf(b, "   }\n   return;\n  }\n");
    sb_printf(b, "  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {\n");
    emit_map_body(b, c, l);
    sb_printf(b, "  }\n}\n");
    return;
  }
  if (l->items == 1 && l->lanes > 1) {
    /*
     * One element per work-item and no loop while the grid covers n: PoCL vectorises
     * across work-items only then (kiln__launch_1d caps the grid at 2^31 items; the loop
     * takes larger n).
     */
    sb_printf(b, "  const ulong i0 = get_global_id(0) * %uu;\n", l->lanes);
    sb_printf(b, "  if (n <= get_global_size(0) * %uu) {\n", l->lanes);
    sb_printf(b, "   if (i0 + %uu <= n) {\n", l->lanes);
    if (vec_expr_ok(c, l)) {
      vec_mode = 1;
      emit_nodes(b, c, l);
      vec_mode = 0;
      for (size_t k = 0; k < c->noutputs; k++)
        sb_printf(b, "    vstore%d(v%d, 0, out%zu + q%zu + i0);\n", VEC, (int)c->outputs[k], k,
                  k);
      sb_printf(b, "   return;\n   }\n");
      emit_map_tail(b, c, l);
      return;
    }
    /* whole vectors in and out, the ops lane by lane (as elementwise.cl's FLAT_LANES) */
    for (size_t k = 0; k < l->ninputs; k++)
      if (l->access[k] == KX_FLAT)
        sb_printf(b, "   union { %s%u v; %s s[%u]; } L%zu;\n   L%zu.v = vload%u(0, in%zu + o%zu + i0);\n",
                  dti(l->in_dtype[k])->ctype, l->lanes, dti(l->in_dtype[k])->ctype, l->lanes, k,
                  k, l->lanes, k, k);
    for (size_t k = 0; k < c->noutputs; k++)
      sb_printf(b, "   union { %s%u v; %s s[%u]; } O%zu;\n", dti(l->res_dtype[k])->ctype, l->lanes,
                dti(l->res_dtype[k])->ctype, l->lanes, k);
    sb_printf(b, "   for (uint l = 0; l < %uu; l++) {\n    const ulong i = i0 + l;\n", l->lanes);
    lane_mode = 1;
    emit_map_body(b, c, l);
    lane_mode = 0;
    sb_printf(b, "   }\n");
    for (size_t k = 0; k < c->noutputs; k++)
      sb_printf(b, "   vstore%u(O%zu.v, 0, out%zu + q%zu + i0);\n", l->lanes, k, k, k);
    sb_printf(b, "   return;\n   }\n");
    emit_map_tail(b, c, l);
    return;
  }
  sb_printf(b, "  const ulong ls = get_local_size(0);\n");
  sb_printf(b, "  const ulong step = get_global_size(0) * %uu;\n", l->items);
  sb_printf(b, "  for (ulong base = get_group_id(0) * ls * %uu + get_local_id(0); base < n; "
               "base += step) {\n",
            l->items);
  sb_printf(b, "   for (uint e = 0; e < %uu; e++) {\n    const ulong i = base + e * ls;\n"
               "    if (i >= n)\n      break;\n",
            l->items);
  emit_map_body(b, c, l);
  sb_printf(b, "   }\n  }\n}\n");
}

static const char *
neutral(kiln_reduce_op op, kiln_dtype acc)
{
  switch (op) {
  case KILN_REDUCE_PROD:
  case KILN_REDUCE_ALL:
    return "1";
  case KILN_REDUCE_MAX:
    return dti(acc)->tmin;
  case KILN_REDUCE_MIN:
    return dti(acc)->tmax;
  default:
    return "0";
  }
}

/* acc = acc (op) value, both already of the accumulator's dtype. */
static void
emit_combine(struct sb *b, kiln_reduce_op op, kiln_dtype acc, const char *lhs, const char *rhs)
{
  const char *sf = sfx(acc);
  switch (op) {
  case KILN_REDUCE_SUM:
  case KILN_REDUCE_MEAN:
    sb_printf(b, "%s = k_add_%s(%s, %s);\n", lhs, sf, lhs, rhs);
    break;
  case KILN_REDUCE_PROD:
    sb_printf(b, "%s = k_mul_%s(%s, %s);\n", lhs, sf, lhs, rhs);
    break;
  case KILN_REDUCE_MAX:
    sb_printf(b, "%s = k_max_%s(%s, %s);\n", lhs, sf, lhs, rhs);
    break;
  case KILN_REDUCE_MIN:
    sb_printf(b, "%s = k_min_%s(%s, %s);\n", lhs, sf, lhs, rhs);
    break;
  case KILN_REDUCE_ANY:
    sb_printf(b, "%s = (uchar)(%s | %s);\n", lhs, lhs, rhs);
    break;
  default:
    sb_printf(b, "%s = (uchar)(%s & %s);\n", lhs, lhs, rhs);
    break;
  }
}

/* Work-group tree over sh<k>[0..WG), then lane 0 holds the group's value (barriers included). */
static void
emit_tree(struct sb *b, const struct kx_canon *c, const struct kx_layout *l)
{
  sb_printf(b, "    barrier(CLK_LOCAL_MEM_FENCE);\n");
  sb_printf(b, "    for (uint h = %uu / 2; h > 0; h >>= 1) {\n      if (lid < h) {\n", l->wg);
  for (size_t k = 0; k < c->noutputs; k++) {
    char lhs[32], rhs[32];
    snprintf(lhs, sizeof lhs, "sh%zu[lid]", k);
    snprintf(rhs, sizeof rhs, "sh%zu[lid + h]", k);
    sb_printf(b, "        ");
    emit_combine(b, l->rop, l->acc_dtype, lhs, rhs);
  }
  sb_printf(b, "      }\n      barrier(CLK_LOCAL_MEM_FENCE);\n    }\n");
}

static void
emit_store_final(struct sb *b, const struct kx_canon *c, const struct kx_layout *l,
                 const char *at)
{
  const char *act = dti(l->acc_dtype)->ctype;
  for (size_t k = 0; k < c->noutputs; k++) {
    char idx[64], val[96];
    snprintf(idx, sizeof idx, "q%zu + %s", k, at);
    if (l->rop == KILN_REDUCE_MEAN)
      snprintf(val, sizeof val, "(%s)(sh%zu[0] / (%s)R)", dti(l->res_dtype[k])->ctype, k, act);
    else
      snprintf(val, sizeof val, "(%s)sh%zu[0]", dti(l->res_dtype[k])->ctype, k);
    sb_printf(b, "      ");
    emit_store(b, l->res_dtype[k], k, idx, val);
  }
}

/*
 * CPU vector code of a reduction: the run in whole vectors into VEC accumulators per
 * output (a different summation order than one accumulator, within the same bound), then
 * folded lane by lane into acc<k>; the scalar loop after it takes the rest of the run.
 */
static void
emit_reduce_vec(struct sb *b, const struct kx_canon *c, const struct kx_layout *l)
{
  vec_mode = 1;
  const char *vt = ct(l->acc_dtype);
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "    %s va%zu = (%s)(%s);\n", vt, k, vt, neutral(l->rop, l->acc_dtype));
  sb_printf(b, "    for (; r + %du <= r1; r += %du) {\n    const ulong i0 = o * R + r;\n", VEC, VEC);
  emit_nodes(b, c, l);
  for (size_t k = 0; k < c->noutputs; k++) {
    char lhs[32], rhs[32];
    snprintf(lhs, sizeof lhs, "va%zu", k);
    snprintf(rhs, sizeof rhs, "v%d", (int)c->outputs[k]);
    sb_printf(b, "    ");
    emit_combine(b, l->rop, l->acc_dtype, lhs, rhs);
  }
  sb_printf(b, "    }\n");
  vec_mode = 0;
  for (size_t k = 0; k < c->noutputs; k++) {
    for (int j = 0; j < VEC; j++) {
      char lhs[32], rhs[32];
      snprintf(lhs, sizeof lhs, "acc%zu", k);
      snprintf(rhs, sizeof rhs, "va%zu.s%d", k, j);
      sb_printf(b, "    ");
      emit_combine(b, l->rop, l->acc_dtype, lhs, rhs);
    }
  }
}

static void
emit_reduce(struct sb *b, const struct kx_canon *c, const struct kx_layout *l)
{
  const char *act = dti(l->acc_dtype)->ctype;
  sb_printf(b, "kernel void\nkx_reduce(");
  emit_args(b, c, l);
  sb_printf(b, "ulong nout, ulong R, ulong gp, global %s *part)\n{\n", act);
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "  local %s sh%zu[%u];\n", act, k, l->wg);
  sb_printf(b, "  const uint lid = (uint)get_local_id(0);\n");
  sb_printf(b, "  for (ulong g = get_group_id(0); g < nout * gp; g += get_num_groups(0)) {\n");
  sb_printf(b, "    const ulong o = g / gp, p = g %% gp;\n");
  emit_offsets(b, l, "o", 0);
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "    %s acc%zu = (%s)%s;\n", act, k, act, neutral(l->rop, l->acc_dtype));
  if (l->blocked) {
    /* CPUs: each work-item walks a contiguous run (its cache lines are its own) */
    sb_printf(b, "    const ulong per = (R + gp - 1) / gp, lo = p * per;\n"
                 "    const ulong hi = lo + per < R ? lo + per : R;\n"
                 "    const ulong sub = (per + %uu - 1) / %uu;\n"
                 "    const ulong r0 = lo + lid * sub, r1 = r0 + sub < hi ? r0 + sub : hi;\n"
                 "    ulong r = r0;\n",
              l->wg, l->wg);
    if (vec_expr_ok(c, l))
      emit_reduce_vec(b, c, l);
    sb_printf(b, "    for (; r < r1; r++) {\n");
  } else {
    /* GPUs: neighbouring work-items read neighbouring elements */
    sb_printf(b, "    for (ulong r = p * %uu + lid; r < R; r += gp * %uu) {\n", l->wg, l->wg);
  }
  sb_printf(b, "    const ulong i = o * R + r;\n");
  emit_offsets(b, l, "r", 1);
  emit_nodes(b, c, l);
  for (size_t k = 0; k < c->noutputs; k++) {
    char lhs[32], rhs[96];
    snprintf(lhs, sizeof lhs, "acc%zu", k);
    if (l->rop == KILN_REDUCE_ANY || l->rop == KILN_REDUCE_ALL)
      snprintf(rhs, sizeof rhs, "(uchar)(v%d != (%s)0)", (int)c->outputs[k],
               dti(c->out_dtype[k])->ctype);
    else
      snprintf(rhs, sizeof rhs, "(%s)v%d", act, (int)c->outputs[k]);
    sb_printf(b, "    ");
    emit_combine(b, l->rop, l->acc_dtype, lhs, rhs);
  }
  sb_printf(b, "    }\n");
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "    sh%zu[lid] = acc%zu;\n", k, k);
  emit_tree(b, c, l);
  sb_printf(b, "    if (lid == 0) {\n     if (gp == 1) {\n");
  emit_store_final(b, c, l, "o");
  sb_printf(b, "     } else {\n");
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "      part[(%zuu * nout + o) * gp + p] = sh%zu[0];\n", k, k);
  sb_printf(b, "     }\n    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n}\n\n");

  /* the partials of each output element: one group each */
  sb_printf(b, "kernel void\nkx_final(");
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "global %s *out%zu, ulong q%zu, ", dti(l->res_dtype[k])->st, k, k);
  sb_printf(b, "ulong nout, ulong R, ulong gp, global const %s *part)\n{\n", act);
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "  local %s sh%zu[%u];\n", act, k, l->wg);
  sb_printf(b, "  const uint lid = (uint)get_local_id(0);\n");
  sb_printf(b, "  for (ulong o = get_group_id(0); o < nout; o += get_num_groups(0)) {\n");
  for (size_t k = 0; k < c->noutputs; k++) {
    char lhs[32], rhs[96];
    sb_printf(b, "    %s acc%zu = (%s)%s;\n", act, k, act, neutral(l->rop, l->acc_dtype));
    sb_printf(b, "    for (ulong p = lid; p < gp; p += %uu)\n      ", l->wg);
    snprintf(lhs, sizeof lhs, "acc%zu", k);
    snprintf(rhs, sizeof rhs, "part[(%zuu * nout + o) * gp + p]", k);
    emit_combine(b, l->rop, l->acc_dtype, lhs, rhs);
    sb_printf(b, "    sh%zu[lid] = acc%zu;\n", k, k);
  }
  emit_tree(b, c, l);
  sb_printf(b, "    if (lid == 0) {\n");
  emit_store_final(b, c, l, "o");
  sb_printf(b, "    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n}\n");
}

/*
 * A running op along the scan dimension: one work-group a row (kept index o),
 * the row in chunks of the group's size, each chunk scanned in local memory
 * (Hillis-Steele) and started from the previous chunks' total.
 */
static void
emit_scan(struct sb *b, const struct kx_canon *c, const struct kx_layout *l)
{
  const char *act = dti(l->acc_dtype)->ctype;
  const char *nz = neutral(l->rop, l->acc_dtype);
  sb_printf(b, "kernel void\nkx_scan(");
  emit_args(b, c, l);
  sb_printf(b, "ulong nout, ulong R, ulong osr");
  for (uint32_t j = 0; j < l->kdims; j++)
    sb_printf(b, ", ulong osk%u", j);
  sb_printf(b, ")\n{\n");
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "  local %s sh%zu[%u];\n", act, k, l->wg);
  sb_printf(b, "  const uint lid = (uint)get_local_id(0);\n");
  sb_printf(b, "  for (ulong o = get_group_id(0); o < nout; o += get_num_groups(0)) {\n");
  /* the output row's first element */
  sb_printf(b, "    ulong oko = 0;\n");
  if (l->kdims > 0) {
    sb_printf(b, "    {\n      ulong rem = o;\n");
    for (uint32_t j = l->kdims; j-- > 0;) {
      if (j > 0)
        sb_printf(b, "      oko += (rem %% dk%u) * osk%u;\n      rem /= dk%u;\n", j, j, j);
      else
        sb_printf(b, "      oko += rem * osk0;\n");
    }
    sb_printf(b, "    }\n");
  }
  emit_offsets(b, l, "o", 0);
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "    %s carry%zu = (%s)%s;\n", act, k, act, nz);
  sb_printf(b, "    for (ulong base = 0; base < R; base += %uu) {\n", l->wg);
  sb_printf(b, "     const ulong r = base + lid;\n");
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "     %s x%zu = (%s)%s;\n", act, k, act, nz);
  sb_printf(b, "     if (r < R) {\n    const ulong i = o * R + r;\n");
  emit_offsets(b, l, "r", 1);
  emit_nodes(b, c, l);
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "      x%zu = (%s)v%d;\n", k, act, (int)c->outputs[k]);
  sb_printf(b, "     }\n");
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "     sh%zu[lid] = x%zu;\n", k, k);
  sb_printf(b, "     barrier(CLK_LOCAL_MEM_FENCE);\n");
  sb_printf(b, "     for (uint d = 1; d < %uu; d <<= 1) {\n", l->wg);
  for (size_t k = 0; k < c->noutputs; k++)
    sb_printf(b, "      %s t%zu = lid >= d ? sh%zu[lid - d] : (%s)%s;\n", act, k, k, act, nz);
  sb_printf(b, "      barrier(CLK_LOCAL_MEM_FENCE);\n");
  for (size_t k = 0; k < c->noutputs; k++) {
    char lhs[32], rhs[32];
    snprintf(lhs, sizeof lhs, "t%zu", k);
    snprintf(rhs, sizeof rhs, "sh%zu[lid]", k);
    sb_printf(b, "      ");
    emit_combine(b, l->rop, l->acc_dtype, lhs, rhs);
    sb_printf(b, "      sh%zu[lid] = t%zu;\n", k, k);
  }
  sb_printf(b, "      barrier(CLK_LOCAL_MEM_FENCE);\n     }\n");
  for (size_t k = 0; k < c->noutputs; k++) {
    char lhs[32], rhs[96];
    sb_printf(b, "     %s y%zu = carry%zu;\n", act, k, k);
    snprintf(lhs, sizeof lhs, "y%zu", k);
    if (l->exclusive)
      snprintf(rhs, sizeof rhs, "(lid ? sh%zu[lid - 1] : (%s)%s)", k, act, nz);
    else
      snprintf(rhs, sizeof rhs, "sh%zu[lid]", k);
    sb_printf(b, "     ");
    emit_combine(b, l->rop, l->acc_dtype, lhs, rhs);
    if (l->exclusive && dti(l->acc_dtype)->is_float &&
        (l->rop == KILN_REDUCE_MIN || l->rop == KILN_REDUCE_MAX))
      sb_printf(b, "     if (r == 0)\n      y%zu = (%s)NAN; /* as kiln_scan */\n", k, act);
    {
      char idx[64], val[48];
      snprintf(idx, sizeof idx, "q%zu + oko + r * osr", k);
      snprintf(val, sizeof val, "(%s)y%zu", dti(l->res_dtype[k])->ctype, k);
      sb_printf(b, "     if (r < R)\n      ");
      emit_store(b, l->res_dtype[k], k, idx, val);
    }
    snprintf(lhs, sizeof lhs, "carry%zu", k);
    snprintf(rhs, sizeof rhs, "sh%zu[%u]", k, l->wg - 1);
    sb_printf(b, "     ");
    emit_combine(b, l->rop, l->acc_dtype, lhs, rhs);
  }
  sb_printf(b, "     barrier(CLK_LOCAL_MEM_FENCE);\n    }\n  }\n}\n");
}

kiln_status
kiln__expr_codegen(const char *op, const struct kx_canon *c, const struct kx_layout *l,
                   char **text, size_t *len)
{
  struct sb b = {0};
  unsigned used = 0;
  for (size_t i = 0; i < c->nnodes; i++)
    used |= 1u << (unsigned)c->nodes[i].dtype;
  for (size_t k = 0; k < l->ninputs; k++)
    used |= 1u << (unsigned)l->in_dtype[k];
  for (size_t s = 0; s < l->nscalars; s++)
    used |= 1u << (unsigned)l->scalar_dtype[s];
  if (l->reduce || l->scan)
    used |= 1u << (unsigned)l->acc_dtype;
  const int vec = vec_expr_ok(c, l);

  sb_printf(&b, "/* kiln fused expression %016llx: %zu nodes, %zu outputs%s */\n",
            (unsigned long long)c->hash, c->nnodes, c->noutputs,
            l->scan ? ", trailing scan" : l->reduce ? ", trailing reduction" : "");
  if (used & (1u << KILN_F64))
    sb_printf(&b, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
  if (used & ((1u << KILN_F16) | (1u << KILN_BF16))) {
    sb_printf(&b, "\n/* f16, bf16 */\n%s", half_helpers);
    if (used & (1u << KILN_F64))
      sb_printf(&b, "%s", half_helpers64);
  }
  const kiln_dtype order[] = {KILN_F32, KILN_F64, KILN_I32,  KILN_I64,
                              KILN_U8,  KILN_BOOL, KILN_F16, KILN_BF16};
  for (size_t j = 0; j < sizeof order / sizeof order[0]; j++) {
    if (!(used & (1u << (unsigned)order[j])))
      continue;
    sb_printf(&b, "\n/* %s */\n", kiln_dtype_name(order[j]));
    subst(&b, dti(order[j])->is_float ? float_helpers : int_helpers, order[j], NULL, NULL, NULL);
    if (dti(order[j])->is_float)
      subst(&b, float_scalar_helpers, order[j], NULL, NULL, NULL);
    subst(&b, dti(order[j])->is_float ? float_minmax : int_minmax, order[j], NULL, NULL, NULL);
    subst(&b, common_helpers, order[j], NULL, NULL, NULL);
    if (vec && vec_dtype(order[j])) {
      sb_printf(&b, "/* %s, vectors */\n", kiln_dtype_name(order[j]));
      vec_mode = 1;
      subst(&b, float_helpers, order[j], NULL, NULL, NULL);
      subst(&b, float_minmax, order[j], NULL, NULL, NULL);
      subst(&b, common_helpers, order[j], NULL, NULL, NULL);
      vec_mode = 0;
    }
  }
  sb_printf(&b, "\n");
  if (l->scan)
    emit_scan(&b, c, l);
  else if (l->reduce)
    emit_reduce(&b, c, l);
  else
    emit_map(&b, c, l);
  if (b.oom) {
    free(b.p);
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "no memory for the kernel text");
  }
  *text = b.p;
  *len = b.n;
  return KILN_OK;
}
