/*
 * nn training family: scaled dot-product attention forward and backward, and rotary position
 * embedding (cl_kernels/nn_attention.cl).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/nn_attention.h"
#include "ops/blas_route.h"
#include "ops/nn_internal.h"
#include "ops/nn_train.h"
#include "runtime/runtime.h"
#include "runtime/tuner.h"

/* Must match cl_kernels/nn_attention.cl. */
#define ATT_DMAX 128
enum { ATT_CAUSAL = 1, ATT_MASK = 2, ATT_VEC = 4, ATT_DQF = 8 };
enum { ROPE_HALF = 1, ROPE_INV = 2 };
/* Rows of att_bwd_pre's work-groups of 256 (ATT_PRE_RW). */
#define ATT_PRE_ROWS 8

/*
 * The backward kernels' tiles (cl_kernels/nn_attention.cl, -DATT_BWD; ABK_KV ... AQ_TN): keys
 * per work-group of att_bwd_dkdv and its register tile (keys x queries), queries per
 * work-group of att_bwd_dq and its register tile (queries x keys), and the local memory of
 * the larger of the two (f32 and halves; f64 has tables 1 and 3 only, 32 keys and queries,
 * 64 items, 28 and 37 KiB):
 *   1: 32 keys (x 64 queries), 64 queries (x 32 keys), 4 x 4, within 32 KiB;
 *   2: 64 keys (x 64 queries), 128 queries (x 32 keys), 4 x 4, 256 items, 43 KiB;
 *   3: table 1 with staging chunks twice as large (half the barriers), 45 KiB;
 *   4-7: fused (FlashAttention-2's five products instead of seven): att_bwd_dkdv computes dQ
 *      too and adds it with atomics to an f32 accumulator (dQ is then not bit-reproducible;
 *      dK and dV are), its loads one staging step ahead; 64 keys x 64 queries with 4 x 4
 *      (256 items), 4 keys x 8 queries, 8 x 4 (128 items each), and 8 x 4 with the dQ of a
 *      query tile in one pass instead of two.
 * The `attention` tuner family's parameter "bwd" picks one (0: the rule, att_bwd_effective).
 */
typedef struct {
  uint16_t kv_keys, kv_queries, kv_tm, kv_tn, q_queries, q_keys, q_tm, q_tn;
  uint32_t local; /* bytes, f32 */
  int fused;      /* dQ from att_bwd_dkdv (atomics), no att_bwd_dq */
} att_bwd_table;

static const att_bwd_table att_bwd_tables[] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0},          /* 0: the rule */
    {32, 64, 4, 4, 64, 32, 4, 4, 32256, 0},  /* 1: 32-key dK/dV, 64-query dQ */
    {64, 64, 4, 4, 128, 32, 4, 4, 44032, 0}, /* 2: twice the work-group */
    {32, 64, 4, 4, 64, 32, 4, 4, 45568, 0},  /* 3: larger chunks */
    {64, 64, 4, 4, 128, 32, 4, 4, 44032, 1}, /* 4: fused, 4 x 4 */
    {64, 64, 4, 8, 128, 32, 4, 4, 44032, 1}, /* 5: fused, 4 keys x 8 queries */
    {64, 64, 8, 4, 128, 32, 4, 4, 44032, 1}, /* 6: fused, 8 keys x 4 queries */
    {64, 64, 8, 4, 128, 32, 4, 4, 44032, 1}, /* 7: 6 with one dQ pass */
};
#define ATT_NBWD (sizeof att_bwd_tables / sizeof att_bwd_tables[0])
/* f64's tables 1 and 3: 32 x 32 with 4 x 4 (64 items), 28 and 37 KiB. */
static const att_bwd_table att_bwd_f64 = {32, 32, 4, 4, 32, 32, 4, 4, 37376, 0};

static const att_bwd_table *
att_bwd_table_of(kiln_dtype dt, uint32_t bwd)
{
  return dt == KILN_F64 ? &att_bwd_f64 : &att_bwd_tables[bwd];
}

static size_t
att_bwd_kv_items(const att_bwd_table *b)
{
  return (size_t)(b->kv_keys / b->kv_tm) * (b->kv_queries / b->kv_tn);
}

static size_t
att_bwd_q_items(const att_bwd_table *b)
{
  return (size_t)(b->q_queries / b->q_tm) * (b->q_keys / b->q_tn);
}

/* The table a call runs: the one asked for when the device has its work-groups and local
 * memory (f64 has 1 and 3 only), else 1. The rule (0): on GPUs 6 (f32, halves) and 3 (f64),
 * the fastest on the H200 (batch 8 x 16 heads x 4096 tokens x head 128, f32: tables 2, 4, 5,
 * 6 234, 131, 130 and 126 ms, the fused ones without loads ahead 146-152, table 2 with an 8 x 4
 * dQ 228, PyTorch 72.8; tables 1 and 3 217 and 207 in an earlier run; f64 708 and 681 ms for
 * 1 and 3); 1 on CPUs. */
static uint32_t
att_bwd_effective(const kiln_device_info *info, kiln_dtype dt, uint32_t want)
{
  if (want == 0 && info->is_gpu)
    want = dt == KILN_F64 ? 3 : 6;
  if (dt == KILN_F64)
    return want == 3 && info->local_mem_bytes >= att_bwd_f64.local ? 3 : 1;
  if (want > 1 && want < ATT_NBWD) {
    const att_bwd_table *b = &att_bwd_tables[want];
    size_t items =
        att_bwd_kv_items(b) > att_bwd_q_items(b) ? att_bwd_kv_items(b) : att_bwd_q_items(b);
    if (items <= info->max_work_group_size && b->local <= info->local_mem_bytes)
      return want;
  }
  return 1;
}

/*
 * The forward kernel's tiles (cl_kernels/nn_attention.cl, att_fwd): queries per work-group,
 * keys per tile, the register tile of scores per work-item (tm x tn), features per Q/K
 * staging chunk, keys per V staging chunk, whether loads run one staging step ahead (pf), and
 * whether the row reductions share the staging space (ra: two more barriers per key tile, for
 * the 128-query and 128-key tiles whose P alone takes 33-35 KiB). The `attention` tuner
 * family's parameter "tile" indexes this table; 0 is the rule (att_rule_tile).
 */
typedef struct {
  uint16_t bq, bk, tm, tn, dc, vk, pf, ra;
} att_tile;

static const att_tile att_tiles[] = {
    {0, 0, 0, 0, 0, 0, 0, 0},      /* 0: the rule */
    {64, 64, 4, 4, 32, 32, 0, 0},  /* 1: 256 items, 4x4 scores, 4x8 outputs (head 128) */
    {64, 64, 8, 4, 32, 32, 0, 0},  /* 2: 128 items, 8x4 scores, 8x8 outputs (f32 39 KiB) */
    {64, 32, 4, 4, 16, 8, 0, 0},   /* 3: 128 items, 4x4 scores, 4x16 outputs */
    {32, 32, 4, 4, 16, 16, 0, 0},  /* 4: 64 items, 4x4 scores, 4x16 outputs (f64 in 28 KiB) */
    {32, 64, 4, 4, 16, 16, 0, 0},  /* 5: 128 items, 4x4 scores, 4x8 outputs (f64 39 KiB) */
    {128, 64, 4, 8, 16, 16, 1, 1}, /* 6: 256 items, 4x8 scores, 4x16 outputs (f32 46 KiB) */
    {64, 128, 4, 8, 16, 16, 1, 1}, /* 7: 256 items, 4x8 scores, 4x8 outputs (f32 47 KiB) */
    {128, 64, 8, 4, 16, 16, 1, 1}, /* 8: 256 items, 8x4 scores, 8x8 outputs (f32 46 KiB) */
    {32, 64, 4, 4, 16, 16, 1, 0},  /* 9: tile 5, loads one staging step ahead */
    {64, 64, 4, 8, 32, 32, 1, 0},  /* 10: 128 items, 4x8 scores, 4x16 outputs */
    {64, 128, 8, 8, 16, 16, 1, 1}, /* 11: 128 items, 8x8 scores, 8x8 outputs (f32 47 KiB) */
};
#define ATT_NTILES (sizeof att_tiles / sizeof att_tiles[0])

/* The program variant of att_fwd: a tile of att_tiles, the head dimension it covers, and the
 * backward tables (the program of the rule's tile at head 128 carries the backward kernels). */
typedef struct {
  uint32_t tile, dh, bwd;
} att_variant;

/* The `attention` tuner family's parameters. */
typedef struct {
  uint32_t tile, bwd;
} att_params_t;

/* The head dimension the accumulators of tile t cover for D and Dv: 32, 64 or 128, at least
 * 4 features per item of a row (0: the tile cannot). CPUs: always 128 (one program per tile:
 * PoCL takes seconds to compile each, and registers are not the limit there). */
static uint32_t
att_dh(const kiln_device_info *info, const att_tile *t, uint64_t D, uint64_t Dv)
{
  if (!info->is_gpu)
    return ATT_DMAX;
  uint64_t need = D > Dv ? D : Dv, per_row = 4u * (t->bk / t->tn);
  if (per_row > need)
    need = per_row;
  for (uint32_t dh = 32; dh <= ATT_DMAX; dh *= 2)
    if (need <= dh)
      return dh;
  return 0;
}

/* Local memory of att_fwd with tile t (the sizes of cl_kernels/nn_attention.cl: staging,
 * P, and the row reductions, which share the staging space with ra). */
static uint64_t
att_local_bytes(const att_tile *t, uint32_t dh, size_t esz)
{
  uint64_t qs = t->bq + 4u, ks = t->bk + 4u, ntc = t->bk / t->tn;
  uint64_t qk = (uint64_t)t->dc * (qs + ks), vn = (uint64_t)t->vk * dh;
  uint64_t stage = qk > vn ? qk : vn;
  uint64_t red = (uint64_t)t->bq * ((ntc / 4) % 2 ? ntc : ntc + 4);
  if (t->ra)
    stage = stage > red ? stage : red, red = 0;
  return esz * (stage + t->bk * qs + red);
}

/* Tile t fits the device: its work-group size, and its local memory within the device's and
 * within 48 KiB (what the tiles are designed for; it also keeps the f64 choices, and the
 * programs the tests build on CPUs, to three). */
static int
att_tile_fits(const kiln_device_info *info, const att_tile *t, uint32_t dh, size_t esz)
{
  uint64_t items = (uint64_t)(t->bq / t->tm) * (t->bk / t->tn), lb = att_local_bytes(t, dh, esz);
  return dh && items <= info->max_work_group_size && lb <= info->local_mem_bytes && lb <= 48 * 1024;
}

/*
 * The tile the rule picks: on GPUs the order measured on the H200 (batch 8 x 16 heads x 4096
 * tokens x head 128, f32 forward / causal, two processes of 3 repetitions each agreeing within
 * 0.1 ms: tile 6 41.1 / 21.4 ms, 8 42.6 / 22.2, 11 42.9 / 21.5; in an earlier run 7 43.4, 10
 * 43.7, 2 47.0), f16 and bf16 as f32 (their local arrays are f32), f64 the tile with the
 * fewest barriers that fits; on CPUs (PoCL runs a work-group's items as loops over vectorised
 * lanes) the 64-item 32 x 32 tile; then the first of the rest that fits the device.
 * `kiln tune --family attention` times them all.
 */
static uint32_t
att_rule_tile(const kiln_device_info *info, kiln_dtype dt, uint64_t D, uint64_t Dv)
{
  static const uint32_t gpu_f32[] = {6, 8, 11, 10, 7, 2, 1, 3, 5, 4, 9};
  static const uint32_t gpu_f64[] = {5, 9, 3, 4, 2, 1, 6, 7, 8, 10, 11};
  static const uint32_t cpu[] = {4, 3, 5, 2, 1, 6, 7, 8, 9, 10, 11};
  const uint32_t *order = !info->is_gpu ? cpu : dt == KILN_F64 ? gpu_f64 : gpu_f32;
  size_t esz = kiln_dtype_size(kiln__nn_compute_dtype(dt));
  for (size_t i = 0; i < ATT_NTILES - 1; i++) {
    const att_tile *t = &att_tiles[order[i]];
    if (att_tile_fits(info, t, att_dh(info, t, D, Dv), esz))
      return order[i];
  }
  return 0;
}

/* The tile a call runs: the requested one when it fits the device, else the rule's. */
static uint32_t
att_effective_tile(const kiln_device_info *info, kiln_dtype dt, uint64_t D, uint64_t Dv,
                   uint32_t want)
{
  if (want > 0 && want < ATT_NTILES) {
    const att_tile *t = &att_tiles[want];
    size_t esz = kiln_dtype_size(kiln__nn_compute_dtype(dt));
    if (att_tile_fits(info, t, att_dh(info, t, D, Dv), esz))
      return want;
  }
  return att_rule_tile(info, dt, D, Dv);
}

void
kiln__nnt_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                        const void *variant, char *buf, size_t len)
{
  if (strcmp(source, KILN__NNT_ATT) != 0)
    return;
  const att_variant *v = variant;
  /* NULL (the cache warm-up): the rule's tile at the widest head, the rule's backward. */
  att_variant def = {att_rule_tile(info, dtype, ATT_DMAX, ATT_DMAX), ATT_DMAX,
                     att_bwd_effective(info, dtype, 0)};
  if (!v)
    v = &def;
  const att_tile *t = &att_tiles[v->tile < ATT_NTILES && v->tile ? v->tile : 1];
  kiln__options_append(buf, len,
                       " -DATT_BQ=%u -DATT_BK=%u -DATT_TM=%u -DATT_TN=%u -DATT_DC=%u"
                       " -DATT_VK=%u -DATT_DH=%u",
                       t->bq, t->bk, t->tm, t->tn, t->dc, t->vk, v->dh);
  /* Options left out are 0 in the kernel (and keep the text within the callers' buffers). */
  if (t->pf)
    kiln__options_append(buf, len, " -DATT_PF=1");
  if (t->ra)
    kiln__options_append(buf, len, " -DATT_RA=1");
  /* The backward kernels and rope come with the rule's tile at head 128 only (the variant
   * they run from, which a forward call with that tile shares); the other tiles build
   * att_fwd alone, which halves their compile time. */
  if (v->tile == def.tile && v->dh == ATT_DMAX) {
    kiln__options_append(buf, len, " -DATT_BWD=%u", v->bwd);
    /* Another table than the rule's: a program only the backward pass runs (the forward
     * always builds with the rule's table), so it leaves att_fwd out (half the compile). */
    if (v->bwd != def.bwd)
      kiln__options_append(buf, len, " -DATT_NF=1");
  }
  if (info->is_gpu)
    kiln__options_append(buf, len, " -DATT_G=1");
}

/* The geometry of one attention call. */
typedef struct {
  uint64_t BH, Sq, Sk, D, Dv, mstride;
  kiln__shape oshape, lshape;
  double scale;
} att_geo;

static kiln_status
att_geometry(const char *op, kiln_context *ctx, const kiln_tensor *q, const kiln_tensor *k,
             const kiln_tensor *v, const kiln_tensor *mask, double scale, att_geo *g)
{
  KILN_RETURN_IF(!q, KILN_ERR_INVALID_HANDLE, op, "q is NULL");
  KILN_TRY(kiln__tensor_check(op, q, ctx));
  KILN_RETURN_IF(!((KILN__DT_FLOATS | KILN__DT_HALVES) & KILN__DT_BIT(q->dtype)), KILN_ERR_DTYPE,
                 op, "q is %s, expected f32, f64, f16 or bf16", kiln_dtype_name(q->dtype));
  KILN_RETURN_IF(!kiln__device_has_dtype(&ctx->info, q->dtype), KILN_ERR_UNSUPPORTED, op,
                 "%s needs a device with fp64", kiln_dtype_name(q->dtype));
  KILN_RETURN_IF(!k || !v, KILN_ERR_INVALID_HANDLE, op, "k or v is NULL");
  KILN_TRY(kiln__tensor_check(op, k, ctx));
  KILN_TRY(kiln__tensor_check(op, v, ctx));
  KILN_RETURN_IF(k->dtype != q->dtype || v->dtype != q->dtype, KILN_ERR_DTYPE, op,
                 "q, k and v are %s, %s and %s; they must share one dtype",
                 kiln_dtype_name(q->dtype), kiln_dtype_name(k->dtype), kiln_dtype_name(v->dtype));
  size_t nd = q->shape.ndim;
  char a[128], b[128], c[128];
  KILN_RETURN_IF(nd < 2 || k->shape.ndim != nd || v->shape.ndim != nd, KILN_ERR_SHAPE, op,
                 "q %s, k %s, v %s: expected [..., Sq, D], [..., Sk, D], [..., Sk, Dv]",
                 kiln__shape_format(&q->shape, a, sizeof a),
                 kiln__shape_format(&k->shape, b, sizeof b),
                 kiln__shape_format(&v->shape, c, sizeof c));
  memset(g, 0, sizeof *g);
  g->BH = 1;
  for (size_t i = 0; i + 2 < nd; i++) {
    KILN_RETURN_IF(k->shape.dims[i] != q->shape.dims[i] || v->shape.dims[i] != q->shape.dims[i],
                   KILN_ERR_SHAPE, op, "q %s, k %s, v %s: the leading axes differ",
                   kiln__shape_format(&q->shape, a, sizeof a),
                   kiln__shape_format(&k->shape, b, sizeof b),
                   kiln__shape_format(&v->shape, c, sizeof c));
    g->BH *= (uint64_t)q->shape.dims[i];
  }
  g->Sq = (uint64_t)q->shape.dims[nd - 2];
  g->D = (uint64_t)q->shape.dims[nd - 1];
  g->Sk = (uint64_t)k->shape.dims[nd - 2];
  g->Dv = (uint64_t)v->shape.dims[nd - 1];
  KILN_RETURN_IF(k->shape.dims[nd - 1] != q->shape.dims[nd - 1] ||
                     v->shape.dims[nd - 2] != k->shape.dims[nd - 2],
                 KILN_ERR_SHAPE, op, "q %s, k %s, v %s: expected [..., Sq, D], [..., Sk, D], "
                 "[..., Sk, Dv]",
                 kiln__shape_format(&q->shape, a, sizeof a),
                 kiln__shape_format(&k->shape, b, sizeof b),
                 kiln__shape_format(&v->shape, c, sizeof c));
  KILN_RETURN_IF(g->D == 0 || g->Dv == 0, KILN_ERR_SHAPE, op, "a head dimension is 0");
  KILN_RETURN_IF(g->D > ATT_DMAX || g->Dv > ATT_DMAX, KILN_ERR_UNSUPPORTED, op,
                 "head dimensions %llu and %llu: at most %d are supported",
                 (unsigned long long)g->D, (unsigned long long)g->Dv, ATT_DMAX);
  KILN_RETURN_IF(scale != 0 && !isfinite(scale), KILN_ERR_INVALID_ARGUMENT, op,
                 "scale %g must be finite (0: 1 / sqrt(D))", scale);
  g->scale = scale != 0 ? scale : 1 / sqrt((double)g->D);
  g->oshape = q->shape;
  g->oshape.dims[nd - 1] = (int64_t)g->Dv;
  g->lshape = q->shape;
  g->lshape.ndim = nd - 1;
  if (mask) {
    KILN_TRY(kiln__tensor_check(op, mask, ctx));
    KILN_RETURN_IF(mask->dtype != q->dtype, KILN_ERR_DTYPE, op, "mask is %s, expected %s",
                   kiln_dtype_name(mask->dtype), kiln_dtype_name(q->dtype));
    kiln__shape full = q->shape;
    full.dims[nd - 1] = (int64_t)g->Sk;
    int two = mask->shape.ndim == 2 && (uint64_t)mask->shape.dims[0] == g->Sq &&
              (uint64_t)mask->shape.dims[1] == g->Sk;
    KILN_RETURN_IF(!two && !kiln__shape_equal(&mask->shape, &full), KILN_ERR_SHAPE, op,
                   "mask has shape %s, expected [%llu, %llu] or %s",
                   kiln__shape_format(&mask->shape, a, sizeof a), (unsigned long long)g->Sq,
                   (unsigned long long)g->Sk, kiln__shape_format(&full, b, sizeof b));
    g->mstride = two ? 0 : g->Sq * g->Sk;
  }
  return KILN_OK;
}

static kiln_status
group_count(const char *op, uint64_t BH, uint64_t S, uint64_t tile, uint64_t *groups)
{
  uint64_t t = (S + tile - 1) / tile;
  KILN_RETURN_IF(t && BH > (uint64_t)INT32_MAX / t, KILN_ERR_OVERFLOW, op,
                 "%llu x %llu work-groups exceed 2^31 - 1", (unsigned long long)BH,
                 (unsigned long long)t);
  *groups = BH * t;
  return KILN_OK;
}

/* The arguments every attention kernel starts with: q, k, v, mask. */
static void
att_args_qkvm(kiln__args *a, const kiln_tensor *q, const kiln_tensor *k, const kiln_tensor *v,
              const kiln_tensor *mask)
{
  kiln__args_tensor(a, q);
  kiln__args_tensor(a, k);
  kiln__args_tensor(a, v);
  kiln__args_tensor(a, mask);
}

static void
att_args_geo(kiln__args *a, const att_geo *g, kiln_dtype dt, uint32_t flags)
{
  kiln__args_u64(a, g->BH);
  kiln__args_u64(a, g->Sq);
  kiln__args_u64(a, g->Sk);
  kiln__args_u64(a, g->D);
  kiln__args_u64(a, g->Dv);
  kiln__args_u64(a, g->mstride);
  kiln__args_float(a, kiln__nn_compute_dtype(dt), g->scale);
  kiln__args_u32(a, flags);
}

static kiln_status
check_outs(const char *op, kiln_context *ctx, kiln_tensor **const *outs, const char *const *names,
           size_t n)
{
  kiln_tensor *given[3] = {NULL, NULL, NULL};
  for (size_t i = 0; i < n; i++)
    if (outs[i] && *outs[i]) {
      KILN_TRY(kiln__tensor_check(op, *outs[i], ctx));
      given[i] = *outs[i];
    }
  return kiln__ops_outputs_disjoint(op, given, names, n);
}

/* Begins the wanted targets (none in place: the kernels read inputs other items write), of
 * dtype dt, or lse_dt for target lse_at. */
static kiln_status
begin_targets(const char *op, kiln_context *ctx, kiln_dtype dt, kiln_tensor **const *outs,
              const kiln__shape *const *shapes, const kiln_tensor *const *ins, size_t nins,
              size_t n, size_t lse_at, kiln_dtype lse_dt, kiln__out_target *t)
{
  for (size_t i = 0; i < n; i++) {
    memset(&t[i], 0, sizeof t[i]);
    if (!outs[i])
      continue;
    kiln_status s = kiln__ops_out_begin(op, ctx, i == lse_at ? lse_dt : dt, shapes[i], outs[i],
                                        ins, nins, 0, &t[i]);
    if (s != KILN_OK) {
      kiln__ctx_lock(ctx);
      for (size_t j = 0; j < i; j++)
        if (outs[j])
          kiln__ops_out_finish(op, ctx, &t[j], s);
      kiln__ctx_unlock(ctx);
      return s;
    }
  }
  return KILN_OK;
}

static kiln_status
finish_targets(const char *op, kiln_context *ctx, kiln_tensor **const *outs, size_t n,
               kiln__out_target *t, kiln_status s)
{
  for (size_t i = 0; i < n; i++)
    if (outs[i])
      s = kiln__ops_out_finish(op, ctx, &t[i], s);
  return s;
}

/* The tuner's key of a call: its score entries times the head dimension (m*n*k of Q K^T). */
static uint64_t
att_key(const att_geo *g)
{
  uint64_t d = g->D > g->Dv ? g->D : g->Dv, key = g->BH * g->Sq;
  key = g->Sk && key > UINT64_MAX / g->Sk ? UINT64_MAX : key * g->Sk;
  key = key > UINT64_MAX / d ? UINT64_MAX : key * d;
  return key ? key : 1;
}

/* forced: a tile of att_tiles (the tuner's candidate), or -1 to look it up. */
int kiln__nnt_att_flash;

/* Scores of one head of the CPU forward at most, and of a chunk of heads (bytes). */
#define ATT_CPU_HEAD_MAX ((uint64_t)256 << 20)
#define ATT_CPU_CHUNK ((uint64_t)64 << 20)
/* The fewest query rows in a block of the causal CPU products (att_cpu_qblock). */
#define ATT_CPU_QB_MIN 32

/* Whether the forward runs as att_forward_gemm: CPU devices, f32 and f64, kiln's CPU GEMM,
 * keys to attend to, a head's scores within ATT_CPU_HEAD_MAX; not for the tuner's timings of
 * the flash tiles (forced) nor with the test hook kiln__nnt_att_flash. */
static int
att_cpu_form(kiln_context *ctx, const att_geo *g, kiln_dtype dt, int forced)
{
  return !ctx->info.is_gpu && forced < 0 && !kiln__nnt_att_flash &&
         (dt == KILN_F32 || dt == KILN_F64) && kiln__gemm_cpu_form(ctx) &&
         kiln__gemm_large_ok(ctx, dt) && g->Sk > 0 &&
         g->Sq * g->Sk * kiln_dtype_size(dt) <= ATT_CPU_HEAD_MAX;
}

/*
 * Query rows per block of the CPU forms' causal products (top-left causal: query i sees keys
 * j <= i). The scores are computed under the GEMM's lower triangle (tri 1, blocks wholly above
 * it skipped); the products over keys (p v, ds k) run per block of queries [r0, r1) against
 * keys [0, min(Sk, r1)), and those over queries (p^T dout, ds^T q) per block of keys [c0, c1)
 * against queries [c0, Sq): about (nb + 1) / (2 nb) of the full products for nb blocks. Rows
 * past a row's visible keys up to its block's end hold zeros (the row kernels' zb). Without
 * causal, or with too few queries to split, one block (the full products).
 */
static uint64_t
att_cpu_qblock(const att_geo *g, int causal)
{
  uint64_t all = g->Sq > g->Sk ? g->Sq : g->Sk;
  if (!causal || g->Sq < 4 * ATT_CPU_QB_MIN)
    return all;
  uint64_t qb = (g->Sq + 7) / 8;
  qb = (qb + 15) / 16 * 16;
  return qb < ATT_CPU_QB_MIN ? ATT_CPU_QB_MIN : qb;
}

/*
 * The forward on CPU devices (ctx->lock held): for chunks of heads, the scaled scores q k^T
 * by kiln's CPU GEMM into a temporary, att_rows_cpu turning them into probabilities (mask,
 * causal keys, lse), and out = p v by the same GEMM. The flash kernel's tiles and barriers ran
 * at a tenth of PyTorch's speed on PoCL; the GEMM runs near the machine's peak.
 */
static kiln_status
att_forward_gemm(const char *op, kiln_context *ctx, const att_geo *g, const kiln_tensor *q,
                 const kiln_tensor *k, const kiln_tensor *v, const kiln_tensor *mask, int causal,
                 const char *options, kiln_tensor *out, kiln_tensor *lt)
{
  kiln_dtype dt = q->dtype;
  uint64_t head = g->Sq * g->Sk, esz = kiln_dtype_size(dt);
  uint64_t nb = ATT_CPU_CHUNK / (head * esz);
  nb = nb < 1 ? 1 : nb > g->BH ? g->BH : nb;
  cl_kernel kr;
  KILN_TRY(kiln__kernel_get(op, ctx, KILN__NNT_ATT, options, "att_rows_cpu", &kr));
  kiln__ops_tmp sc;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, nb * head * esz, &sc));
  uint64_t qo = kiln__ops_elem_offset(q), ko = kiln__ops_elem_offset(k);
  uint64_t vo = kiln__ops_elem_offset(v), oo = kiln__ops_elem_offset(out);
  kiln_status s = KILN_OK;
  const uint64_t qb = att_cpu_qblock(g, causal), Sq = g->Sq, Sk = g->Sk, D = g->D, Dv = g->Dv;
  for (uint64_t b0 = 0; s == KILN_OK && b0 < g->BH; b0 += nb) {
    uint64_t m = g->BH - b0 < nb ? g->BH - b0 : nb;
    s = kiln__gemm_large_views(op, ctx, dt, 0, 1, Sq, Sk, D, g->scale, q->mem, qo + b0 * Sq * D, D,
                               k->mem, ko + b0 * Sk * D, D, 0.0, sc.mem, 0, Sk, causal ? 1 : 0, m,
                               Sq * D, Sk * D, head);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kr);
      kiln__args_mem(&a, sc.mem);
      kiln__args_tensor(&a, mask);
      kiln__args_u64(&a, g->mstride);
      kiln__args_tensor(&a, lt);
      kiln__args_u64(&a, b0);
      kiln__args_u64(&a, m);
      kiln__args_u64(&a, Sq);
      kiln__args_u64(&a, Sk);
      kiln__args_u32(&a, (causal ? ATT_CAUSAL : 0) | (mask ? ATT_MASK : 0));
      kiln__args_u64(&a, qb);
      s = kiln__args_launch_1d(&a, ctx, m * Sq, 0);
    }
    for (uint64_t r0 = 0; s == KILN_OK && r0 < Sq; r0 += qb) {
      uint64_t r1 = Sq - r0 < qb ? Sq : r0 + qb, kv = causal && r1 < Sk ? r1 : Sk;
      s = kiln__gemm_large_views(op, ctx, dt, 0, 0, r1 - r0, Dv, kv, 1.0, sc.mem, r0 * Sk, Sk,
                                 v->mem, vo + b0 * Sk * Dv, Dv, 0.0, out->mem,
                                 oo + (b0 * Sq + r0) * Dv, Dv, 0, m, head, Sk * Dv, Sq * Dv);
    }
  }
  kiln__ops_tmp_free(ctx, &sc);
  return s;
}

/* Zeroes rows [c0, c1) of the [rows, width] matrices b0 .. b0 + m - 1 of t (NULL: nothing),
 * the gradients of keys no query sees (ctx->lock held). */
static kiln_status
zero_rows(const char *op, kiln_context *ctx, kiln_tensor *t, uint64_t b0, uint64_t m, uint64_t rows,
          uint64_t width, uint64_t c0, uint64_t c1)
{
  size_t esz = kiln_dtype_size(t ? t->dtype : KILN_F32);
  for (uint64_t b = b0; t && b < b0 + m; b++) {
    const uint64_t zero = 0;
    cl_int err = clEnqueueFillBuffer(ctx->queue, t->mem, &zero, esz,
                                     t->offset + ((b * rows + c0) * width) * esz,
                                     (c1 - c0) * width * esz, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return kiln__fail_cl(op, err, "clEnqueueFillBuffer");
  }
  return KILN_OK;
}

/*
 * The backward pass on CPU devices (ctx->lock held; Sq and Sk > 0), FlashAttention-2's
 * products as GEMMs over chunks of heads: s = q k^T scale and dp = dout v^T, then
 * att_bwd_rows_cpu (p = exp(s + mask - lse), ds = scale p (dp - delta)), then the wanted
 * gradients dv = p^T dout, dq = ds k, dk = ds^T q (dq, dk, dv NULL: not wanted).
 */
static kiln_status
att_backward_gemm(const char *op, kiln_context *ctx, const att_geo *g, const kiln_tensor *q,
                  const kiln_tensor *k, const kiln_tensor *v, const kiln_tensor *mask, int causal,
                  const kiln_tensor *dout, const kiln_tensor *lse, cl_mem delta,
                  const char *options, kiln_tensor *dq, kiln_tensor *dk, kiln_tensor *dv)
{
  kiln_dtype dt = q->dtype;
  uint64_t head = g->Sq * g->Sk, esz = kiln_dtype_size(dt);
  uint64_t nb = ATT_CPU_CHUNK / (2 * head * esz);
  nb = nb < 1 ? 1 : nb > g->BH ? g->BH : nb;
  cl_kernel kr;
  KILN_TRY(kiln__kernel_get(op, ctx, KILN__NNT_ATT, options, "att_bwd_rows_cpu", &kr));
  kiln__ops_tmp ps, ds;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, nb * head * esz, &ps));
  kiln_status s = kiln__ops_tmp_alloc(ctx, nb * head * esz, &ds);
  if (s != KILN_OK) {
    kiln__ops_tmp_free(ctx, &ps);
    return s;
  }
  uint64_t qo = kiln__ops_elem_offset(q), ko = kiln__ops_elem_offset(k);
  uint64_t vo = kiln__ops_elem_offset(v), go = kiln__ops_elem_offset(dout);
  const uint64_t Sq = g->Sq, Sk = g->Sk, D = g->D, Dv = g->Dv, qb = att_cpu_qblock(g, causal);
  const uint32_t tri = causal ? 1 : 0;
  for (uint64_t b0 = 0; s == KILN_OK && b0 < g->BH; b0 += nb) {
    uint64_t m = g->BH - b0 < nb ? g->BH - b0 : nb;
    s = kiln__gemm_large_views(op, ctx, dt, 0, 1, Sq, Sk, D, g->scale, q->mem, qo + b0 * Sq * D, D,
                               k->mem, ko + b0 * Sk * D, D, 0.0, ps.mem, 0, Sk, tri, m, Sq * D,
                               Sk * D, head);
    if (s == KILN_OK)
      s = kiln__gemm_large_views(op, ctx, dt, 0, 1, Sq, Sk, Dv, 1.0, dout->mem, go + b0 * Sq * Dv,
                                 Dv, v->mem, vo + b0 * Sk * Dv, Dv, 0.0, ds.mem, 0, Sk, tri, m,
                                 Sq * Dv, Sk * Dv, head);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kr);
      kiln__args_mem(&a, ps.mem);
      kiln__args_mem(&a, ds.mem);
      kiln__args_tensor(&a, mask);
      kiln__args_u64(&a, g->mstride);
      kiln__args_tensor(&a, lse);
      kiln__args_mem(&a, delta);
      kiln__args_u64(&a, b0);
      kiln__args_u64(&a, m);
      kiln__args_u64(&a, Sq);
      kiln__args_u64(&a, Sk);
      kiln__args_float(&a, dt, g->scale);
      kiln__args_u32(&a, (causal ? ATT_CAUSAL : 0) | (mask ? ATT_MASK : 0));
      kiln__args_u64(&a, qb);
      s = kiln__args_launch_1d(&a, ctx, m * Sq, 0);
    }
    /* dv and dk per block of keys [c0, c1), over the queries that see them ([c0, Sq) when
     * causal; keys no query sees get zeros), dq per block of queries over their keys. */
    for (uint64_t c0 = 0; s == KILN_OK && (dv || dk) && c0 < Sk; c0 += qb) {
      uint64_t c1 = Sk - c0 < qb ? Sk : c0 + qb, i0 = causal ? c0 : 0;
      if (i0 >= Sq) {
        s = zero_rows(op, ctx, dv, b0, m, Sk, Dv, c0, Sk);
        if (s == KILN_OK)
          s = zero_rows(op, ctx, dk, b0, m, Sk, D, c0, Sk);
        break;
      }
      if (dv)
        s = kiln__gemm_large_views(op, ctx, dt, 1, 0, c1 - c0, Dv, Sq - i0, 1.0, ps.mem,
                                   i0 * Sk + c0, Sk, dout->mem, go + (b0 * Sq + i0) * Dv, Dv, 0.0,
                                   dv->mem, kiln__ops_elem_offset(dv) + (b0 * Sk + c0) * Dv, Dv, 0,
                                   m, head, Sq * Dv, Sk * Dv);
      if (s == KILN_OK && dk)
        s = kiln__gemm_large_views(op, ctx, dt, 1, 0, c1 - c0, D, Sq - i0, 1.0, ds.mem,
                                   i0 * Sk + c0, Sk, q->mem, qo + (b0 * Sq + i0) * D, D, 0.0,
                                   dk->mem, kiln__ops_elem_offset(dk) + (b0 * Sk + c0) * D, D, 0, m,
                                   head, Sq * D, Sk * D);
    }
    for (uint64_t r0 = 0; s == KILN_OK && dq && r0 < Sq; r0 += qb) {
      uint64_t r1 = Sq - r0 < qb ? Sq : r0 + qb, kv = causal && r1 < Sk ? r1 : Sk;
      s = kiln__gemm_large_views(op, ctx, dt, 0, 0, r1 - r0, D, kv, 1.0, ds.mem, r0 * Sk, Sk,
                                 k->mem, ko + b0 * Sk * D, D, 0.0, dq->mem,
                                 kiln__ops_elem_offset(dq) + (b0 * Sq + r0) * D, D, 0, m, head,
                                 Sk * D, Sq * D);
    }
  }
  kiln__ops_tmp_free(ctx, &ds);
  kiln__ops_tmp_free(ctx, &ps);
  return s;
}

static kiln_status
att_forward(kiln_context *ctx, const kiln_tensor *q, const kiln_tensor *k, const kiln_tensor *v,
            const kiln_tensor *mask, int causal, double scale, int forced, kiln_tensor **out,
            kiln_tensor **lse)
{
  static const char op[] = "kiln_attention";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  att_geo g;
  KILN_TRY(att_geometry(op, ctx, q, k, v, mask, scale, &g));
  kiln_dtype dt = q->dtype;
  att_params_t want = {forced >= 0 ? (uint32_t)forced : 0, 0};
  if (forced < 0)
    kiln__tune_lookup(ctx, &kiln__attention_tune, dt, KILN__LAYOUT_MNK, att_key(&g), &want);
  att_variant var;
  var.tile = att_effective_tile(&ctx->info, dt, g.D, g.Dv, want.tile);
  /* The rule's backward table, whatever "bwd" says: the forward's program stays the same. */
  var.bwd = att_bwd_effective(&ctx->info, dt, 0);
  KILN_RETURN_IF(var.tile == 0, KILN_ERR_UNSUPPORTED, op,
                 "no attention tile fits this device (%llu bytes of local memory, work-groups of "
                 "%zu items)",
                 (unsigned long long)ctx->info.local_mem_bytes, ctx->info.max_work_group_size);
  const att_tile *tile = &att_tiles[var.tile];
  var.dh = att_dh(&ctx->info, tile, g.D, g.Dv);
  uint64_t groups = 0;
  KILN_TRY(group_count(op, g.BH, g.Sq, tile->bq, &groups));
  kiln_tensor **outs[2] = {out, lse};
  static const char *const names[2] = {"out", "lse"};
  KILN_TRY(check_outs(op, ctx, outs, names, 2));
  const kiln__shape *shapes[2] = {&g.oshape, &g.lshape};
  const kiln_tensor *ins[4] = {q, k, v, mask};
  kiln__out_target t[2];
  kiln_dtype ldt = kiln__nn_compute_dtype(dt);
  KILN_TRY(begin_targets(op, ctx, dt, outs, shapes, ins, 4, 2, 1, ldt, t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  kiln_tensor *lt = NULL;
  if (groups) {
    if (lse)
      lt = t[1].dst;
    else
      s = kiln__ops_scratch(op, ctx, ldt, g.BH * g.Sq, &lt);
    char options[256];
    kiln__program_options(&ctx->info, KILN__NNT_ATT, dt, &var, options, sizeof options);
    cl_kernel kk;
    int cpu = att_cpu_form(ctx, &g, dt, forced);
    if (s == KILN_OK && cpu)
      s = att_forward_gemm(op, ctx, &g, q, k, v, mask, causal, options, t[0].dst, lt);
    else if (s == KILN_OK)
      s = kiln__kernel_get(op, ctx, KILN__NNT_ATT, options, "att_fwd", &kk);
    if (s == KILN_OK && !cpu) {
      kiln__args a = kiln__args_begin(op, kk);
      att_args_qkvm(&a, q, k, v, mask);
      kiln__args_tensor(&a, t[0].dst);
      kiln__args_tensor(&a, lt);
      /* 4-vector loads need 4-element aligned rows (buffers themselves are aligned). */
      int vec = g.D % 4 == 0 && g.Dv % 4 == 0 && kiln__ops_elem_offset(q) % 4 == 0 &&
                kiln__ops_elem_offset(k) % 4 == 0 && kiln__ops_elem_offset(v) % 4 == 0;
      att_args_geo(&a, &g, dt,
                   (causal ? ATT_CAUSAL : 0) | (mask ? ATT_MASK : 0) | (vec ? ATT_VEC : 0));
      size_t local = (size_t)(tile->bq / tile->tm) * (tile->bk / tile->tn);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)groups * local, local);
    }
    if (!lse)
      kiln_tensor_release(lt);
  }
  s = finish_targets(op, ctx, outs, 2, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_attention(kiln_context *ctx, const kiln_tensor *q, const kiln_tensor *k,
               const kiln_tensor *v, const kiln_tensor *mask, int causal, double scale,
               kiln_tensor **out, kiln_tensor **lse)
{
  return att_forward(ctx, q, k, v, mask, causal, scale, -1, out, lse);
}

kiln_status
kiln_attention_backward(kiln_context *ctx, const kiln_tensor *grad_out, const kiln_tensor *q,
                        const kiln_tensor *k, const kiln_tensor *v, const kiln_tensor *mask,
                        int causal, double scale, const kiln_tensor *out, const kiln_tensor *lse,
                        kiln_tensor **grad_q, kiln_tensor **grad_k, kiln_tensor **grad_v)
{
  static const char op[] = "kiln_attention_backward";
  KILN_TRY(kiln__ctx_check(op, ctx));
  att_geo g;
  KILN_TRY(att_geometry(op, ctx, q, k, v, mask, scale, &g));
  kiln_dtype dt = q->dtype;
  char a1[128], a2[128];
  const kiln_tensor *chk[3] = {grad_out, out, lse};
  static const char *const cn[3] = {"grad_out", "out", "lse"};
  const kiln__shape *cs[3] = {&g.oshape, &g.oshape, &g.lshape};
  kiln_dtype cdt = kiln__nn_compute_dtype(dt);
  for (int i = 0; i < 3; i++) {
    KILN_RETURN_IF(!chk[i], KILN_ERR_INVALID_HANDLE, op, "%s is NULL", cn[i]);
    KILN_TRY(kiln__tensor_check(op, chk[i], ctx));
    kiln_dtype want = i == 2 ? cdt : dt;
    KILN_RETURN_IF(chk[i]->dtype != want, KILN_ERR_DTYPE, op, "%s is %s, expected %s", cn[i],
                   kiln_dtype_name(chk[i]->dtype), kiln_dtype_name(want));
    KILN_RETURN_IF(!kiln__shape_equal(&chk[i]->shape, cs[i]), KILN_ERR_SHAPE, op,
                   "%s has shape %s, expected %s", cn[i],
                   kiln__shape_format(&chk[i]->shape, a1, sizeof a1),
                   kiln__shape_format(cs[i], a2, sizeof a2));
  }
  att_params_t want = {0, 0};
  kiln__tune_lookup(ctx, &kiln__attention_tune, dt, KILN__LAYOUT_MNK, att_key(&g), &want);
  /* The backward kernels live in the program of the rule's tile at head 128. */
  att_variant var = {att_rule_tile(&ctx->info, dt, ATT_DMAX, ATT_DMAX), ATT_DMAX,
                     att_bwd_effective(&ctx->info, dt, want.bwd)};
  KILN_RETURN_IF(var.tile == 0, KILN_ERR_UNSUPPORTED, op,
                 "no attention tile fits this device (%llu bytes of local memory, work-groups of "
                 "%zu items)",
                 (unsigned long long)ctx->info.local_mem_bytes, ctx->info.max_work_group_size);
  char options[256];
  kiln__program_options(&ctx->info, KILN__NNT_ATT, dt, &var, options, sizeof options);
  const att_bwd_table *bt = att_bwd_table_of(dt, var.bwd);
  uint64_t gq = 0, gk = 0, gp = 0;
  KILN_TRY(group_count(op, g.BH, g.Sq, bt->q_queries, &gq));
  KILN_TRY(group_count(op, g.BH, g.Sk, bt->kv_keys, &gk));
  KILN_TRY(group_count(op, 1, g.BH * g.Sq, ATT_PRE_ROWS, &gp));
  size_t lkv = att_bwd_kv_items(bt), lq = att_bwd_q_items(bt);
  KILN_RETURN_IF(lkv > ctx->info.max_work_group_size || lq > ctx->info.max_work_group_size ||
                     ctx->info.max_work_group_size < 256,
                 KILN_ERR_UNSUPPORTED, op,
                 "the backward kernels need work-groups of %zu and 256 items; the device allows "
                 "%zu",
                 lkv > lq ? lkv : lq, ctx->info.max_work_group_size);
  kiln_tensor **outs[3] = {grad_q, grad_k, grad_v};
  static const char *const names[3] = {"grad_q", "grad_k", "grad_v"};
  KILN_TRY(check_outs(op, ctx, outs, names, 3));
  const kiln__shape *shapes[3] = {&q->shape, &k->shape, &v->shape};
  const kiln_tensor *ins[7] = {grad_out, q, k, v, mask, out, lse};
  kiln__out_target t[3];
  KILN_TRY(begin_targets(op, ctx, dt, outs, shapes, ins, 7, 3, 3, dt, t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  /* 4-vector loads need 4-element aligned rows (buffers themselves are aligned). */
  int vec = g.D % 4 == 0 && g.Dv % 4 == 0 && kiln__ops_elem_offset(q) % 4 == 0 &&
            kiln__ops_elem_offset(k) % 4 == 0 && kiln__ops_elem_offset(v) % 4 == 0 &&
            kiln__ops_elem_offset(grad_out) % 4 == 0;
  uint32_t flags = (causal ? ATT_CAUSAL : 0) | (mask ? ATT_MASK : 0) | (vec ? ATT_VEC : 0);
  /* Table 7: att_bwd_dkdv adds dQ to an f32 accumulator (zeroed here), which
   * att_bwd_dq_store then writes out; dkdv runs whenever a gradient is wanted. */
  int fused = bt->fused && grad_q;
  kiln__ops_tmp delta = {0}, dqacc = {0};
  uint64_t rows = g.BH * g.Sq;
  if (rows && (grad_q || ((grad_k || grad_v) && g.Sk))) {
    s = kiln__ops_tmp_alloc(ctx, rows * kiln_dtype_size(cdt), &delta);
    cl_kernel kk;
    if (s == KILN_OK)
      s = kiln__kernel_get(op, ctx, KILN__NNT_ATT, options, "att_bwd_pre", &kk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kk);
      kiln__args_tensor(&a, grad_out);
      kiln__args_tensor(&a, out);
      kiln__args_mem(&a, delta.mem);
      kiln__args_u64(&a, rows);
      kiln__args_u64(&a, g.Dv);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)gp * 256, 256);
    }
  }
  /* CPU devices: GEMMs over the recomputed probabilities (att_backward_gemm), else the flash
   * kernels below. */
  int flash = !(rows && (grad_q || grad_k || grad_v) && att_cpu_form(ctx, &g, dt, -1));
  if (s == KILN_OK && !flash)
    s = att_backward_gemm(op, ctx, &g, q, k, v, mask, causal, grad_out, lse, delta.mem, options,
                          grad_q ? t[0].dst : NULL, grad_k ? t[1].dst : NULL,
                          grad_v ? t[2].dst : NULL);
  fused = fused && flash;
  if (s == KILN_OK && fused) {
    uint64_t n = g.BH * g.Sq * g.D;
    s = kiln__ops_tmp_alloc(ctx, n * sizeof(float), &dqacc);
    float zero = 0;
    cl_int err = s == KILN_OK && n ? clEnqueueFillBuffer(ctx->queue, dqacc.mem, &zero, sizeof zero,
                                                         0, n * sizeof zero, 0, NULL, NULL)
                                   : CL_SUCCESS;
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(op, err, "clEnqueueFillBuffer");
  }
  if (s == KILN_OK && flash && (grad_k || grad_v || fused) && gk) {
    /* dk and dv come from one kernel; an unwanted one goes to a scratch tensor. */
    kiln_tensor *dk = grad_k ? t[1].dst : NULL, *dv = grad_v ? t[2].dst : NULL;
    kiln_tensor *mk = NULL, *mv = NULL;
    if (!dk)
      s = kiln__ops_scratch(op, ctx, dt, k->numel, &mk), dk = mk;
    if (s == KILN_OK && !dv)
      s = kiln__ops_scratch(op, ctx, dt, v->numel, &mv), dv = mv;
    cl_kernel kk;
    if (s == KILN_OK)
      s = kiln__kernel_get(op, ctx, KILN__NNT_ATT, options, "att_bwd_dkdv", &kk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kk);
      att_args_qkvm(&a, q, k, v, mask);
      kiln__args_tensor(&a, grad_out);
      kiln__args_tensor(&a, lse);
      kiln__args_mem(&a, delta.mem);
      kiln__args_tensor(&a, dk);
      kiln__args_tensor(&a, dv);
      kiln__args_mem(&a, fused ? dqacc.mem : delta.mem);
      att_args_geo(&a, &g, dt, flags | (fused ? ATT_DQF : 0));
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)gk * lkv, lkv);
    }
    kiln_tensor_release(mk);
    kiln_tensor_release(mv);
  }
  if (s == KILN_OK && fused && g.BH * g.Sq != 0) {
    cl_kernel kk;
    s = kiln__kernel_get(op, ctx, KILN__NNT_ATT, options, "att_bwd_dq_store", &kk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kk);
      kiln__args_mem(&a, dqacc.mem);
      kiln__args_tensor(&a, t[0].dst);
      kiln__args_u64(&a, g.BH * g.Sq * g.D);
      s = kiln__args_launch_1d(&a, ctx, g.BH * g.Sq * g.D, 0);
    }
  } else if (s == KILN_OK && flash && grad_q && gq) {
    cl_kernel kk;
    s = kiln__kernel_get(op, ctx, KILN__NNT_ATT, options, "att_bwd_dq", &kk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kk);
      att_args_qkvm(&a, q, k, v, mask);
      kiln__args_tensor(&a, grad_out);
      kiln__args_tensor(&a, lse);
      kiln__args_mem(&a, delta.mem);
      kiln__args_tensor(&a, t[0].dst);
      att_args_geo(&a, &g, dt, flags);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)gq * lq, lq);
    }
  }
  if (delta.mem)
    kiln__ops_tmp_free(ctx, &delta);
  if (dqacc.mem)
    kiln__ops_tmp_free(ctx, &dqacc);
  s = finish_targets(op, ctx, outs, 3, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- the attention tuner family */

#define N_(a) (sizeof(a) / sizeof((a)[0]))

static const uint64_t att_tile_full[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const uint64_t att_tile_quick[] = {2, 6, 7, 8, 10, 11};
/* The tuner times the forward pass: it keeps the backward's rule; overrides pick the rest. */
static const uint64_t att_bwd_list[] = {0};

static const struct kiln__tune_param att_params[] = {
    {.name = "tile",
     .offset = offsetof(att_params_t, tile),
     .size = sizeof(uint32_t),
     .min = 0,
     .max = ATT_NTILES - 1,
     .full = att_tile_full,
     .nfull = N_(att_tile_full),
     .quick = att_tile_quick,
     .nquick = N_(att_tile_quick)},
    {.name = "bwd",
     .offset = offsetof(att_params_t, bwd),
     .size = sizeof(uint32_t),
     .min = 0,
     .max = ATT_NBWD - 1,
     .full = att_bwd_list,
     .nfull = N_(att_bwd_list),
     .quick = att_bwd_list,
     .nquick = N_(att_bwd_list)},
};

/* Up to B H S S D = 2^38 (batch 8 x 16 heads, 4096 tokens, head 128: the bench row). */
static const uint64_t att_sizes[] = {(uint64_t)1 << 26, (uint64_t)1 << 30, (uint64_t)1 << 34,
                                     (uint64_t)1 << 38};

static int
att_dtype_ok(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

static void
att_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  (void)ctx;
  (void)dtype;
  (void)layout;
  memset(params, 0, sizeof(att_params_t));
}

/* Head 128 and [BH, S, 128] inputs with BH S^2 128 = 2^k: S = 2^floor((k - 7) / 2) up to
 * 4096, the rest in BH (k and v are one tensor: ninputs is 2). */
static kiln_status
att_tune_setup(struct kiln__tune_problem *pb)
{
  int e = pb->k > 7 ? pb->k - 7 : 0, se = e / 2 < 12 ? e / 2 : 12;
  int64_t S = (int64_t)1 << se, BH = (int64_t)1 << (e - 2 * se);
  int64_t shape[3] = {BH, S, 128};
  pb->ndim = 2;
  pb->shape[0] = BH * S;
  pb->shape[1] = 128;
  snprintf(pb->desc, sizeof pb->desc, "[%lld,%lld,128]", (long long)BH, (long long)S);
  kiln_status s = kiln__tune_input(pb->ctx, pb->dtype, 3, shape, 12345u, &pb->in[0]);
  if (s == KILN_OK)
    s = kiln__tune_input(pb->ctx, pb->dtype, 3, shape, 12345u + 7919u, &pb->in[1]);
  return s;
}

static kiln_status
att_tune_run(struct kiln__tune_problem *pb, const void *params)
{
  return att_forward(pb->ctx, pb->in[0], pb->in[1], pb->in[1], NULL, 0, 0,
                     (int)((const att_params_t *)params)->tile, &pb->out, NULL);
}

/* Two candidates that become the same tile on pb's problem run the same code. */
static int
att_same_run(const struct kiln__tune_problem *pb, const void *a, const void *b)
{
  const kiln_device_info *info = &pb->ctx->info;
  return att_effective_tile(info, pb->dtype, 128, 128, ((const att_params_t *)a)->tile) ==
         att_effective_tile(info, pb->dtype, 128, 128, ((const att_params_t *)b)->tile);
}

static double
att_tune_bytes(const struct kiln__tune_problem *pb)
{
  return (double)(2 * kiln_tensor_nbytes(pb->in[0]) + kiln_tensor_nbytes(pb->in[1]) +
                  kiln_tensor_nbytes(pb->out));
}

const struct kiln__tune_family kiln__attention_tune = {
    .name = "attention",
    .description = "tile of the flash attention forward kernel, timed on [BH, S, 128] "
                   "self-attention",
    .params_size = sizeof(att_params_t),
    .params = att_params,
    .nparams = N_(att_params),
    .layouts = 1u << KILN__LAYOUT_MNK,
    .layout_names = "mnk",
    .ninputs = 2,
    .float_sum = 1,
    .dtype_ok = att_dtype_ok,
    .defaults = att_defaults,
    .run = att_tune_run,
    .bytes = att_tune_bytes,
    .setup = att_tune_setup,
    .same_run = att_same_run,
    .sizes = att_sizes,
    .nsizes = N_(att_sizes),
};

/* ---------------------------------------------------------------- RoPE */

static kiln_status
rope_run(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *c,
         const kiln_tensor *sn, kiln_rope_layout layout, int inv, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__nnt_check_real(op, ctx, x, inv ? "grad" : "x"));
  KILN_RETURN_IF(layout != KILN_ROPE_INTERLEAVED && layout != KILN_ROPE_HALF,
                 KILN_ERR_INVALID_ARGUMENT, op, "unknown layout %d", (int)layout);
  char a[128], b[128];
  KILN_RETURN_IF(x->shape.ndim < 2, KILN_ERR_SHAPE, op, "x has shape %s, expected [..., S, D]",
                 kiln__shape_format(&x->shape, a, sizeof a));
  KILN_RETURN_IF(!c || !sn, KILN_ERR_INVALID_HANDLE, op, "cos or sin is NULL");
  KILN_TRY(kiln__nnt_check_like(op, ctx, sn, c, "sin"));
  KILN_RETURN_IF(c->dtype != x->dtype, KILN_ERR_DTYPE, op, "cos is %s, expected %s",
                 kiln_dtype_name(c->dtype), kiln_dtype_name(x->dtype));
  uint64_t S = (uint64_t)x->shape.dims[x->shape.ndim - 2];
  uint64_t D = (uint64_t)x->shape.dims[x->shape.ndim - 1];
  KILN_RETURN_IF(c->shape.ndim != 2 || (uint64_t)c->shape.dims[0] != S ||
                     2 * (uint64_t)c->shape.dims[1] > D,
                 KILN_ERR_SHAPE, op, "cos has shape %s; x %s needs [S, R/2] with R <= D",
                 kiln__shape_format(&c->shape, a, sizeof a),
                 kiln__shape_format(&x->shape, b, sizeof b));
  uint64_t R = 2 * (uint64_t)c->shape.dims[1];
  const kiln_tensor *ins[3] = {x, c, sn};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, out, ins, 3, 1, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (x->numel) {
    cl_kernel kk;
    s = kiln__ops_kernel(op, ctx, KILN__NNT_ATT, x->dtype, "rope", &kk);
    if (s == KILN_OK) {
      uint64_t rows = x->numel / D;
      kiln__args ar = kiln__args_begin(op, kk);
      kiln__args_tensor(&ar, x);
      kiln__args_tensor(&ar, c);
      kiln__args_tensor(&ar, sn);
      kiln__args_tensor(&ar, t.dst);
      kiln__args_u64(&ar, rows);
      kiln__args_u64(&ar, S);
      kiln__args_u64(&ar, D);
      kiln__args_u64(&ar, R);
      kiln__args_u32(&ar, (layout == KILN_ROPE_HALF ? ROPE_HALF : 0) | (inv ? ROPE_INV : 0));
      s = kiln__args_launch_1d(&ar, ctx, rows * (R / 2 + D - R), 0);
    }
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_rope(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *cos_table,
          const kiln_tensor *sin_table, kiln_rope_layout layout, kiln_tensor **out)
{
  return rope_run("kiln_rope", ctx, x, cos_table, sin_table, layout, 0, out);
}

kiln_status
kiln_rope_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *cos_table,
                   const kiln_tensor *sin_table, kiln_rope_layout layout, kiln_tensor **grad_in)
{
  return rope_run("kiln_rope_backward", ctx, grad, cos_table, sin_table, layout, 1, grad_in);
}
