/*
 * Fused expressions: building the graph. Every builder type-checks at once
 * (so a bad op is refused naming its node), shares equal subexpressions
 * (hash-consing: a node equal to an existing one is that one) and orders
 * commutative operands by their structure, so that the canonical form
 * (kiln__expr_canon) does not depend on the order of construction.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "expr/expr_internal.h"

#define KX_RES_SAME 0
#define KX_RES_BOOL 1

static const int unary_res_bool[] = {
#define X(E, n, d, r, expr) KX_RES_##r,
    KILN_UNARY_OPS(X)
#undef X
};

static const int binary_res_bool[] = {
#define X(E, n, d, r, expr) KX_RES_##r,
    KILN_BINARY_OPS(X)
#undef X
};

static const enum kiln__dtype_class unary_cls[] = {
#define X(E, n, d, r, expr) KILN__CLASS_##d,
    KILN_UNARY_OPS(X)
#undef X
};

static const enum kiln__dtype_class binary_cls[] = {
#define X(E, n, d, r, expr) KILN__CLASS_##d,
    KILN_BINARY_OPS(X)
#undef X
};

/* The dtypes generated kernels handle (f16 and bf16 computed in float). */
#define KX_DTYPES (KILN__DT_CLASSIC | KILN__DT_BIT(KILN_F16) | KILN__DT_BIT(KILN_BF16))

kiln_status
kiln__expr_check(const char *op, const kiln_expr *e)
{
  KILN_RETURN_IF(!e || e->magic != KX_MAGIC, KILN_ERR_INVALID_HANDLE, op,
                 "expression is NULL or not a kiln_expr");
  return KILN_OK;
}

kiln_status
kiln_expr_create(kiln_expr **out)
{
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, "kiln_expr_create", "out is NULL");
  kiln_expr *e = calloc(1, sizeof *e);
  KILN_RETURN_IF(!e, KILN_ERR_HOST_MEMORY, "kiln_expr_create", "no memory for an expression");
  e->magic = KX_MAGIC;
  *out = e;
  return KILN_OK;
}

void
kiln_expr_release(kiln_expr *e)
{
  if (!e || e->magic != KX_MAGIC)
    return;
  e->magic = 0;
  free(e->nodes);
  free(e);
}

/* ------------------------------------------------------------------ hashing */

static uint64_t
scalar_bits(kiln_scalar s)
{
  uint64_t u;
  if (s.is_integer)
    return kx_mix(1, (uint64_t)s.i);
  memcpy(&u, &s.f, sizeof u);
  return kx_mix(2, u);
}

static void
node_hash(const kiln_expr *e, struct kx_node *n)
{
  uint64_t h =
      kx_mix(kx_mix(kx_mix(0x6b696c6e, (uint64_t)n->kind), (uint64_t)n->op), (uint64_t)n->dtype);
  uint64_t v;
  if (n->kind == KX_INPUT || n->kind == KX_SCALAR)
    h = kx_mix(h, (uint64_t)n->slot);
  v = h;
  if (n->kind == KX_CONST)
    v = kx_mix(v, scalar_bits(n->value));
  const int32_t kids[3] = {n->a, n->b, n->c};
  for (int k = 0; k < 3; k++) {
    if (kids[k] < 0)
      continue;
    h = kx_mix(h, e->nodes[kids[k]].shash);
    v = kx_mix(v, e->nodes[kids[k]].vhash);
  }
  n->shash = h;
  n->vhash = v;
}

/* ------------------------------------------------------------------ nodes */

static int
same_node(const struct kx_node *x, const struct kx_node *y)
{
  if (x->kind != y->kind || x->op != y->op || x->dtype != y->dtype || x->weak != y->weak ||
      x->a != y->a || x->b != y->b || x->c != y->c || x->slot != y->slot)
    return 0;
  if (x->kind != KX_CONST)
    return 1;
  return x->value.is_integer == y->value.is_integer &&
         (x->value.is_integer ? x->value.i == y->value.i
                              : memcmp(&x->value.f, &y->value.f, sizeof x->value.f) == 0);
}

/* Adds n (or finds its equal) and stores its id. */
static kiln_status
add_node(const char *op, kiln_expr *e, struct kx_node n, int32_t *id)
{
  node_hash(e, &n);
  for (size_t i = 0; i < e->nnodes; i++) {
    if (e->nodes[i].vhash == n.vhash && same_node(&e->nodes[i], &n)) {
      *id = (int32_t)i;
      return KILN_OK;
    }
  }
  KILN_RETURN_IF(e->nnodes >= KILN_EXPR_MAX_NODES, KILN_ERR_INVALID_ARGUMENT, op,
                 "more than %d nodes", KILN_EXPR_MAX_NODES);
  if (e->nnodes == e->cap) {
    size_t cap = e->cap ? 2 * e->cap : 32;
    struct kx_node *p = realloc(e->nodes, cap * sizeof *p);
    KILN_RETURN_IF(!p, KILN_ERR_HOST_MEMORY, op, "no memory for %zu nodes", cap);
    e->nodes = p;
    e->cap = cap;
  }
  e->nodes[e->nnodes] = n;
  *id = (int32_t)e->nnodes++;
  return KILN_OK;
}

static struct kx_node
blank(enum kx_kind kind, kiln_dtype dtype)
{
  struct kx_node n;
  memset(&n, 0, sizeof n);
  n.kind = kind;
  n.dtype = dtype;
  n.a = n.b = n.c = -1;
  n.slot = -1;
  return n;
}

static kiln_status
node_ok(const char *op, const kiln_expr *e, int32_t id)
{
  KILN_RETURN_IF(id < 0 || (size_t)id >= e->nnodes, KILN_ERR_INVALID_ARGUMENT, op,
                 "node %d does not exist (the expression has %zu)", (int)id, e->nnodes);
  return KILN_OK;
}

static kiln_status
name_ok(const char *op, const kiln_expr *e, const char *name)
{
  KILN_RETURN_IF(!name, KILN_ERR_INVALID_ARGUMENT, op, "name is NULL");
  size_t len = strlen(name);
  int ok = len > 0 && len < 64 && (isalpha((unsigned char)name[0]) || name[0] == '_');
  for (size_t i = 1; ok && i < len; i++)
    ok = isalnum((unsigned char)name[i]) || name[i] == '_';
  KILN_RETURN_IF(!ok, KILN_ERR_INVALID_ARGUMENT, op,
                 "name '%.80s' is not 1-63 characters of [A-Za-z_][A-Za-z0-9_]*", name);
  for (size_t i = 0; i < e->ninputs; i++)
    KILN_RETURN_IF(!strcmp(e->inputs[i].name, name), KILN_ERR_INVALID_ARGUMENT, op,
                   "name '%s' is already an input", name);
  for (size_t i = 0; i < e->nscalars; i++)
    KILN_RETURN_IF(!strcmp(e->scalars[i].name, name), KILN_ERR_INVALID_ARGUMENT, op,
                   "name '%s' is already a scalar", name);
  return KILN_OK;
}

static kiln_status
dtype_ok(const char *op, kiln_dtype dtype)
{
  KILN_RETURN_IF(!kiln__dtype_valid(dtype), KILN_ERR_INVALID_ARGUMENT, op,
                 "dtype %d is outside the enum", (int)dtype);
  KILN_RETURN_IF(!(KX_DTYPES & KILN__DT_BIT(dtype)), KILN_ERR_DTYPE, op,
                 "expressions take f32, f64, f16, bf16, i32, i64, u8 and bool, not %s",
                 kiln_dtype_name(dtype));
  return KILN_OK;
}

kiln_status
kiln_expr_input(kiln_expr *e, const char *name, kiln_dtype dtype, int32_t *id)
{
  const char *op = "kiln_expr_input";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!id, KILN_ERR_INVALID_ARGUMENT, op, "id is NULL");
  KILN_TRY(name_ok(op, e, name));
  KILN_TRY(dtype_ok(op, dtype));
  KILN_RETURN_IF(e->ninputs >= KILN_EXPR_MAX_INPUTS, KILN_ERR_INVALID_ARGUMENT, op,
                 "more than %d inputs", KILN_EXPR_MAX_INPUTS);
  struct kx_node n = blank(KX_INPUT, dtype);
  n.slot = (int32_t)e->ninputs;
  KILN_TRY(add_node(op, e, n, id));
  struct kx_name *in = &e->inputs[e->ninputs++];
  snprintf(in->name, sizeof in->name, "%s", name);
  in->dtype = dtype;
  in->node = *id;
  return KILN_OK;
}

kiln_status
kiln_expr_scalar(kiln_expr *e, const char *name, kiln_dtype dtype, int32_t *id)
{
  const char *op = "kiln_expr_scalar";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!id, KILN_ERR_INVALID_ARGUMENT, op, "id is NULL");
  KILN_TRY(name_ok(op, e, name));
  KILN_TRY(dtype_ok(op, dtype));
  KILN_RETURN_IF(e->nscalars + e->nconsts >= KILN_EXPR_MAX_SCALARS, KILN_ERR_INVALID_ARGUMENT,
                 op, "more than %d scalars and constants", KILN_EXPR_MAX_SCALARS);
  struct kx_node n = blank(KX_SCALAR, dtype);
  n.slot = (int32_t)e->nscalars;
  KILN_TRY(add_node(op, e, n, id));
  struct kx_name *s = &e->scalars[e->nscalars++];
  snprintf(s->name, sizeof s->name, "%s", name);
  s->dtype = dtype;
  s->node = *id;
  return KILN_OK;
}

/* The dtype a constant-only value gets when nothing types it: f32 for floating, i64 for integer. */
static kiln_dtype
weak_default(int is_float)
{
  return is_float ? KILN_F32 : KILN_I64;
}

static kiln_status
const_node(const char *op, kiln_expr *e, kiln_scalar v, kiln_dtype dtype, int weak, int32_t *id)
{
  struct kx_node n = blank(KX_CONST, dtype);
  n.value = v;
  n.weak = weak;
  size_t before = e->nnodes;
  KILN_TRY(add_node(op, e, n, id));
  if (e->nnodes != before) {
    /* a new constant takes an argument slot: count it (kiln__expr_canon numbers them) */
    if (e->nscalars + e->nconsts >= KILN_EXPR_MAX_SCALARS) {
      e->nnodes--;
      return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "more than %d scalars and constants",
                        KILN_EXPR_MAX_SCALARS);
    }
    e->nconsts++;
  }
  return KILN_OK;
}

kiln_status
kiln_expr_constant(kiln_expr *e, kiln_scalar value, int32_t *id)
{
  const char *op = "kiln_expr_constant";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!id, KILN_ERR_INVALID_ARGUMENT, op, "id is NULL");
  return const_node(op, e, value, weak_default(!value.is_integer), 1, id);
}

/* ------------------------------------------------------------------ rendering */

static size_t
render(const kiln_expr *e, int32_t id, char *buf, size_t len, int depth)
{
  if (len == 0)
    return 0;
  const struct kx_node *n = &e->nodes[id];
  int w = 0;
  if (depth > 6)
    return (size_t)snprintf(buf, len, "...");
  switch (n->kind) {
  case KX_INPUT:
    return (size_t)snprintf(buf, len, "%s", e->inputs[n->slot].name);
  case KX_SCALAR:
    return (size_t)snprintf(buf, len, "%s", e->scalars[n->slot].name);
  case KX_CONST:
    if (n->value.is_integer)
      return (size_t)snprintf(buf, len, "%lld", (long long)n->value.i);
    return (size_t)snprintf(buf, len, "%g", n->value.f);
  case KX_UNARY:
    w = snprintf(buf, len, "%s(", kiln_unary_op_name((kiln_unary_op)n->op));
    break;
  case KX_BINARY:
    w = snprintf(buf, len, "%s(", kiln_binary_op_name((kiln_binary_op)n->op));
    break;
  case KX_WHERE:
    w = snprintf(buf, len, "where(");
    break;
  case KX_CLAMP:
    w = snprintf(buf, len, "clamp(");
    break;
  case KX_CAST:
    w = snprintf(buf, len, "cast(");
    break;
  }
  size_t used = (size_t)w < len ? (size_t)w : len - 1;
  const int32_t kids[3] = {n->a, n->b, n->c};
  for (int k = 0; k < 3 && kids[k] >= 0; k++) {
    if (k && used + 2 < len)
      used += (size_t)snprintf(buf + used, len - used, ", ");
    if (used + 1 < len) {
      size_t r = render(e, kids[k], buf + used, len - used, depth + 1);
      used += r < len - used ? r : len - used - 1;
    }
  }
  if (n->kind == KX_CAST && used + 1 < len)
    used += (size_t)snprintf(buf + used, len - used, ", %s", kiln_dtype_name(n->dtype));
  if (used + 1 < len)
    used += (size_t)snprintf(buf + used, len - used, ")");
  return used < len ? used : len - 1;
}

const char *
kiln__expr_node_text(const kiln_expr *e, int32_t id, char *buf, size_t len)
{
  if (len)
    buf[0] = 0;
  if (id >= 0 && (size_t)id < e->nnodes)
    render(e, id, buf, len, 0);
  return buf;
}

/* ------------------------------------------------------------------ typing */

static kiln_status
cast_node(const char *op, kiln_expr *e, int32_t x, kiln_dtype dtype, int32_t *id);

/*
 * A constant-only node given dtype: constants become constants of dtype
 * (so their value is converted once, on the host), ops over them are
 * rebuilt and checked in dtype.
 */
static kiln_status retype(const char *op, kiln_expr *e, int32_t x, kiln_dtype dtype, int32_t *id);

static kiln_status unary_typed(const char *op, kiln_expr *e, kiln_unary_op u, int32_t x,
                               int weak, int32_t *id);
static kiln_status binary_typed(const char *op, kiln_expr *e, kiln_binary_op b, int32_t x,
                                int32_t y, int weak, int32_t *id);

static kiln_status
retype(const char *op, kiln_expr *e, int32_t x, kiln_dtype dtype, int32_t *id)
{
  struct kx_node n = e->nodes[x];
  if (!n.weak) {
    if (n.dtype == dtype) {
      *id = x;
      return KILN_OK;
    }
    return cast_node(op, e, x, dtype, id);
  }
  switch (n.kind) {
  case KX_CONST:
    return const_node(op, e, n.value, dtype, 0, id);
  case KX_UNARY: {
    if (unary_res_bool[n.op]) {
      /* a predicate of constants stays bool; only its result converts */
      struct kx_node s = n;
      s.weak = 0;
      int32_t sid;
      KILN_TRY(add_node(op, e, s, &sid));
      return retype(op, e, sid, dtype, id);
    }
    int32_t a;
    KILN_TRY(retype(op, e, n.a, dtype, &a));
    return unary_typed(op, e, (kiln_unary_op)n.op, a, 0, id);
  }
  case KX_BINARY: {
    if (binary_res_bool[n.op]) {
      struct kx_node s = n;
      s.weak = 0;
      int32_t sid;
      KILN_TRY(add_node(op, e, s, &sid));
      return cast_node(op, e, sid, dtype, id);
    }
    int32_t a, b;
    KILN_TRY(retype(op, e, n.a, dtype, &a));
    KILN_TRY(retype(op, e, n.b, dtype, &b));
    return binary_typed(op, e, (kiln_binary_op)n.op, a, b, 0, id);
  }
  default: {
    /* where, clamp, cast of constants: computed as they are, then converted */
    struct kx_node s = n;
    s.weak = 0;
    int32_t sid;
    KILN_TRY(add_node(op, e, s, &sid));
    return cast_node(op, e, sid, dtype, id);
  }
  }
}

static kiln_status
type_error(const char *op, const kiln_expr *e, const char *what, const char *opname,
           kiln_dtype dt, enum kiln__dtype_class cls, const int32_t *kids, int nkids)
{
  char buf[256];
  int used = snprintf(buf, sizeof buf, "%s(", what);
  for (int k = 0; k < nkids && used > 0 && (size_t)used < sizeof buf; k++) {
    char sub[96];
    used += snprintf(buf + used, sizeof buf - (size_t)used, "%s%s", k ? ", " : "",
                     kiln__expr_node_text(e, kids[k], sub, sizeof sub));
  }
  if (used > 0 && (size_t)used < sizeof buf)
    snprintf(buf + used, sizeof buf - (size_t)used, ")");
  return kiln__fail(KILN_ERR_DTYPE, op, 0, "node %s: %s does not accept %s (accepts %s)", buf,
                    opname, kiln_dtype_name(dt), kiln__dtype_class_text(cls));
}

static int
class_has(enum kiln__dtype_class cls, kiln_dtype dt)
{
  return (kiln__dtype_class_mask(cls) & KX_DTYPES & KILN__DT_BIT(dt)) != 0;
}

static kiln_status
unary_typed(const char *op, kiln_expr *e, kiln_unary_op u, int32_t x, int weak, int32_t *id)
{
  kiln_dtype dt = e->nodes[x].dtype;
  if (!class_has(unary_cls[u], dt))
    return type_error(op, e, kiln_unary_op_name(u), kiln_unary_op_name(u), dt, unary_cls[u], &x,
                      1);
  struct kx_node n = blank(KX_UNARY, unary_res_bool[u] ? KILN_BOOL : dt);
  n.op = (int)u;
  n.a = x;
  n.weak = weak;
  return add_node(op, e, n, id);
}

static int
commutative(kiln_binary_op b)
{
  switch (b) {
  case KILN_OP_ADD:
  case KILN_OP_MUL:
  case KILN_OP_MAX:
  case KILN_OP_MIN:
  case KILN_OP_HYPOT:
  case KILN_OP_EQ:
  case KILN_OP_NE:
  case KILN_OP_LOGICAL_AND:
  case KILN_OP_LOGICAL_OR:
  case KILN_OP_LOGICAL_XOR:
  case KILN_OP_BITWISE_AND:
  case KILN_OP_BITWISE_OR:
  case KILN_OP_BITWISE_XOR:
    return 1;
  default:
    return 0;
  }
}

/* Structure first, constant values only to break ties: a < b in the canonical order. */
static int
node_less(const kiln_expr *e, int32_t a, int32_t b)
{
  const struct kx_node *x = &e->nodes[a], *y = &e->nodes[b];
  if (x->shash != y->shash)
    return x->shash < y->shash;
  return x->vhash < y->vhash;
}

static kiln_status
binary_typed(const char *op, kiln_expr *e, kiln_binary_op b, int32_t x, int32_t y, int weak,
             int32_t *id)
{
  kiln_dtype dt = e->nodes[x].dtype;
  if (!class_has(binary_cls[b], dt)) {
    const int32_t kids[2] = {x, y};
    return type_error(op, e, kiln_binary_op_name(b), kiln_binary_op_name(b), dt, binary_cls[b],
                      kids, 2);
  }
  /* x > y is y < x: one kernel for both spellings */
  if (b == KILN_OP_GT || b == KILN_OP_GE) {
    int32_t t = x;
    x = y;
    y = t;
    b = b == KILN_OP_GT ? KILN_OP_LT : KILN_OP_LE;
  }
  if (commutative(b) && node_less(e, y, x)) {
    int32_t t = x;
    x = y;
    y = t;
  }
  struct kx_node n = blank(KX_BINARY, binary_res_bool[b] ? KILN_BOOL : dt);
  n.op = (int)b;
  n.a = x;
  n.b = y;
  n.weak = weak;
  return add_node(op, e, n, id);
}

static kiln_status
cast_node(const char *op, kiln_expr *e, int32_t x, kiln_dtype dtype, int32_t *id)
{
  const struct kx_node *xn = &e->nodes[x];
  if (xn->dtype == dtype && !xn->weak) {
    *id = x;
    return KILN_OK;
  }
  if (xn->weak && xn->kind == KX_CONST)
    return const_node(op, e, xn->value, dtype, 0, id);
  if (xn->weak)
    return retype(op, e, x, dtype, id);
  struct kx_node n = blank(KX_CAST, dtype);
  n.a = x;
  return add_node(op, e, n, id);
}

/* A weak node fixed at its provisional dtype (when nothing else can type it). */
static kiln_status
settle(const char *op, kiln_expr *e, int32_t x, int32_t *id)
{
  if (!e->nodes[x].weak) {
    *id = x;
    return KILN_OK;
  }
  return retype(op, e, x, e->nodes[x].dtype, id);
}

static int
is_float_dt(kiln_dtype dt)
{
  return dt == KILN_F32 || dt == KILN_F64 || dt == KILN_F16 || dt == KILN_BF16;
}

/*
 * The common dtype of two operands, retyping constants and casting typed
 * nodes to it. Constants meet a typed node at its dtype, except a floating
 * constant meeting an integer one, which meets at f32 (PyTorch's default).
 */
static kiln_status
unify(const char *op, kiln_expr *e, int32_t *x, int32_t *y, int *weak)
{
  const struct kx_node *a = &e->nodes[*x], *b = &e->nodes[*y];
  kiln_dtype dt;
  *weak = 0;
  if (a->weak && b->weak) {
    dt = is_float_dt(a->dtype) || is_float_dt(b->dtype) ? KILN_F32 : KILN_I64;
    *weak = 1;
  } else if (a->weak || b->weak) {
    const struct kx_node *s = a->weak ? b : a, *w = a->weak ? a : b;
    dt = s->dtype;
    if (is_float_dt(w->dtype) && !is_float_dt(dt))
      dt = KILN_F32;
  } else {
    KILN_TRY(kiln_dtype_promote(a->dtype, b->dtype, &dt));
  }
  if (*weak) {
    /* both stay constants: only the one that is integer while the other is floating moves */
    if (e->nodes[*x].dtype != dt)
      KILN_TRY(retype(op, e, *x, dt, x));
    else if (e->nodes[*y].dtype != dt)
      KILN_TRY(retype(op, e, *y, dt, y));
    if (e->nodes[*x].dtype != dt || e->nodes[*y].dtype != dt)
      return kiln__fail(KILN_ERR_INTERNAL, op, 0, "constants did not unify");
    return KILN_OK;
  }
  KILN_TRY(retype(op, e, *x, dt, x));
  return retype(op, e, *y, dt, y);
}

kiln_status
kiln_expr_unary(kiln_expr *e, kiln_unary_op op_, int32_t x, int32_t *id)
{
  const char *op = "kiln_expr_unary";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!id, KILN_ERR_INVALID_ARGUMENT, op, "id is NULL");
  KILN_RETURN_IF((unsigned)op_ >= KILN_UNARY_OP_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unary op %d is outside the enum", (int)op_);
  KILN_TRY(node_ok(op, e, x));
  int weak = e->nodes[x].weak && !unary_res_bool[op_];
  if (e->nodes[x].weak && !class_has(unary_cls[op_], e->nodes[x].dtype) &&
      class_has(unary_cls[op_], KILN_F32)) {
    /* sin(2): an integer constant under a floating-only op is floating */
    KILN_TRY(retype(op, e, x, KILN_F32, &x));
    weak = 0;
  }
  if (e->nodes[x].weak && unary_res_bool[op_])
    KILN_TRY(settle(op, e, x, &x));
  return unary_typed(op, e, op_, x, weak, id);
}

kiln_status
kiln_expr_binary(kiln_expr *e, kiln_binary_op op_, int32_t a, int32_t b, int32_t *id)
{
  const char *op = "kiln_expr_binary";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!id, KILN_ERR_INVALID_ARGUMENT, op, "id is NULL");
  KILN_RETURN_IF((unsigned)op_ >= KILN_BINARY_OP_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "binary op %d is outside the enum", (int)op_);
  KILN_TRY(node_ok(op, e, a));
  KILN_TRY(node_ok(op, e, b));
  int weak;
  KILN_TRY(unify(op, e, &a, &b, &weak));
  if (weak && binary_res_bool[op_]) {
    KILN_TRY(settle(op, e, a, &a));
    KILN_TRY(settle(op, e, b, &b));
    weak = 0;
  }
  return binary_typed(op, e, op_, a, b, weak, id);
}

kiln_status
kiln_expr_where(kiln_expr *e, int32_t cond, int32_t a, int32_t b, int32_t *id)
{
  const char *op = "kiln_expr_where";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!id, KILN_ERR_INVALID_ARGUMENT, op, "id is NULL");
  KILN_TRY(node_ok(op, e, cond));
  KILN_TRY(node_ok(op, e, a));
  KILN_TRY(node_ok(op, e, b));
  KILN_TRY(settle(op, e, cond, &cond));
  KILN_TRY(cast_node(op, e, cond, KILN_BOOL, &cond));
  int weak;
  KILN_TRY(unify(op, e, &a, &b, &weak));
  if (weak) {
    KILN_TRY(settle(op, e, a, &a));
    KILN_TRY(settle(op, e, b, &b));
  }
  struct kx_node n = blank(KX_WHERE, e->nodes[a].dtype);
  n.a = cond;
  n.b = a;
  n.c = b;
  return add_node(op, e, n, id);
}

kiln_status
kiln_expr_clamp(kiln_expr *e, int32_t x, int32_t lo, int32_t hi, int32_t *id)
{
  const char *op = "kiln_expr_clamp";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!id, KILN_ERR_INVALID_ARGUMENT, op, "id is NULL");
  KILN_TRY(node_ok(op, e, x));
  KILN_TRY(node_ok(op, e, lo));
  KILN_TRY(node_ok(op, e, hi));
  KILN_TRY(settle(op, e, x, &x));
  kiln_dtype dt = e->nodes[x].dtype;
  if (!class_has(KILN__CLASS_NUM, dt)) {
    const int32_t kids[3] = {x, lo, hi};
    return type_error(op, e, "clamp", "clamp", dt, KILN__CLASS_NUM, kids, 3);
  }
  KILN_TRY(cast_node(op, e, lo, dt, &lo));
  KILN_TRY(cast_node(op, e, hi, dt, &hi));
  struct kx_node n = blank(KX_CLAMP, dt);
  n.a = x;
  n.b = lo;
  n.c = hi;
  return add_node(op, e, n, id);
}

kiln_status
kiln_expr_cast(kiln_expr *e, int32_t x, kiln_dtype dtype, int32_t *id)
{
  const char *op = "kiln_expr_cast";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!id, KILN_ERR_INVALID_ARGUMENT, op, "id is NULL");
  KILN_TRY(node_ok(op, e, x));
  KILN_TRY(dtype_ok(op, dtype));
  return cast_node(op, e, x, dtype, id);
}

kiln_status
kiln_expr_output(kiln_expr *e, const char *name, int32_t x)
{
  const char *op = "kiln_expr_output";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_TRY(node_ok(op, e, x));
  KILN_RETURN_IF(e->noutputs >= KILN_EXPR_MAX_OUTPUTS, KILN_ERR_INVALID_ARGUMENT, op,
                 "more than %d outputs", KILN_EXPR_MAX_OUTPUTS);
  KILN_RETURN_IF(name && (strlen(name) == 0 || strlen(name) > 63), KILN_ERR_INVALID_ARGUMENT, op,
                 "output name must have 1-63 characters");
  KILN_TRY(settle(op, e, x, &x));
  struct kx_name *o = &e->outputs[e->noutputs];
  if (name)
    snprintf(o->name, sizeof o->name, "%s", name);
  else
    snprintf(o->name, sizeof o->name, "out%zu", e->noutputs);
  o->dtype = e->nodes[x].dtype;
  o->node = x;
  e->noutputs++;
  return KILN_OK;
}

kiln_dtype
kiln__expr_reduce_dtype(kiln_reduce_op op, kiln_dtype in, int fp64)
{
  int fl = is_float_dt(in);
  switch (op) {
  case KILN_REDUCE_SUM:
  case KILN_REDUCE_PROD:
    return fl ? in : KILN_I64;
  case KILN_REDUCE_MEAN:
    return fl ? in : fp64 ? KILN_F64 : KILN_F32;
  case KILN_REDUCE_ANY:
  case KILN_REDUCE_ALL:
    return KILN_BOOL;
  default:
    return in;
  }
}

kiln_status
kiln_expr_reduce(kiln_expr *e, kiln_reduce_op rop, const int64_t *axes, size_t naxes,
                 int keepdims)
{
  const char *op = "kiln_expr_reduce";
  KILN_TRY(kiln__expr_check(op, e));
  switch (rop) {
  case KILN_REDUCE_SUM:
  case KILN_REDUCE_PROD:
  case KILN_REDUCE_MEAN:
  case KILN_REDUCE_MIN:
  case KILN_REDUCE_MAX:
  case KILN_REDUCE_ANY:
  case KILN_REDUCE_ALL:
    break;
  default:
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "reduction %s is not one of sum, prod, mean, min, max, any, all",
                      kiln_reduce_op_name(rop));
  }
  KILN_RETURN_IF(naxes > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op, "%zu axes (at most %d)",
                 naxes, KILN_MAX_DIMS);
  KILN_RETURN_IF(!axes && naxes, KILN_ERR_INVALID_ARGUMENT, op, "axes is NULL with naxes %zu",
                 naxes);
  for (size_t i = 0; i < naxes; i++)
    for (size_t j = 0; j < i; j++)
      KILN_RETURN_IF(axes[i] == axes[j], KILN_ERR_INVALID_ARGUMENT, op, "axis %lld named twice",
                     (long long)axes[i]);
  e->has_reduce = 1;
  e->has_scan = 0;
  e->rop = rop;
  e->raxes_all = axes == NULL;
  e->nraxes = naxes;
  for (size_t i = 0; i < naxes; i++)
    e->raxes[i] = axes[i];
  e->keepdims = keepdims != 0;
  return KILN_OK;
}

kiln_status
kiln_expr_scan(kiln_expr *e, kiln_scan_op op, int64_t axis, int exclusive)
{
  const char *opn = "kiln_expr_scan";
  KILN_TRY(kiln__expr_check(opn, e));
  switch (op) {
  case KILN_SCAN_CUMSUM:
  case KILN_SCAN_CUMPROD:
  case KILN_SCAN_CUMMIN:
  case KILN_SCAN_CUMMAX:
    break;
  default:
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, opn, 0,
                      "scan %s is not one of cumsum, cumprod, cummin, cummax",
                      kiln_scan_op_name(op));
  }
  e->has_reduce = 0;
  e->has_scan = 1;
  e->sop = op;
  e->saxis = axis;
  e->sexclusive = exclusive != 0;
  return KILN_OK;
}

kiln_status
kiln_expr_counts(const kiln_expr *e, size_t *ninputs, size_t *nscalars, size_t *noutputs)
{
  KILN_TRY(kiln__expr_check("kiln_expr_counts", e));
  if (ninputs)
    *ninputs = e->ninputs;
  if (nscalars)
    *nscalars = e->nscalars;
  if (noutputs)
    *noutputs = e->noutputs;
  return KILN_OK;
}
