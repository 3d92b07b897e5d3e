/*
 * The canonical form of an expression: the nodes the outputs reach, in
 * post-order from the outputs (children first, in their stored order,
 * which kiln_expr_binary fixed by structure for commutative ops), so two
 * constructions of the same math give the same list, the same kernel text
 * and the same hash. Constants are numbered in that order; their values
 * are not part of the hash (they are kernel arguments).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "expr/expr_internal.h"

static uint64_t
mix(uint64_t h, uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

static void
visit(const kiln_expr *e, int32_t id, int32_t *map, struct kx_canon *c)
{
  if (map[id] >= 0)
    return;
  const struct kx_node *n = &e->nodes[id];
  if (n->a >= 0)
    visit(e, n->a, map, c);
  if (n->b >= 0)
    visit(e, n->b, map, c);
  if (n->c >= 0)
    visit(e, n->c, map, c);
  struct kx_node m = *n;
  m.a = n->a >= 0 ? map[n->a] : -1;
  m.b = n->b >= 0 ? map[n->b] : -1;
  m.c = n->c >= 0 ? map[n->c] : -1;
  m.weak = 0;
  if (m.kind == KX_CONST) {
    m.slot = (int32_t)c->nconsts;
    c->consts[c->nconsts++] = n->value;
  }
  map[id] = (int32_t)c->nnodes;
  c->nodes[c->nnodes++] = m;
}

kiln_status
kiln__expr_canon(const char *op, const kiln_expr *e, struct kx_canon *c)
{
  memset(c, 0, sizeof *c);
  KILN_RETURN_IF(e->noutputs == 0, KILN_ERR_INVALID_ARGUMENT, op,
                 "the expression has no output (kiln_expr_output)");
  int32_t *map = malloc(e->nnodes * sizeof *map);
  c->nodes = malloc(e->nnodes * sizeof *c->nodes);
  if (!map || !c->nodes) {
    free(map);
    free(c->nodes);
    c->nodes = NULL;
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "no memory for %zu nodes", e->nnodes);
  }
  for (size_t i = 0; i < e->nnodes; i++)
    map[i] = -1;
  for (size_t k = 0; k < e->noutputs; k++) {
    visit(e, e->outputs[k].node, map, c);
    c->outputs[k] = map[e->outputs[k].node];
    c->out_dtype[k] = e->outputs[k].dtype;
  }
  c->noutputs = e->noutputs;
  free(map);

  uint64_t h = mix(0x6b78, e->ninputs);
  for (size_t i = 0; i < e->ninputs; i++)
    h = mix(h, (uint64_t)e->inputs[i].dtype);
  h = mix(h, e->nscalars);
  for (size_t i = 0; i < e->nscalars; i++)
    h = mix(h, (uint64_t)e->scalars[i].dtype);
  for (size_t i = 0; i < c->nnodes; i++) {
    const struct kx_node *n = &c->nodes[i];
    h = mix(h, (uint64_t)n->kind);
    h = mix(h, (uint64_t)n->op);
    h = mix(h, (uint64_t)n->dtype);
    h = mix(h, (uint64_t)(int64_t)n->a);
    h = mix(h, (uint64_t)(int64_t)n->b);
    h = mix(h, (uint64_t)(int64_t)n->c);
    h = mix(h, (uint64_t)(int64_t)n->slot);
  }
  h = mix(h, c->noutputs);
  for (size_t k = 0; k < c->noutputs; k++)
    h = mix(h, (uint64_t)c->outputs[k]);
  h = mix(h, (uint64_t)e->has_reduce);
  if (e->has_reduce) {
    h = mix(h, (uint64_t)e->rop);
    h = mix(h, (uint64_t)e->raxes_all);
    h = mix(h, (uint64_t)e->keepdims);
    h = mix(h, e->nraxes);
    for (size_t i = 0; i < e->nraxes; i++)
      h = mix(h, (uint64_t)e->raxes[i]);
  }
  h = mix(h, (uint64_t)e->has_scan);
  if (e->has_scan) {
    h = mix(h, (uint64_t)e->sop);
    h = mix(h, (uint64_t)e->saxis);
    h = mix(h, (uint64_t)e->sexclusive);
  }
  c->hash = h;
  return KILN_OK;
}

void
kiln__expr_canon_free(struct kx_canon *c)
{
  free(c->nodes);
  c->nodes = NULL;
}

kiln_status
kiln_expr_hash(const kiln_expr *e, uint64_t *out)
{
  const char *op = "kiln_expr_hash";
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  struct kx_canon c;
  KILN_TRY(kiln__expr_canon(op, e, &c));
  *out = c.hash;
  kiln__expr_canon_free(&c);
  return KILN_OK;
}

/* Renders canonical node id with positional names (in0, s0, c0) into b; returns chars written. */
static size_t
canon_render(const struct kx_canon *c, size_t nnamed, int32_t id, char *buf, size_t len)
{
  if (len < 2)
    return 0;
  const struct kx_node *n = &c->nodes[id];
  int w;
  switch (n->kind) {
  case KX_INPUT:
    w = snprintf(buf, len, "in%d", (int)n->slot);
    return (size_t)w < len ? (size_t)w : len - 1;
  case KX_SCALAR:
    w = snprintf(buf, len, "s%d", (int)n->slot);
    return (size_t)w < len ? (size_t)w : len - 1;
  case KX_CONST:
    w = snprintf(buf, len, "s%zu", nnamed + (size_t)n->slot);
    return (size_t)w < len ? (size_t)w : len - 1;
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
  default:
    w = snprintf(buf, len, "%s(", kiln_dtype_name(n->dtype));
    break;
  }
  size_t used = (size_t)w < len ? (size_t)w : len - 1;
  const int32_t kids[3] = {n->a, n->b, n->c};
  for (int k = 0; k < 3 && kids[k] >= 0; k++) {
    if (k && used + 1 < len)
      used += (size_t)snprintf(buf + used, len - used, ",");
    if (used + 1 < len)
      used += canon_render(c, nnamed, kids[k], buf + used, len - used);
  }
  if (used + 1 < len)
    used += (size_t)snprintf(buf + used, len - used, ")");
  return used < len ? used : len - 1;
}

void
kiln__expr_canon_label(const struct kx_canon *c, size_t nnamed, const char *suffix, char *buf,
                       size_t len)
{
  size_t used = (size_t)snprintf(buf, len, "expr ");
  for (size_t k = 0; k < c->noutputs && used + 1 < len; k++) {
    if (k)
      used += (size_t)snprintf(buf + used, len - used, "; ");
    if (used + 1 < len)
      used += canon_render(c, nnamed, c->outputs[k], buf + used, len - used);
  }
  if (suffix && used + 1 < len)
    snprintf(buf + used, len - used, "%s", suffix);
}
