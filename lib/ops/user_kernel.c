/*
 * User kernels (include/kiln/kernel.h): caller code wrapped in generated
 * kernels (elementwise, reduction, scan) or compiled as given (raw), built
 * through the runtime's text programs (runtime/program_text.h), so that
 * they share the program registry and the disk cache with kiln's own.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "kiln/kernel.h"
#include "ops/launch_params.h"
#include "ops/ops_common.h"
#include "ops/user_kernel_internal.h"
#include "runtime/launch.h"
#include "runtime/program_text.h"
#include "runtime/runtime.h"

#define UK_MAGIC 0x6b75736bu /* "kusk" */
#define UK_NAME_MAX 64
#define UK_MAX_PARAMS 64

enum uk_kind { UK_ANY = -1, UK_ELEMENTWISE, UK_REDUCTION, UK_SCAN, UK_RAW };

static const char *const kind_names[] = {"elementwise", "reduction", "scan", "raw"};

int kiln__user_kernel_blocked_override = -1;

/* Whether reductions and scans split work in contiguous runs per work-item (CPU devices). */
static int
uk_blocked(const kiln_context *ctx)
{
  if (kiln__user_kernel_blocked_override >= 0)
    return kiln__user_kernel_blocked_override != 0;
  return kiln__default_lane_order(&ctx->info) == 1;
}

/* A declared (or, for raw kernels, reported) parameter. */
struct uk_param {
  kiln_arg_kind kind;
  int any_dtype;      /* tensor of any dtype (raw: void * or uchar *, or no type reported) */
  int known;          /* raw kernels: the driver reported the parameter's type */
  kiln_dtype dtype;   /* tensor element type */
  int dtype_u8_bool;  /* uchar *: u8 or bool */
  kiln_scalar_type scalar;
  char name[UK_NAME_MAX + 1];
  char type[32];      /* the declared type, for messages */
};

struct kiln_user_kernel {
  uint32_t magic;
  enum uk_kind kind;
  kiln_context *ctx;
  char name[UK_NAME_MAX + 1];
  char *label;
  char *text;
  char *options;
  char kernel[UK_NAME_MAX + 16];
  struct uk_param *params;
  size_t nparams;
  kiln_dtype dtype; /* reduction, scan */
  int blocked;      /* scan: built with KILN_UK_BLOCKED (chunks need not be whole tiles) */
};

/* ---------------------------------------------------------------- text building */

struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
};

static void
sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_add(struct sbuf *b, const char *fmt, ...)
{
  if (b->oom)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = 1;
    return;
  }
  size_t need = b->len + (size_t)n + 1;
  if (need > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    if (cap < need)
      cap = need;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* ---------------------------------------------------------------- declarations */

static int
is_ident(const char *s, size_t n)
{
  if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return 0;
  for (size_t i = 1; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
      return 0;
  return 1;
}

/* The OpenCL C element types a tensor parameter may have. */
static const struct {
  const char *type;
  kiln_dtype dtype;
} tensor_types[] = {
    {"float", KILN_F32},  {"double", KILN_F64},  {"int", KILN_I32},    {"long", KILN_I64},
    {"uchar", KILN_U8},   {"float2", KILN_C64},  {"double2", KILN_C128},
};

static const struct {
  const char *type;
  kiln_scalar_type scalar;
  size_t size;
} scalar_types[] = {
    {"float", KILN_SCALAR_F32, 4}, {"double", KILN_SCALAR_F64, 8}, {"int", KILN_SCALAR_I32, 4},
    {"uint", KILN_SCALAR_U32, 4},  {"long", KILN_SCALAR_I64, 8},   {"ulong", KILN_SCALAR_U64, 8},
};

static const char *
scalar_name(kiln_scalar_type t)
{
  for (size_t i = 0; i < sizeof scalar_types / sizeof *scalar_types; i++)
    if (scalar_types[i].scalar == t)
      return scalar_types[i].type;
  return "?";
}

static size_t
scalar_size(kiln_scalar_type t)
{
  for (size_t i = 0; i < sizeof scalar_types / sizeof *scalar_types; i++)
    if (scalar_types[i].scalar == t)
      return scalar_types[i].size;
  return 0;
}

static int
is_qualifier(const char *w, size_t n)
{
  static const char *const q[] = {"const", "__global", "global", "restrict", "__restrict",
                                  "volatile"};
  for (size_t i = 0; i < sizeof q / sizeof *q; i++)
    if (strlen(q[i]) == n && strncmp(w, q[i], n) == 0)
      return 1;
  return 0;
}

/* Parses one declaration [from, to) into p; sets *is_const for const pointers. */
static kiln_status
parse_decl(const char *op, const char *from, const char *to, size_t index, struct uk_param *p,
           int *is_const)
{
  const char *words[8];
  size_t lens[8], nw = 0;
  int stars = 0;
  *is_const = 0;
  for (const char *c = from; c < to;) {
    if (isspace((unsigned char)*c)) {
      c++;
    } else if (*c == '*') {
      stars++;
      c++;
    } else if (isalnum((unsigned char)*c) || *c == '_') {
      const char *w = c;
      while (c < to && (isalnum((unsigned char)*c) || *c == '_'))
        c++;
      size_t n = (size_t)(c - w);
      if (n == 5 && strncmp(w, "const", 5) == 0)
        *is_const = 1;
      if (is_qualifier(w, n))
        continue;
      KILN_RETURN_IF(nw == 8, KILN_ERR_INVALID_ARGUMENT, op,
                     "argument %zu (\"%.*s\"): too many words", index + 1, (int)(to - from), from);
      words[nw] = w;
      lens[nw++] = n;
    } else {
      return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                        "argument %zu (\"%.*s\"): unexpected character '%c'", index + 1,
                        (int)(to - from), from, *c);
    }
  }
  KILN_RETURN_IF(nw != 2 || stars > 1, KILN_ERR_INVALID_ARGUMENT, op,
                 "argument %zu (\"%.*s\") is not a declaration \"TYPE NAME\" or \"TYPE *NAME\"",
                 index + 1, (int)(to - from), from);
  KILN_RETURN_IF(lens[1] > UK_NAME_MAX || !is_ident(words[1], lens[1]), KILN_ERR_INVALID_ARGUMENT,
                 op, "argument %zu: \"%.*s\" is not a name", index + 1, (int)lens[1], words[1]);
  memset(p, 0, sizeof *p);
  memcpy(p->name, words[1], lens[1]);
  if (lens[0] >= sizeof p->type)
    lens[0] = sizeof p->type - 1;
  memcpy(p->type, words[0], lens[0]);
  if (strcmp(p->name, "i") == 0 || strcmp(p->name, "n") == 0 || strcmp(p->name, "item") == 0 ||
      strncmp(p->name, "kiln_", 5) == 0 ||
      (lens[1] > 2 && strcmp(p->name + lens[1] - 2, "__") == 0))
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "argument %zu: the name \"%s\" is reserved (i, n, item, kiln_*, *__)",
                      index + 1, p->name);
  p->known = 1;
  if (stars) {
    p->kind = KILN_ARG_TENSOR;
    for (size_t i = 0; i < sizeof tensor_types / sizeof *tensor_types; i++)
      if (strcmp(p->type, tensor_types[i].type) == 0) {
        p->dtype = tensor_types[i].dtype;
        p->dtype_u8_bool = p->dtype == KILN_U8;
        return KILN_OK;
      }
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "argument %zu (%s): element type \"%s\" is not one of float, double, int, "
                      "long, uchar, float2, double2",
                      index + 1, p->name, p->type);
  }
  p->kind = KILN_ARG_SCALAR;
  for (size_t i = 0; i < sizeof scalar_types / sizeof *scalar_types; i++)
    if (strcmp(p->type, scalar_types[i].type) == 0) {
      p->scalar = scalar_types[i].scalar;
      return KILN_OK;
    }
  return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                    "argument %zu (%s): scalar type \"%s\" is not one of float, double, int, "
                    "uint, long, ulong",
                    index + 1, p->name, p->type);
}

/*
 * Parses the declarations into k->params and appends the generated kernel's
 * parameters (to params) and the pointer set-up (to prologue).
 */
static kiln_status
parse_args(const char *op, kiln_user_kernel *k, const char *arguments, struct sbuf *params,
           struct sbuf *prologue)
{
  KILN_RETURN_IF(!arguments, KILN_ERR_INVALID_ARGUMENT, op, "arguments is NULL");
  size_t cap = 1;
  for (const char *c = arguments; *c; c++)
    cap += *c == ',';
  KILN_RETURN_IF(cap > UK_MAX_PARAMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "more than %d arguments", UK_MAX_PARAMS);
  k->params = calloc(cap, sizeof *k->params);
  KILN_RETURN_IF(!k->params, KILN_ERR_HOST_MEMORY, op, "cannot allocate the argument list");
  const char *c = arguments;
  while (*c) {
    const char *end = strchr(c, ',');
    if (!end)
      end = c + strlen(c);
    const char *s = c;
    while (s < end && isspace((unsigned char)*s))
      s++;
    if (s == end && !*end && k->nparams == 0)
      break; /* no arguments at all */
    struct uk_param *p = &k->params[k->nparams];
    int is_const;
    KILN_TRY(parse_decl(op, c, end, k->nparams, p, &is_const));
    for (size_t j = 0; j < k->nparams; j++)
      KILN_RETURN_IF(strcmp(k->params[j].name, p->name) == 0, KILN_ERR_INVALID_ARGUMENT, op,
                     "argument \"%s\" is declared twice", p->name);
    if (p->kind == KILN_ARG_TENSOR) {
      sb_add(params, "%s__global %s%s *%s__base, ulong %s__off", k->nparams ? ", " : "",
             is_const ? "const " : "", p->type, p->name, p->name);
      sb_add(prologue, "  __global %s%s *%s = %s__base + %s__off;\n", is_const ? "const " : "",
             p->type, p->name, p->name, p->name);
    } else {
      sb_add(params, "%s%s %s", k->nparams ? ", " : "", p->type, p->name);
    }
    k->nparams++;
    c = *end ? end + 1 : end;
  }
  return KILN_OK;
}

/* ---------------------------------------------------------------- handles */

static kiln_status
check_name(const char *op, const char *name)
{
  KILN_RETURN_IF(!name, KILN_ERR_INVALID_ARGUMENT, op, "name is NULL");
  size_t n = strlen(name);
  KILN_RETURN_IF(n > UK_NAME_MAX || !is_ident(name, n) || strncmp(name, "kiln_", 5) == 0,
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "kernel name \"%.80s\" is not a C identifier of at most %d characters (not "
                 "starting with kiln_)",
                 name, UK_NAME_MAX);
  return KILN_OK;
}

static void
uk_free(kiln_user_kernel *k)
{
  if (!k)
    return;
  free(k->label);
  free(k->text);
  free(k->options);
  free(k->params);
  free(k);
}

static kiln_status
uk_new(const char *op, kiln_context *ctx, enum uk_kind kind, const char *name,
       kiln_user_kernel **out)
{
  /* out is the creator's local handle; the caller's is set on success only. */
  KILN_TRY(kiln__ctx_check(op, ctx));
  kiln_user_kernel *k = calloc(1, sizeof *k);
  KILN_RETURN_IF(!k, KILN_ERR_HOST_MEMORY, op, "cannot allocate a user kernel");
  k->kind = kind;
  k->ctx = ctx;
  snprintf(k->name, sizeof k->name, "%s", name);
  snprintf(k->kernel, sizeof k->kernel, "%s", name);
  *out = k;
  return KILN_OK;
}

/* The build options of generated kernels: kiln's common ones, then the caller's. */
static kiln_status
gen_options(const char *op, kiln_user_kernel *k, const char *extra, const char *user)
{
  struct sbuf b = {0};
  sb_add(&b, "-cl-std=CL1.2%s%s", k->ctx->info.has_fp64 ? " -DKILN_FP64=1" : "", extra);
  if (user && *user)
    sb_add(&b, " %s", user);
  KILN_RETURN_IF(b.oom, KILN_ERR_HOST_MEMORY, op, "cannot build the options");
  k->options = b.p ? b.p : strdup("");
  KILN_RETURN_IF(!k->options, KILN_ERR_HOST_MEMORY, op, "cannot build the options");
  return KILN_OK;
}

/*
 * Compiles k's text (through the registry and the disk cache) and checks
 * that its kernel exists; on success takes the context reference.
 */
static kiln_status
uk_compile(const char *op, kiln_user_kernel *k, cl_kernel *kernel)
{
  if (!k->label) {
    k->label = strdup(k->name);
    KILN_RETURN_IF(!k->label, KILN_ERR_HOST_MEMORY, op, "cannot copy the name");
  }
  kiln_context *ctx = k->ctx;
  kiln__ctx_lock(ctx);
  cl_kernel kk = NULL;
  kiln_status s = kiln__text_kernel_get(op, ctx, k->label, k->text, strlen(k->text), k->options,
                                        k->kernel, &kk);
  if (s == KILN_OK) {
    ctx->refs++;
    k->magic = UK_MAGIC;
  }
  kiln__ctx_unlock(ctx);
  if (kernel)
    *kernel = kk;
  return s;
}

static kiln_status
uk_check(const char *op, const kiln_user_kernel *k, enum uk_kind kind)
{
  KILN_RETURN_IF(!k, KILN_ERR_INVALID_HANDLE, op, "user kernel is NULL");
  KILN_RETURN_IF(k->magic != UK_MAGIC, KILN_ERR_INVALID_HANDLE, op,
                 "user kernel %p is released or not a kiln user kernel", (const void *)k);
  KILN_TRY(kiln__ctx_check(op, k->ctx));
  KILN_RETURN_IF(kind != UK_ANY && k->kind != kind, KILN_ERR_INVALID_ARGUMENT, op,
                 "%s is a %s kernel, not a%s %s kernel", k->name, kind_names[k->kind],
                 kind == UK_ELEMENTWISE ? "n" : "", kind_names[kind]);
  return KILN_OK;
}

static int
dtype_matches(const struct uk_param *p, kiln_dtype d)
{
  return p->any_dtype || d == p->dtype || (p->dtype_u8_bool && d == KILN_BOOL);
}

/* Checks argument i (a) against parameter p of k. */
static kiln_status
check_one(const char *op, const kiln_user_kernel *k, size_t i, const struct uk_param *p,
          const kiln_arg *a)
{
  static const char *const what[] = {"?", "a tensor", "a scalar", "local memory"};
  if (a->kind < KILN_ARG_TENSOR || a->kind > KILN_ARG_LOCAL)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "%s: argument %zu (%s) has an invalid kind %d",
                      k->name, i, p->name, (int)a->kind);
  if (a->kind != p->kind)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "%s: argument %zu (%s %s) needs %s, got %s",
                      k->name, i, p->type, p->name, what[p->kind], what[a->kind]);
  if (a->kind == KILN_ARG_TENSOR) {
    KILN_TRY(kiln__tensor_check(op, a->tensor, k->ctx));
    if (!dtype_matches(p, a->tensor->dtype))
      return kiln__fail(KILN_ERR_DTYPE, op, 0, "%s: argument %zu (%s *%s) needs %s, got %s",
                        k->name, i, p->type, p->name,
                        p->dtype_u8_bool ? "u8 or bool" : kiln_dtype_name(p->dtype),
                        kiln_dtype_name(a->tensor->dtype));
  } else if (a->kind == KILN_ARG_SCALAR) {
    if (scalar_size(a->scalar_type) == 0)
      return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                        "%s: argument %zu (%s) has an invalid scalar type %d", k->name, i, p->name,
                        (int)a->scalar_type);
    if (p->known && a->scalar_type != p->scalar)
      return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                        "%s: argument %zu (%s %s) needs a %s scalar, got %s", k->name, i, p->type,
                        p->name, scalar_name(p->scalar), scalar_name(a->scalar_type));
  } else {
    uint64_t have = k->ctx->info.local_mem_bytes;
    KILN_RETURN_IF(a->local_bytes == 0, KILN_ERR_INVALID_ARGUMENT, op,
                   "%s: argument %zu (%s) asks for 0 bytes of local memory", k->name, i, p->name);
    KILN_RETURN_IF(have && a->local_bytes > have, KILN_ERR_INVALID_ARGUMENT, op,
                   "%s: argument %zu (%s) asks for %zu bytes of local memory; the device has %llu",
                   k->name, i, p->name, a->local_bytes, (unsigned long long)have);
  }
  return KILN_OK;
}

/*
 * Checks args against k's parameters before anything is enqueued; *n
 * (may be NULL) receives the element count of the first tensor argument.
 */
static kiln_status
check_args(const char *op, const kiln_user_kernel *k, size_t nargs, const kiln_arg *args,
           uint64_t *n)
{
  KILN_RETURN_IF(nargs != k->nparams, KILN_ERR_INVALID_ARGUMENT, op,
                 "%s takes %zu argument%s, %zu given", k->name, k->nparams,
                 k->nparams == 1 ? "" : "s", nargs);
  KILN_RETURN_IF(nargs && !args, KILN_ERR_INVALID_ARGUMENT, op, "args is NULL");
  int have_n = 0;
  for (size_t i = 0; i < nargs; i++) {
    KILN_TRY(check_one(op, k, i, &k->params[i], &args[i]));
    if (args[i].kind == KILN_ARG_TENSOR && !have_n && n) {
      *n = args[i].tensor->numel;
      have_n = 1;
    }
  }
  if (n && !have_n)
    *n = 0;
  return KILN_OK;
}

/* Tensors of generated kernels must hold at least n elements (the code indexes them by i). */
static kiln_status
check_sizes(const char *op, const kiln_user_kernel *k, const kiln_arg *args, uint64_t n)
{
  for (size_t i = 0; i < k->nparams; i++)
    if (args[i].kind == KILN_ARG_TENSOR && args[i].tensor->numel < n)
      return kiln__fail(KILN_ERR_SHAPE, op, 0,
                        "%s: argument %zu (%s) has %llu elements, fewer than n = %llu (the "
                        "first tensor's)",
                        k->name, i, k->params[i].name,
                        (unsigned long long)args[i].tensor->numel, (unsigned long long)n);
  return KILN_OK;
}

/* Sets the declared arguments of a generated kernel (tensors as buffer + element offset). */
static void
set_gen_args(kiln__args *a, const kiln_user_kernel *k, const kiln_arg *args)
{
  for (size_t i = 0; i < k->nparams; i++) {
    if (args[i].kind == KILN_ARG_TENSOR)
      kiln__args_tensor(a, args[i].tensor);
    else
      kiln__args_raw(a, scalar_size(args[i].scalar_type), &args[i].value);
  }
}

static kiln_status
need_dtype(const char *op, kiln_context *ctx, kiln_dtype d, const char **type)
{
  switch (d) {
  case KILN_F32: *type = "float"; break;
  case KILN_F64: *type = "double"; break;
  case KILN_I32: *type = "int"; break;
  case KILN_I64: *type = "long"; break;
  case KILN_U8: *type = "uchar"; break;
  default:
    return kiln__fail(KILN_ERR_DTYPE, op, 0, "value dtype %s is not one of f32, f64, i32, i64, u8",
                      kiln__dtype_valid(d) ? kiln_dtype_name(d) : "(invalid)");
  }
  KILN_RETURN_IF(d == KILN_F64 && !ctx->info.has_fp64, KILN_ERR_UNSUPPORTED, op,
                 "f64 needs fp64 support, which device \"%s\" lacks", ctx->info.name);
  return KILN_OK;
}

static kiln_status
need_text(const char *op, const char *what, const char *s)
{
  KILN_RETURN_IF(!s || !*s, KILN_ERR_INVALID_ARGUMENT, op, "%s is NULL or empty", what);
  return KILN_OK;
}

static const char gen_head[] = "#ifdef KILN_FP64\n"
                               "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                               "#endif\n";

/* The end of every creator: *out gets k where s is KILN_OK, else k is freed and *out NULL. */
static kiln_status
uk_hand_out(kiln_user_kernel *k, kiln_status s, kiln_user_kernel **out)
{
  if (s != KILN_OK) {
    uk_free(k);
    *out = NULL;
    return s;
  }
  *out = k;
  return KILN_OK;
}

/*
 * The end of a generated kernel's creation, s its status so far: k takes the text t (params
 * and pro, parse_args' pieces, are freed), its build options (kiln's, extra, the caller's)
 * and is compiled.
 */
static kiln_status
gen_finish(const char *op, kiln_user_kernel *k, kiln_status s, struct sbuf *t, struct sbuf *params,
           struct sbuf *pro, const char *extra, const char *options, kiln_user_kernel **out)
{
  if (s == KILN_OK && (t->oom || params->oom || pro->oom))
    s = kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "cannot generate the kernel");
  k->text = t->p;
  free(params->p);
  free(pro->p);
  if (s == KILN_OK)
    s = gen_options(op, k, extra, options);
  if (s == KILN_OK)
    s = uk_compile(op, k, NULL);
  return uk_hand_out(k, s, out);
}

/* ---------------------------------------------------------------- elementwise */

kiln_status
kiln_elementwise_kernel_create(kiln_context *ctx, const char *name, const char *arguments,
                               const char *operation, const char *preamble, const char *options,
                               kiln_user_kernel **out)
{
  static const char op[] = "kiln_elementwise_kernel_create";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_TRY(check_name(op, name));
  KILN_TRY(need_text(op, "operation", operation));
  kiln_user_kernel *k = NULL;
  KILN_TRY(uk_new(op, ctx, UK_ELEMENTWISE, name, &k));
  struct sbuf params = {0}, pro = {0}, text = {0};
  kiln_status s = parse_args(op, k, arguments, &params, &pro);
  int has_tensor = 0;
  for (size_t i = 0; i < k->nparams; i++)
    has_tensor |= k->params[i].kind == KILN_ARG_TENSOR;
  if (s == KILN_OK && !has_tensor)
    s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                   "%s declares no pointer argument, whose size would give n", name);
  if (s == KILN_OK) {
    sb_add(&text, "/* kiln elementwise kernel %s */\n%s%s\n", name, gen_head,
           preamble ? preamble : "");
    sb_add(&text, "__kernel void %s(%s, ulong n)\n{\n%s", name, params.p ? params.p : "",
           pro.p ? pro.p : "");
    sb_add(&text, "  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {\n%s;\n  }\n}\n",
           operation);
  }
  return gen_finish(op, k, s, &text, &params, &pro, "", options, out);
}

kiln_status
kiln_elementwise_kernel_run(kiln_user_kernel *k, size_t nargs, const kiln_arg *args)
{
  static const char op[] = "kiln_elementwise_kernel_run";
  KILN_TRY(uk_check(op, k, UK_ELEMENTWISE));
  uint64_t n = 0;
  KILN_TRY(check_args(op, k, nargs, args, &n));
  KILN_TRY(check_sizes(op, k, args, n));
  if (n == 0)
    return KILN_OK;
  kiln_context *ctx = k->ctx;
  kiln__ctx_lock(ctx);
  cl_kernel kk;
  kiln_status s = kiln__text_kernel_get(op, ctx, k->label, k->text, strlen(k->text), k->options,
                                        k->kernel, &kk);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kk);
    set_gen_args(&a, k, args);
    kiln__args_u64(&a, n);
    s = kiln__args_launch_1d(&a, ctx, n, 0);
  }
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- reduction */

kiln_status
kiln_reduction_kernel_create(kiln_context *ctx, const char *name, kiln_dtype dtype,
                             const char *neutral, const char *reduce_expr, const char *map_expr,
                             const char *arguments, const char *preamble, const char *options,
                             kiln_user_kernel **out)
{
  static const char op[] = "kiln_reduction_kernel_create";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_TRY(check_name(op, name));
  KILN_TRY(kiln__ctx_check(op, ctx));
  const char *T;
  KILN_TRY(need_dtype(op, ctx, dtype, &T));
  KILN_TRY(need_text(op, "neutral", neutral));
  KILN_TRY(need_text(op, "reduce_expr", reduce_expr));
  KILN_TRY(need_text(op, "map_expr", map_expr));
  kiln_user_kernel *k = NULL;
  KILN_TRY(uk_new(op, ctx, UK_REDUCTION, name, &k));
  k->dtype = dtype;
  struct sbuf params = {0}, pro = {0}, t = {0};
  kiln_status s = parse_args(op, k, arguments, &params, &pro);
  if (s == KILN_OK) {
    const char *ps = params.p ? params.p : "";
    const char *sep = k->nparams ? ", " : "";
    sb_add(&t, "/* kiln reduction kernel %s */\n%s%s\n", name, gen_head, preamble ? preamble : "");
    sb_add(&t, "inline %s kiln_reduce__(%s a, %s b) { return (%s); }\n\n", T, T, T, reduce_expr);
    /* Pass 1: each work-item folds its share, then a tree per work-group. */
    sb_add(&t,
           "__kernel void %s(%s%sulong n, __global %s *kiln_part__, __local %s *kiln_scratch__)\n"
           "{\n%s",
           name, ps, sep, T, T, pro.p ? pro.p : "");
    sb_add(&t,
           "  %s kiln_acc__ = (%s);\n"
           "#if KILN_UK_BLOCKED\n"
           "  ulong kiln_gs__ = get_global_size(0);\n"
           "  ulong kiln_chunk__ = n / kiln_gs__ + (n %% kiln_gs__ != 0);\n"
           "  ulong kiln_lo__ = min(n, (ulong)get_global_id(0) * kiln_chunk__);\n"
           "  ulong kiln_hi__ = min(n, kiln_lo__ + kiln_chunk__);\n"
           "  for (ulong i = kiln_lo__; i < kiln_hi__; i++)\n"
           "#else\n"
           "  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))\n"
           "#endif\n"
           "    kiln_acc__ = kiln_reduce__(kiln_acc__, (%s));\n",
           T, neutral, map_expr);
    sb_add(&t, "  uint kiln_l__ = get_local_id(0);\n"
               "  kiln_scratch__[kiln_l__] = kiln_acc__;\n"
               "  barrier(CLK_LOCAL_MEM_FENCE);\n"
               "  for (uint kiln_s__ = get_local_size(0) / 2; kiln_s__ > 0; kiln_s__ >>= 1) {\n"
               "    if (kiln_l__ < kiln_s__)\n"
               "      kiln_scratch__[kiln_l__] = kiln_reduce__(kiln_scratch__[kiln_l__], "
               "kiln_scratch__[kiln_l__ + kiln_s__]);\n"
               "    barrier(CLK_LOCAL_MEM_FENCE);\n"
               "  }\n"
               "  if (kiln_l__ == 0)\n"
               "    kiln_part__[get_group_id(0)] = kiln_scratch__[0];\n"
               "}\n\n");
    /* Pass 2: one work-group folds the partials. */
    sb_add(&t,
           "__kernel void %s_final__(__global const %s *kiln_part__, ulong kiln_count__,\n"
           "                         __global %s *kiln_out__, ulong kiln_off__, __local %s "
           "*kiln_scratch__)\n"
           "{\n"
           "  uint kiln_l__ = get_local_id(0);\n"
           "  %s kiln_acc__ = (%s);\n"
           "  for (ulong kiln_j__ = kiln_l__; kiln_j__ < kiln_count__; kiln_j__ += get_local_size(0))\n"
           "    kiln_acc__ = kiln_reduce__(kiln_acc__, kiln_part__[kiln_j__]);\n"
           "  kiln_scratch__[kiln_l__] = kiln_acc__;\n"
           "  barrier(CLK_LOCAL_MEM_FENCE);\n"
           "  for (uint kiln_s__ = get_local_size(0) / 2; kiln_s__ > 0; kiln_s__ >>= 1) {\n"
           "    if (kiln_l__ < kiln_s__)\n"
           "      kiln_scratch__[kiln_l__] = kiln_reduce__(kiln_scratch__[kiln_l__], "
           "kiln_scratch__[kiln_l__ + kiln_s__]);\n"
           "    barrier(CLK_LOCAL_MEM_FENCE);\n"
           "  }\n"
           "  if (kiln_l__ == 0)\n"
           "    kiln_out__[kiln_off__] = kiln_scratch__[0];\n"
           "}\n",
           name, T, T, T, T, neutral);
  }
  char extra[48];
  snprintf(extra, sizeof extra, " -DKILN_UK_BLOCKED=%u", uk_blocked(ctx) ? 1u : 0u);
  return gen_finish(op, k, s, &t, &params, &pro, extra, options, out);
}

/* A power-of-two local size near want for k on ctx's device, with per-item local bytes. */
static kiln_status
pow2_local(const char *op, kiln_context *ctx, cl_kernel k, uint32_t want, size_t bytes_per_item,
           size_t *out)
{
  size_t l;
  KILN_TRY(kiln__launch_local_size(op, ctx, k, want, bytes_per_item, &l));
  size_t p = 1;
  while (p * 2 <= l)
    p *= 2;
  *out = p;
  return KILN_OK;
}

kiln_status
kiln_reduction_kernel_run(kiln_user_kernel *k, size_t nargs, const kiln_arg *args,
                          kiln_tensor **out)
{
  static const char op[] = "kiln_reduction_kernel_run";
  KILN_TRY(uk_check(op, k, UK_REDUCTION));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  uint64_t n = 0;
  KILN_TRY(check_args(op, k, nargs, args, &n));
  KILN_TRY(check_sizes(op, k, args, n));
  kiln_context *ctx = k->ctx;
  kiln__launch_params lp;
  kiln__launch_params_default(ctx, KILN__LAUNCH_REDUCE, &lp);
  kiln__shape shape = {0, {0}};
  int made = 0;
  KILN_TRY(kiln__output_prepare(op, ctx, k->dtype, &shape, out, &made));
  size_t esize = kiln_dtype_size(k->dtype);
  char final_name[UK_NAME_MAX + 16];
  snprintf(final_name, sizeof final_name, "%s_final__", k->name);
  kiln__ctx_lock(ctx);
  cl_kernel k1 = NULL, k2 = NULL;
  kiln__ops_tmp part = {NULL, 0};
  kiln_status s = kiln__text_kernel_get(op, ctx, k->label, k->text, strlen(k->text), k->options,
                                        k->kernel, &k1);
  if (s == KILN_OK)
    s = kiln__text_kernel_get(op, ctx, k->label, k->text, strlen(k->text), k->options,
                              final_name, &k2);
  size_t l1 = 1, l2 = 1;
  if (s == KILN_OK)
    s = pow2_local(op, ctx, k1, lp.wg_size, esize, &l1);
  if (s == KILN_OK)
    s = pow2_local(op, ctx, k2, lp.wg_size, esize, &l2);
  uint64_t groups = 0;
  if (s == KILN_OK && n) {
    uint64_t want = kiln__launch_target_groups(ctx, &lp);
    uint64_t need = n / l1 + (n % l1 != 0);
    groups = want < need ? want : need;
    if (groups > 4096)
      groups = 4096;
    if (groups < 1)
      groups = 1;
    s = kiln__ops_tmp_alloc(ctx, groups * esize, &part);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k1);
      set_gen_args(&a, k, args);
      kiln__args_u64(&a, n);
      kiln__args_mem(&a, part.mem);
      kiln__args_local(&a, l1 * esize);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)groups * l1, l1);
    }
  }
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k2);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, groups);
    kiln__args_tensor(&a, *out);
    kiln__args_local(&a, l2 * esize);
    s = kiln__args_enqueue_1d(&a, ctx, l2, l2);
  }
  if (part.mem)
    kiln__ops_tmp_free(ctx, &part);
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK)
    kiln__output_discard(out, made);
  return s;
}

/* ---------------------------------------------------------------- scan */

kiln_status
kiln_scan_kernel_create(kiln_context *ctx, const char *name, kiln_dtype dtype, const char *neutral,
                        const char *scan_expr, const char *input_expr,
                        const char *output_statement, int exclusive, const char *arguments,
                        const char *preamble, const char *options, kiln_user_kernel **out)
{
  static const char op[] = "kiln_scan_kernel_create";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_TRY(check_name(op, name));
  KILN_TRY(kiln__ctx_check(op, ctx));
  const char *T;
  KILN_TRY(need_dtype(op, ctx, dtype, &T));
  KILN_TRY(need_text(op, "neutral", neutral));
  KILN_TRY(need_text(op, "scan_expr", scan_expr));
  KILN_TRY(need_text(op, "input_expr", input_expr));
  KILN_TRY(need_text(op, "output_statement", output_statement));
  kiln_user_kernel *k = NULL;
  KILN_TRY(uk_new(op, ctx, UK_SCAN, name, &k));
  k->dtype = dtype;
  struct sbuf params = {0}, pro = {0}, t = {0};
  kiln_status s = parse_args(op, k, arguments, &params, &pro);
  if (s == KILN_OK) {
    const char *ps = params.p ? params.p : "";
    const char *sep = k->nparams ? ", " : "";
    sb_add(&t, "/* kiln scan kernel %s */\n%s%s\n", name, gen_head, preamble ? preamble : "");
    sb_add(&t, "inline %s kiln_scan__(%s a, %s b) { return (%s); }\n\n", T, T, T, scan_expr);
    /*
     * One kernel for both passes over each work-group's chunk, tile by tile
     * (a Hillis-Steele scan in local memory keeps the order, so scan_expr
     * need not commute): the first only totals the chunk, the second starts
     * from the carried totals of the chunks before and writes.
     */
    sb_add(&t,
           "__kernel void %s(%s%sulong n, ulong kiln_chunk__, __global %s *kiln_sums__,\n"
           "                 uint kiln_write__, __local %s *kiln_scratch__)\n{\n%s",
           name, ps, sep, T, T, pro.p ? pro.p : "");
    /*
     * CPU devices (KILN_UK_BLOCKED): each work-item scans a contiguous run of
     * the chunk in order, and only the runs' totals meet in local memory (a
     * tile loop with barriers is slow where a work-group runs on one core).
     */
    sb_add(&t,
           "#if KILN_UK_BLOCKED\n"
           "  uint kiln_l__ = get_local_id(0), kiln_L__ = get_local_size(0);\n"
           "  ulong kiln_lo__ = min(n, (ulong)get_group_id(0) * kiln_chunk__);\n"
           "  ulong kiln_hi__ = min(n, kiln_lo__ + kiln_chunk__);\n"
           "  ulong kiln_sub__ = (kiln_hi__ - kiln_lo__ + kiln_L__ - 1) / kiln_L__;\n"
           "  ulong kiln_a__ = min(kiln_hi__, kiln_lo__ + kiln_l__ * kiln_sub__);\n"
           "  ulong kiln_b__ = min(kiln_hi__, kiln_a__ + kiln_sub__);\n"
           "  %s kiln_acc__ = (%s);\n"
           "  for (ulong i = kiln_a__; i < kiln_b__; i++)\n"
           "    kiln_acc__ = kiln_scan__(kiln_acc__, (%s));\n"
           "  kiln_scratch__[kiln_l__] = kiln_acc__;\n"
           "  barrier(CLK_LOCAL_MEM_FENCE);\n"
           "  for (uint kiln_d__ = 1; kiln_d__ < kiln_L__; kiln_d__ <<= 1) {\n"
           "    %s kiln_t__ = kiln_l__ >= kiln_d__ ? kiln_scratch__[kiln_l__ - kiln_d__] : (%s);\n"
           "    barrier(CLK_LOCAL_MEM_FENCE);\n"
           "    if (kiln_l__ >= kiln_d__)\n"
           "      kiln_scratch__[kiln_l__] = kiln_scan__(kiln_t__, kiln_scratch__[kiln_l__]);\n"
           "    barrier(CLK_LOCAL_MEM_FENCE);\n"
           "  }\n"
           "  %s kiln_excl__ = kiln_l__ ? kiln_scratch__[kiln_l__ - 1] : (%s);\n"
           "  if (!kiln_write__) {\n"
           "    if (kiln_l__ == 0)\n"
           "      kiln_sums__[get_group_id(0)] = kiln_scratch__[kiln_L__ - 1];\n"
           "    return;\n"
           "  }\n"
           "  %s kiln_run__ = kiln_scan__(kiln_sums__[get_group_id(0)], kiln_excl__);\n"
           "  for (ulong i = kiln_a__; i < kiln_b__; i++) {\n"
           "    %s kiln_incl__ = kiln_scan__(kiln_run__, (%s));\n"
           "    %s item = %s;\n"
           "    {\n%s;\n    }\n"
           "    kiln_run__ = kiln_incl__;\n"
           "  }\n"
           "#else\n",
           T, neutral, input_expr, T, neutral, T, neutral, T, T, input_expr, T,
           exclusive ? "kiln_run__" : "kiln_incl__", output_statement);
    sb_add(&t,
           "  uint kiln_l__ = get_local_id(0), kiln_L__ = get_local_size(0);\n"
           "  ulong kiln_lo__ = min(n, (ulong)get_group_id(0) * kiln_chunk__);\n"
           "  ulong kiln_hi__ = min(n, kiln_lo__ + kiln_chunk__);\n"
           "  %s kiln_carry__ = kiln_write__ ? kiln_sums__[get_group_id(0)] : (%s);\n"
           "  for (ulong kiln_base__ = kiln_lo__; kiln_base__ < kiln_hi__; kiln_base__ += kiln_L__) {\n"
           "    ulong kiln_idx__ = kiln_base__ + kiln_l__;\n"
           "    %s kiln_v__ = (%s);\n"
           "    if (kiln_idx__ < kiln_hi__) {\n"
           "      ulong i = kiln_idx__;\n"
           "      kiln_v__ = (%s);\n"
           "    }\n"
           "    kiln_scratch__[kiln_l__] = kiln_v__;\n"
           "    barrier(CLK_LOCAL_MEM_FENCE);\n"
           "    for (uint kiln_d__ = 1; kiln_d__ < kiln_L__; kiln_d__ <<= 1) {\n"
           "      %s kiln_t__ = kiln_l__ >= kiln_d__ ? kiln_scratch__[kiln_l__ - kiln_d__] : (%s);\n"
           "      barrier(CLK_LOCAL_MEM_FENCE);\n"
           "      if (kiln_l__ >= kiln_d__)\n"
           "        kiln_scratch__[kiln_l__] = kiln_scan__(kiln_t__, kiln_scratch__[kiln_l__]);\n"
           "      barrier(CLK_LOCAL_MEM_FENCE);\n"
           "    }\n",
           T, neutral, T, neutral, input_expr, T, neutral);
    sb_add(&t,
           "    %s kiln_incl__ = kiln_scratch__[kiln_l__];\n"
           "    %s kiln_excl__ = kiln_l__ ? kiln_scratch__[kiln_l__ - 1] : (%s);\n"
           "    %s kiln_total__ = kiln_scratch__[kiln_L__ - 1];\n"
           "    if (kiln_write__ && kiln_idx__ < kiln_hi__) {\n"
           "      %s item = kiln_scan__(kiln_carry__, %s);\n"
           "      ulong i = kiln_idx__;\n"
           "      {\n%s;\n      }\n"
           "    }\n"
           "    kiln_carry__ = kiln_scan__(kiln_carry__, kiln_total__);\n"
           "    barrier(CLK_LOCAL_MEM_FENCE);\n"
           "  }\n"
           "  if (!kiln_write__ && kiln_l__ == 0)\n"
           "    kiln_sums__[get_group_id(0)] = kiln_carry__;\n"
           "#endif\n"
           "}\n\n",
           T, T, neutral, T, T, exclusive ? "kiln_excl__" : "kiln_incl__", output_statement);
    /* Between the passes: the chunks' totals become exclusive prefixes (few: one work-item). */
    sb_add(&t,
           "__kernel void %s_carry__(__global %s *kiln_sums__, ulong kiln_count__)\n"
           "{\n"
           "  %s kiln_acc__ = (%s);\n"
           "  for (ulong kiln_g__ = 0; kiln_g__ < kiln_count__; kiln_g__++) {\n"
           "    %s kiln_v__ = kiln_sums__[kiln_g__];\n"
           "    kiln_sums__[kiln_g__] = kiln_acc__;\n"
           "    kiln_acc__ = kiln_scan__(kiln_acc__, kiln_v__);\n"
           "  }\n"
           "}\n",
           name, T, T, neutral, T);
  }
  char extra[48];
  snprintf(extra, sizeof extra, " -DKILN_UK_BLOCKED=%u", uk_blocked(ctx) ? 1u : 0u);
  k->blocked = uk_blocked(ctx);
  return gen_finish(op, k, s, &t, &params, &pro, extra, options, out);
}

kiln_status
kiln_scan_kernel_run(kiln_user_kernel *k, size_t nargs, const kiln_arg *args)
{
  static const char op[] = "kiln_scan_kernel_run";
  KILN_TRY(uk_check(op, k, UK_SCAN));
  uint64_t n = 0;
  KILN_TRY(check_args(op, k, nargs, args, &n));
  KILN_TRY(check_sizes(op, k, args, n));
  if (n == 0)
    return KILN_OK;
  kiln_context *ctx = k->ctx;
  kiln__launch_params lp;
  kiln__launch_params_default(ctx, KILN__LAUNCH_SCAN, &lp);
  size_t esize = kiln_dtype_size(k->dtype);
  char carry_name[UK_NAME_MAX + 16];
  snprintf(carry_name, sizeof carry_name, "%s_carry__", k->name);
  kiln__ctx_lock(ctx);
  cl_kernel k1 = NULL, k2 = NULL;
  kiln__ops_tmp sums = {NULL, 0};
  kiln_status s = kiln__text_kernel_get(op, ctx, k->label, k->text, strlen(k->text), k->options,
                                        k->kernel, &k1);
  if (s == KILN_OK)
    s = kiln__text_kernel_get(op, ctx, k->label, k->text, strlen(k->text), k->options,
                              carry_name, &k2);
  size_t l = 1;
  if (s == KILN_OK)
    s = pow2_local(op, ctx, k1, lp.wg_size, esize, &l);
  if (s == KILN_OK) {
    /* Few enough chunks for the one-work-item carry pass; each a whole number of tiles. */
    uint64_t tiles = n / l + (n % l != 0);
    uint64_t want = kiln__launch_target_groups(ctx, &lp);
    if (want > 1024)
      want = 1024;
    uint64_t groups = want < tiles ? want : tiles;
    if (groups < 1)
      groups = 1;
    uint64_t chunk = (tiles / groups + (tiles % groups != 0)) * l;
    if (k->blocked)
      chunk = n / groups + (n % groups != 0);
    groups = n / chunk + (n % chunk != 0);
    s = kiln__ops_tmp_alloc(ctx, groups * esize, &sums);
    for (cl_uint pass = 0; s == KILN_OK && pass < 2; pass++) {
      if (pass == 1) {
        kiln__args c = kiln__args_begin(op, k2);
        kiln__args_mem(&c, sums.mem);
        kiln__args_u64(&c, groups);
        s = kiln__args_enqueue_1d(&c, ctx, 1, 1);
        if (s != KILN_OK)
          break;
      }
      kiln__args a = kiln__args_begin(op, k1);
      set_gen_args(&a, k, args);
      kiln__args_u64(&a, n);
      kiln__args_u64(&a, chunk);
      kiln__args_mem(&a, sums.mem);
      kiln__args_u32(&a, pass);
      kiln__args_local(&a, l * esize);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)groups * l, l);
    }
  }
  if (sums.mem)
    kiln__ops_tmp_free(ctx, &sums);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- raw */

/* Reads the parameters the driver reports for kernel kk (types where it keeps them). */
static kiln_status
raw_params(const char *op, kiln_user_kernel *k, cl_kernel kk)
{
  cl_uint nargs = 0;
  cl_int err = clGetKernelInfo(kk, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(op, err, "clGetKernelInfo(CL_KERNEL_NUM_ARGS)");
  k->params = calloc(nargs ? nargs : 1, sizeof *k->params);
  KILN_RETURN_IF(!k->params, KILN_ERR_HOST_MEMORY, op, "cannot allocate the argument list");
  k->nparams = nargs;
  for (cl_uint i = 0; i < nargs; i++) {
    struct uk_param *p = &k->params[i];
    cl_kernel_arg_address_qualifier aq = 0;
    char type[64] = "";
    if (clGetKernelArgInfo(kk, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL) !=
            CL_SUCCESS ||
        clGetKernelArgInfo(kk, i, CL_KERNEL_ARG_TYPE_NAME, sizeof type, type, NULL) != CL_SUCCESS) {
      /* No argument information (some drivers drop it from binaries): count only. */
      p->kind = 0;
      snprintf(p->name, sizeof p->name, "#%u", i);
      continue;
    }
    clGetKernelArgInfo(kk, i, CL_KERNEL_ARG_NAME, sizeof p->name, p->name, NULL);
    p->name[sizeof p->name - 1] = 0;
    snprintf(p->type, sizeof p->type, "%s", type);
    p->known = 1;
    size_t tl = strlen(type);
    if (aq == CL_KERNEL_ARG_ADDRESS_LOCAL) {
      p->kind = KILN_ARG_LOCAL;
    } else if (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL || aq == CL_KERNEL_ARG_ADDRESS_CONSTANT) {
      p->kind = KILN_ARG_TENSOR;
      if (tl && type[tl - 1] == '*')
        type[--tl] = 0;
      p->any_dtype = strcmp(type, "void") == 0 || strcmp(type, "uchar") == 0 ||
                     strcmp(type, "char") == 0;
      int found = p->any_dtype;
      for (size_t j = 0; !found && j < sizeof tensor_types / sizeof *tensor_types; j++)
        if (strcmp(type, tensor_types[j].type) == 0) {
          p->dtype = tensor_types[j].dtype;
          found = 1;
        }
      if (!found) {
        /* half, ushort (bf16) or structs: any dtype of the element's size would be a guess. */
        if (strcmp(type, "half") == 0)
          p->dtype = KILN_F16;
        else if (strcmp(type, "ushort") == 0)
          p->dtype = KILN_BF16;
        else
          p->any_dtype = 1;
      }
    } else {
      p->kind = KILN_ARG_SCALAR;
      p->known = 0;
      for (size_t j = 0; j < sizeof scalar_types / sizeof *scalar_types; j++)
        if (strcmp(type, scalar_types[j].type) == 0) {
          p->scalar = scalar_types[j].scalar;
          p->known = 1;
        }
      if (!p->known)
        return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                          "%s: parameter %u (%s %s) has a type kiln cannot pass (scalars are "
                          "float, double, int, uint, long, ulong)",
                          k->kernel, i, type, p->name);
    }
  }
  return KILN_OK;
}

kiln_status
kiln_raw_kernel_create(kiln_context *ctx, const char *name, const char *source,
                       const char *kernel_name, const char *options, kiln_user_kernel **out)
{
  static const char op[] = "kiln_raw_kernel_create";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_TRY(need_text(op, "source", source));
  KILN_TRY(check_name(op, kernel_name));
  kiln_user_kernel *k = NULL;
  KILN_TRY(uk_new(op, ctx, UK_RAW, kernel_name, &k));
  k->text = strdup(source);
  k->label = strdup(name && *name ? name : kernel_name);
  struct sbuf o = {0};
  sb_add(&o, "%s%s-cl-kernel-arg-info", options ? options : "", options && *options ? " " : "");
  k->options = o.p;
  kiln_status s = !k->text || !k->label || o.oom
                      ? kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "cannot copy the source")
                      : KILN_OK;
  cl_kernel kk = NULL;
  if (s == KILN_OK)
    s = uk_compile(op, k, &kk);
  if (s == KILN_OK) {
    kiln__ctx_lock(ctx);
    s = raw_params(op, k, kk);
    kiln__ctx_unlock(ctx);
    if (s != KILN_OK) {
      k->magic = KILN__DEAD_MAGIC;
      kiln__ctx_unref(ctx);
    }
  }
  return uk_hand_out(k, s, out);
}

kiln_status
kiln_raw_kernel_run(kiln_user_kernel *k, unsigned dims, const uint64_t *global,
                    const uint64_t *local, size_t nargs, const kiln_arg *args)
{
  static const char op[] = "kiln_raw_kernel_run";
  KILN_TRY(uk_check(op, k, UK_RAW));
  KILN_RETURN_IF(dims < 1 || dims > 3, KILN_ERR_INVALID_ARGUMENT, op,
                 "%s: dims is %u, not 1, 2 or 3", k->name, dims);
  KILN_RETURN_IF(!global, KILN_ERR_INVALID_ARGUMENT, op, "global is NULL");
  /* Unreported parameters take any argument; the rest are checked. */
  KILN_RETURN_IF(nargs != k->nparams, KILN_ERR_INVALID_ARGUMENT, op,
                 "%s takes %zu argument%s, %zu given", k->name, k->nparams,
                 k->nparams == 1 ? "" : "s", nargs);
  KILN_RETURN_IF(nargs && !args, KILN_ERR_INVALID_ARGUMENT, op, "args is NULL");
  for (size_t i = 0; i < nargs; i++) {
    struct uk_param p = k->params[i];
    if (!p.kind) {
      p.kind = args[i].kind;
      p.any_dtype = 1;
    }
    KILN_TRY(check_one(op, k, i, &p, &args[i]));
    if (args[i].kind == KILN_ARG_TENSOR)
      KILN_RETURN_IF(args[i].tensor->offset != 0, KILN_ERR_INVALID_ARGUMENT, op,
                     "%s: argument %zu (%s) is a view at byte offset %llu; a raw kernel gets "
                     "the buffer's start (pass a copy)",
                     k->name, i, p.name, (unsigned long long)args[i].tensor->offset);
  }
  size_t g[3] = {1, 1, 1}, l[3] = {1, 1, 1};
  uint64_t total = 1;
  for (unsigned d = 0; d < dims; d++) {
    KILN_RETURN_IF(global[d] > SIZE_MAX, KILN_ERR_INVALID_ARGUMENT, op, "global[%u] too large", d);
    g[d] = (size_t)global[d];
    total *= global[d];
    if (local) {
      KILN_RETURN_IF(local[d] == 0, KILN_ERR_INVALID_ARGUMENT, op, "%s: local[%u] is 0", k->name,
                     d);
      KILN_RETURN_IF(global[d] % local[d] != 0, KILN_ERR_INVALID_ARGUMENT, op,
                     "%s: global[%u] = %llu is not a multiple of local[%u] = %llu", k->name, d,
                     (unsigned long long)global[d], d, (unsigned long long)local[d]);
      l[d] = (size_t)local[d];
    }
  }
  if (total == 0)
    return KILN_OK;
  kiln_context *ctx = k->ctx;
  kiln__ctx_lock(ctx);
  cl_kernel kk;
  kiln_status s = kiln__text_kernel_get(op, ctx, k->label, k->text, strlen(k->text), k->options,
                                        k->kernel, &kk);
  for (size_t i = 0; s == KILN_OK && i < nargs; i++) {
    const kiln_arg *a = &args[i];
    if (a->kind == KILN_ARG_TENSOR) {
      cl_mem m = a->tensor->mem;
      s = kiln__arg(op, kk, (cl_uint)i, sizeof m, &m);
    } else if (a->kind == KILN_ARG_LOCAL) {
      s = kiln__arg(op, kk, (cl_uint)i, a->local_bytes, NULL);
    } else {
      s = kiln__arg(op, kk, (cl_uint)i, scalar_size(a->scalar_type), &a->value);
    }
  }
  if (s == KILN_OK)
    s = kiln__enqueue_kernel(op, ctx, kk, dims, g, local ? l : NULL);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- common */

kiln_status
kiln_user_kernel_source(const kiln_user_kernel *k, const char **text)
{
  static const char op[] = "kiln_user_kernel_source";
  KILN_TRY(uk_check(op, k, UK_ANY));
  KILN_RETURN_IF(!text, KILN_ERR_INVALID_ARGUMENT, op, "text is NULL");
  *text = k->text;
  return KILN_OK;
}

kiln_status
kiln_user_kernel_release(kiln_user_kernel *k)
{
  static const char op[] = "kiln_user_kernel_release";
  if (!k)
    return KILN_OK;
  KILN_RETURN_IF(k->magic != UK_MAGIC, KILN_ERR_INVALID_HANDLE, op,
                 "user kernel %p is released or not a kiln user kernel", (const void *)k);
  kiln_context *ctx = k->ctx;
  k->magic = KILN__DEAD_MAGIC;
  free(k->label);
  free(k->text);
  free(k->options);
  free(k->params);
  kiln__quarantine(k);
  kiln__ctx_unref(ctx);
  return KILN_OK;
}
