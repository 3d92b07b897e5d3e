/*
 * Fused expressions, internals shared by ir.c (construction, type checks,
 * canonical order), codegen.c (OpenCL C text), parse.c (the text form) and
 * plan.c (layouts and launches).
 */
#ifndef KILN_EXPR_INTERNAL_H
#define KILN_EXPR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/shape.h"
#include "kiln/expr.h"

enum kx_kind {
  KX_INPUT,  /* slot: input index */
  KX_SCALAR, /* slot: scalar argument index (named scalars first, then constants) */
  KX_CONST,  /* slot: index among constants; value */
  KX_UNARY,  /* op: kiln_unary_op; a */
  KX_BINARY, /* op: kiln_binary_op; a, b */
  KX_WHERE,  /* a ? b : c (a bool) */
  KX_CLAMP,  /* a clamped to [b, c] (all of a's dtype) */
  KX_CAST,   /* a converted to dtype */
};

struct kx_node {
  enum kx_kind kind;
  int op;
  kiln_dtype dtype;
  int weak; /* made of constants only: retyped when it meets a typed node */
  int32_t a, b, c;
  int32_t slot;
  kiln_scalar value;
  uint64_t shash; /* structural hash (no constant values, no node ids) */
  uint64_t vhash; /* the same with constant values (tie-break and CSE) */
};

struct kx_name {
  char name[64];
  kiln_dtype dtype;
  int32_t node;
};

struct kiln_expr {
  uint32_t magic;
  struct kx_node *nodes;
  size_t nnodes, cap;
  struct kx_name inputs[KILN_EXPR_MAX_INPUTS];
  size_t ninputs;
  struct kx_name scalars[KILN_EXPR_MAX_SCALARS]; /* named scalars */
  size_t nscalars;
  size_t nconsts;
  struct kx_name outputs[KILN_EXPR_MAX_OUTPUTS];
  size_t noutputs;
  int has_reduce;
  kiln_reduce_op rop;
  int64_t raxes[KILN_MAX_DIMS];
  size_t nraxes; /* raxes_all: every axis */
  int raxes_all;
  int keepdims;
  /* a trailing scan instead (kiln_expr_scan) */
  int has_scan;
  kiln_scan_op sop;
  int64_t saxis;
  int sexclusive;
};

#define KX_MAGIC 0x6b657870u /* "kexp" */

/* One step of the expressions' 64-bit hashes (ir.c's node hashes, canon.c's key): the
 * splitmix64 finaliser over the running hash h and the value v. */
static inline uint64_t
kx_mix(uint64_t h, uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

/* Checks the handle (INVALID_HANDLE naming op). */
kiln_status kiln__expr_check(const char *op, const kiln_expr *e);

/* A short rendering of node id ("add(x, mul(2, y))"), for messages; buf is returned. */
const char *kiln__expr_node_text(const kiln_expr *e, int32_t id, char *buf, size_t len);

/* Result dtype of reduction op over values of dtype (fp64: whether REAL may be f64). */
kiln_dtype kiln__expr_reduce_dtype(kiln_reduce_op op, kiln_dtype in, int fp64);

/*
 * The canonical form: nodes reachable from the outputs in a construction-
 * independent order (children first, commutative operands ordered by
 * structure), renumbered 0..n-1; scalar slots renumbered in that order too
 * (named scalars keep their declared numbers, constants follow).
 */
struct kx_canon {
  struct kx_node *nodes;   /* renumbered copies */
  size_t nnodes;
  int32_t outputs[KILN_EXPR_MAX_OUTPUTS];
  size_t noutputs;
  kiln_dtype out_dtype[KILN_EXPR_MAX_OUTPUTS]; /* before the reduction */
  kiln_scalar consts[KILN_EXPR_MAX_SCALARS];   /* constant values by canonical slot */
  size_t nconsts;
  uint64_t hash;
};

kiln_status kiln__expr_canon(const char *op, const kiln_expr *e, struct kx_canon *c);

/*
 * The label `kiln cache list` shows: "expr " and the outputs in canonical
 * form with positional names (in0, s0; constants after the nnamed named
 * scalars), then suffix. It depends only on the canonical form, so equal
 * expressions share disk entries.
 */
void kiln__expr_canon_label(const struct kx_canon *c, size_t nnamed, const char *suffix,
                            char *buf, size_t len);
void kiln__expr_canon_free(struct kx_canon *c);

/* OpenCL C type of a dtype's values ("float"), and the suffix of its helpers ("f32"). */
const char *kiln__expr_ctype(kiln_dtype dt);

/*
 * How an input is addressed by the kernel: FLAT (element i of the iteration,
 * or o * R + r with a reduction), SPLAT (one element for all), STRIDED (its
 * strides over the merged iteration dimensions).
 */
enum kx_access { KX_FLAT, KX_SPLAT, KX_STRIDED };

/* What the generated source depends on besides the canonical expression. */
struct kx_layout {
  enum kx_access access[KILN_EXPR_MAX_INPUTS];
  kiln_dtype in_dtype[KILN_EXPR_MAX_INPUTS];
  size_t ninputs;
  kiln_dtype scalar_dtype[KILN_EXPR_MAX_SCALARS]; /* named scalars, then constants */
  size_t nscalars;
  uint32_t kdims; /* merged kept (or, without reduction, iteration) dimensions */
  uint32_t rdims; /* merged reduced dimensions (0: no reduction) */
  int reduce;
  kiln_reduce_op rop; /* with scan: the op whose combine the scan runs (SUM, PROD, MIN, MAX) */
  int scan;           /* kx_scan: a running rop along the reduced dimension */
  int exclusive;
  kiln_dtype acc_dtype;
  kiln_dtype res_dtype[KILN_EXPR_MAX_OUTPUTS];
  uint32_t items; /* elements per work-item of elementwise launches, a group apart (GPUs) */
  uint32_t lanes; /* with items 1: consecutive elements per work-item (CPUs) */
  uint32_t wg;    /* work-group size of reduction launches (a power of two) */
  int blocked;    /* reduction: each work-item takes a contiguous run (CPUs), else a stride */
  int fp64;
};

/*
 * kiln_expr_parse where every name that is not an earlier statement's target
 * is a tensor input of dtype, declared in order of first use (the warm-up
 * files of `kiln cache warm --from` list expressions without declarations).
 */
kiln_status kiln__expr_parse_implicit(const char *text, kiln_dtype dtype, kiln_expr **out);

/*
 * Test hook: nonzero makes plans use the GPU launch shapes (4 elements a work-item a group
 * apart, strided reductions) on any device, so that CPU test runs check those kernels too.
 */
extern int kiln__expr_test_gpu_shapes;

/* Generates the program text (malloc'd, NUL-terminated) for a canonical form and a layout. */
kiln_status kiln__expr_codegen(const char *op, const struct kx_canon *c,
                               const struct kx_layout *l, char **text, size_t *len);

#endif
