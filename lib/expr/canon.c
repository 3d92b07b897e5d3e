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

  uint64_t h = kx_mix(0x6b78, e->ninputs);
  for (size_t i = 0; i < e->ninputs; i++)
    h = kx_mix(h, (uint64_t)e->inputs[i].dtype);
  h = kx_mix(h, e->nscalars);
  for (size_t i = 0; i < e->nscalars; i++)
    h = kx_mix(h, (uint64_t)e->scalars[i].dtype);
  for (size_t i = 0; i < c->nnodes; i++) {
    const struct kx_node *n = &c->nodes[i];
    h = kx_mix(h, (uint64_t)n->kind);
    h = kx_mix(h, (uint64_t)n->op);
    h = kx_mix(h, (uint64_t)n->dtype);
    h = kx_mix(h, (uint64_t)(int64_t)n->a);
    h = kx_mix(h, (uint64_t)(int64_t)n->b);
    h = kx_mix(h, (uint64_t)(int64_t)n->c);
    h = kx_mix(h, (uint64_t)(int64_t)n->slot);
  }
  h = kx_mix(h, c->noutputs);
  for (size_t k = 0; k < c->noutputs; k++)
    h = kx_mix(h, (uint64_t)c->outputs[k]);
  h = kx_mix(h, (uint64_t)e->has_reduce);
  if (e->has_reduce) {
    h = kx_mix(h, (uint64_t)e->rop);
    h = kx_mix(h, (uint64_t)e->raxes_all);
    h = kx_mix(h, (uint64_t)e->keepdims);
    h = kx_mix(h, e->nraxes);
    for (size_t i = 0; i < e->nraxes; i++)
      h = kx_mix(h, (uint64_t)e->raxes[i]);
  }
  h = kx_mix(h, (uint64_t)e->has_scan);
  if (e->has_scan) {
    h = kx_mix(h, (uint64_t)e->sop);
    h = kx_mix(h, (uint64_t)e->saxis);
    h = kx_mix(h, (uint64_t)e->sexclusive);
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
