/*
 * Scan family: kiln_scan, kiln_scan_indexed, kiln_diff. Kernels in cl_kernels/scan.cl;
 * the strategy (one item per line, or tiled work-group scans, each optionally split into
 * chunks with a totals pass and a fixup) is chosen here; docs/reductions.md describes it.
 */
#include <stdio.h>
#include <string.h>

#include "cl_kernels/scan_contract.clh"
#include "core/axes.h"
#include "core/dtype_traits.h"
#include "core/error.h"
#include "kiln/scan.h"
#include "ops/families.h"
#include "ops/launch_params.h"
#include "ops/ops_common.h"
#include "ops/tuned.h"
#include "runtime/runtime.h"

enum result_rule { RES_SAME, RES_WIDE };

struct scan_row {
  const char *name;
  enum kiln__dtype_class cls;
  enum result_rule res;
};

static const struct scan_row scan_rows[] = {
#define X(E, n, cls, res) {#n, KILN__CLASS_##cls, RES_##res},
    KILN_SCAN_OPS(X)
#undef X
};

const char *
kiln_scan_op_name(kiln_scan_op op)
{
  return (unsigned)op < KILN_SCAN_OP_COUNT ? scan_rows[op].name : "?";
}

/* Ops that take complex tensors (a bit per op). */
static const unsigned complex_ops = 0u
#define X(E) | 1u << KILN_SCAN_##E
    KILN_SCAN_COMPLEX_OPS(X)
#undef X
    ;

/* The dtypes scan.cl builds (its source row). */
#define SCAN_DTYPES (KILN__DT_CLASSIC | KILN__DT_HALVES | KILN__DT_COMPLEX)

int
kiln_scan_op_supports(kiln_scan_op op, kiln_dtype dtype)
{
  if ((unsigned)op >= KILN_SCAN_OP_COUNT || !kiln__dtype_valid(dtype))
    return 0;
  unsigned mask = kiln__dtype_class_mask(scan_rows[op].cls);
  if (complex_ops >> op & 1u)
    mask |= KILN__DT_COMPLEX;
  return (mask & SCAN_DTYPES & KILN__DT_BIT(dtype)) != 0;
}

static kiln_dtype
result_dtype(enum result_rule rule, kiln_dtype in)
{
  int keeps = kiln__dtype_is_floating(in) || kiln__dtype_is_complex(in);
  return rule == RES_WIDE && !keeps ? KILN_I64 : in;
}

static kiln_status
check_op_dtype(const char *op, kiln_scan_op sop, kiln_dtype dtype)
{
  KILN_RETURN_IF((unsigned)sop >= KILN_SCAN_OP_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown scan op %d", (int)sop);
  KILN_RETURN_IF(!kiln__dtype_valid(dtype), KILN_ERR_INVALID_ARGUMENT, op, "invalid dtype %d",
                 (int)dtype);
  KILN_RETURN_IF(kiln__dtype_is_complex(dtype) && !kiln_scan_op_supports(sop, dtype),
                 KILN_ERR_DTYPE, op,
                 "%s does not accept %s (complex tensors take cumsum and cumprod; complex "
                 "numbers have no order)",
                 scan_rows[sop].name, kiln_dtype_name(dtype));
  KILN_RETURN_IF(!kiln_scan_op_supports(sop, dtype), KILN_ERR_DTYPE, op,
                 "%s does not accept %s (accepts %s)", scan_rows[sop].name, kiln_dtype_name(dtype),
                 kiln__dtype_class_text(scan_rows[sop].cls));
  return KILN_OK;
}

kiln_status
kiln_scan_result_dtype(const kiln_context *ctx, kiln_scan_op sop, kiln_dtype in, kiln_dtype *out)
{
  static const char op[] = "kiln_scan_result_dtype";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_op_dtype(op, sop, in));
  *out = result_dtype(scan_rows[sop].res, in);
  return KILN_OK;
}

/* ---------------------------------------------------------------------------------- */

struct scan_call {
  const char *op;
  kiln_context *ctx;
  const kiln__launch_params *lp;
  const char *options;
  const char *name; /* op name in scan.cl */
  cl_uint flags;
  kiln_dtype out_dtype; /* of the values */
};

static kiln_status
get(struct scan_call *sc, const char *suffix, cl_kernel *k)
{
  char name[64];
  snprintf(name, sizeof name, "%s%s", sc->name, suffix);
  return kiln__kernel_get(sc->op, sc->ctx, "scan", sc->options, name, k);
}

/* Bytes of an element of dtype in the kernels' registers (f16 and bf16 compute in f32). */
static size_t
compute_bytes(kiln_dtype d)
{
  return kiln__dtype_is_half(d) ? 4 : kiln_dtype_size(d);
}

/*
 * Whether a work-group of NAME_lookback may wait for another one that started before it:
 * GPUs keep a started work-group running, CPU devices run each to completion. Other device
 * types (accelerators, custom) promise neither: they take the multi-pass path.
 */
static int
lookback_safe(kiln_context *ctx)
{
  cl_device_type t = 0;
  if (clGetDeviceInfo(ctx->device, CL_DEVICE_TYPE, sizeof t, &t, NULL) != CL_SUCCESS)
    return 0;
  return (t & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_CPU)) != 0;
}

/* The passes over the tile folds, by their arguments after pre: NAME_tilepre takes an offset
 * and a scan buffer, NAME_tileblk the buffer, NAME_tilefix neither. */
enum pre_pass { PRE_SCAN, PRE_BLOCKS, PRE_FIX };

/* Enqueues pass k over pre (from aoff, PRE_SCAN) in at most 2^20 groups of lp. */
static kiln_status
run_pre_pass(struct scan_call *sc, cl_kernel k, enum pre_pass pass, cl_mem pre, uint64_t aoff,
             uint64_t lines, uint64_t tpl, uint64_t groups, size_t lp, uint32_t e_host,
             size_t state)
{
  kiln__args a = kiln__args_begin(sc->op, k);
  kiln__args_mem(&a, pre);
  if (pass == PRE_SCAN)
    kiln__args_u64(&a, aoff);
  kiln__args_u64(&a, lines);
  kiln__args_u64(&a, tpl);
  kiln__args_u32(&a, e_host);
  kiln__args_u32(&a, sc->flags);
  if (pass != PRE_FIX)
    kiln__args_raw(&a, 2 * lp * state, NULL);
  groups = groups < (1u << 20) ? groups : (1u << 20);
  return kiln__args_enqueue_1d(&a, sc->ctx, groups * lp, lp);
}

/*
 * single_pass 3, the passes before NAME_lookback: allocates *pre, kagg (NAME_tileagg) folds
 * each of the lines * tpl tiles of local * E elements into it, then each line's folds become
 * exclusive prefixes: NAME_tilepre walks a line's blocks (SCAN_PRE_K folds per item) in one
 * work-group, or, for lines of more than one block, NAME_tileblk scans every block in a
 * work-group of its own, NAME_tilepre the blocks' folds, and NAME_tilefix combines those
 * into the blocks' tiles. e_host: E | state bytes << 8, as the kernels check it.
 * ctx->lock held.
 */
static kiln_status
run_tile_prefixes(struct scan_call *sc, cl_kernel kagg, const kiln_tensor *x, uint64_t lines,
                  uint64_t len, uint64_t tpl, size_t local, uint32_t e_host, size_t state,
                  kiln__ops_tmp *pre)
{
  kiln_context *ctx = sc->ctx;
  cl_kernel kpre, kblk, kfix;
  size_t lp, lb, lf;
  KILN_TRY(get(sc, "_tilepre", &kpre));
  KILN_TRY(get(sc, "_tileblk", &kblk));
  KILN_TRY(get(sc, "_tilefix", &kfix));
  /* GPUs: the widest groups the device takes, so that a line is few blocks (each a global
   * round trip and a group scan); CPU devices run a group on one core whatever its width,
   * and take wg_size. The block passes (NAME_tileblk, NAME_tilefix) share one width. */
  uint32_t want = ctx->info.is_gpu ? 1024 : sc->lp->wg_size;
  /* The group scan's local buffer at most a quarter of local memory: some drivers count a
   * kernel's local arguments from its last launch in CL_KERNEL_LOCAL_MEM_SIZE (oclgrind:
   * 1024 cummin states took all its 32 KiB, and the next call found none left). */
  uint64_t most = ctx->info.local_mem_bytes / (4 * 2 * state);
  if (most < want)
    want = most > 1 ? (uint32_t)most : 1;
  KILN_TRY(kiln__launch_local_size(sc->op, ctx, kpre, want, 2 * state, &lp));
  KILN_TRY(kiln__launch_local_size(sc->op, ctx, kblk, (uint32_t)lp, 2 * state, &lb));
  KILN_TRY(kiln__launch_local_size(sc->op, ctx, kfix, (uint32_t)lb, 0, &lf));
  lp = lf < lb ? lf : lb;
  uint64_t blk = (uint64_t)lp * SCAN_PRE_K, nblk = (tpl + blk - 1) / blk;
  /* Each line's run starts at a multiple of SCAN_PRE_K (16-byte accesses), the blocks' folds
   * after the tiles'. */
  uint64_t tplp = (tpl + SCAN_PRE_K - 1) / SCAN_PRE_K * SCAN_PRE_K;
  uint64_t nblkp = nblk > 1 ? (nblk + SCAN_PRE_K - 1) / SCAN_PRE_K * SCAN_PRE_K : 0;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, lines * (tplp + nblkp) * state, pre));
  /* Groups loop over the tiles: a grid of them all, at most 2^20 groups. */
  uint64_t total = lines * tpl, groups = total < (1u << 20) ? total : (1u << 20);
  kiln__args a = kiln__args_begin(sc->op, kagg);
  kiln__args_mem(&a, x->mem);
  kiln__args_u64(&a, kiln__ops_elem_offset(x));
  kiln__args_mem(&a, pre->mem);
  kiln__args_u64(&a, lines);
  kiln__args_u64(&a, len);
  kiln__args_u64(&a, tpl);
  kiln__args_u32(&a, e_host);
  kiln__args_u32(&a, sc->flags);
  kiln__args_raw(&a, 2 * local * state, NULL);
  KILN_TRY(kiln__args_enqueue_1d(&a, ctx, groups * local, local));
  cl_mem m = pre->mem;
  if (nblk == 1)
    return run_pre_pass(sc, kpre, PRE_SCAN, m, 0, lines, tpl, lines, lp, e_host, state);
  KILN_TRY(run_pre_pass(sc, kblk, PRE_BLOCKS, m, 0, lines, tpl, lines * nblk, lp, e_host, state));
  KILN_TRY(
      run_pre_pass(sc, kpre, PRE_SCAN, m, lines * tplp, lines, nblk, lines, lp, e_host, state));
  return run_pre_pass(sc, kfix, PRE_FIX, m, 0, lines, tpl, lines * (nblk - 1), lp, e_host, state);
}

/*
 * The single-pass scan of `lines` contiguous lines of len elements: NAME_lookback (tiles
 * chained by look-back), with sc->lp->single_pass == 2 NAME_chain (chunks of several
 * tiles chained, for lines longer than a tile; shorter ones take NAME_lookback, one tile
 * each, whatever the mode), with 3 NAME_lookback given each tile's prefix by
 * run_tile_prefixes. *done = 0 (and KILN_OK) where the device or the size rules it
 * out: the caller then takes the multi-pass path. ctx->lock held.
 */
static kiln_status
run_lookback(struct scan_call *sc, const kiln_tensor *x, uint64_t lines, uint64_t len,
             kiln_tensor *y, kiln_tensor *yi, int need_idx, int *done)
{
  KILN__ASSERT_LOCKED(sc->ctx);
  kiln_context *ctx = sc->ctx;
  const kiln__launch_params *lp = sc->lp;
  *done = 0;
  /* The rule of scan_contract.clh: SCAN_LB_BYTES of the wider of input and staged output. */
  size_t in = compute_bytes(x->dtype), out = compute_bytes(sc->out_dtype);
  size_t sb = in > out ? in : out, e = SCAN_LB_BYTES / sb;
  e = e < 1 ? 1 : e > SCAN_LB_MAX_E ? SCAN_LB_MAX_E : e;
  /* cummin/cummax carry (value, i64 index) pairs; the other states are the value. */
  size_t state = need_idx ? 16 : sb;
  /* Per item: two scan slots, a stage slot per element and its padding; 8 bytes more
   * cover the group's few shared scalars (ctl below, one prefix) for groups of 64 and up. */
  size_t per_item = 2 * state + (e + 1) * sb + 8;
  cl_kernel k;
  int chain = lp->single_pass == 2 && len > (uint64_t)lp->wg_size * e;
  KILN_TRY(get(sc, chain ? "_chain" : "_lookback", &k));
  /* Groups no wider than a line needs: a row of 1024 f32 is one tile of 64 items. */
  uint64_t need = (len + e - 1) / e, want = 1;
  while (want < need && want < lp->wg_size)
    want <<= 1;
  if (want > lp->wg_size)
    want = lp->wg_size;
  size_t local;
  KILN_TRY(kiln__launch_local_size(sc->op, ctx, k, (uint32_t)want, per_item, &local));
  /* single_pass 3: NAME_tileagg folds the same tiles, so its groups are as wide. */
  cl_kernel kagg = NULL;
  if (lp->single_pass == 3 && len > local * e) {
    size_t la;
    KILN_TRY(get(sc, "_tileagg", &kagg));
    KILN_TRY(kiln__launch_local_size(sc->op, ctx, kagg, (uint32_t)local, 2 * state + 8, &la));
    local = la < local ? la : local;
  }
  /* Units chained by look-back: tiles, or chunks of `sub` tiles (items_per_thread
   * elements per item, rounded up to whole tiles). */
  uint64_t tile = (uint64_t)local * e, sub = 1;
  if (chain) {
    sub = (lp->items_per_thread + e - 1) / e;
    if (sub < 1)
      sub = 1;
    if (sub > UINT32_MAX / 2)
      sub = UINT32_MAX / 2;
  }
  uint64_t unit = tile * sub, upl = (len + unit - 1) / unit, total = lines * upl;
  /* Tile prefixes computed beforehand: no group waits on another. */
  int given = kagg && upl > 1;
  /* The unit counter is 32 bits wide. */
  if ((chain || upl > 1) && !given && (total >= UINT32_MAX || !lookback_safe(ctx)))
    return KILN_OK;
  kiln__ops_tmp desc = {0}, pre = {0};
  kiln_status s = KILN_OK;
  if (given) {
    s = run_tile_prefixes(sc, kagg, x, lines, len, upl, local, (uint32_t)(e | state << 8), state,
                          &pre);
  } else if (chain || upl > 1) {
    /* The counter, then each unit's status words (one 64-bit word per 32 bits of state, in
     * SCAN_LB_SLOTS slots). */
    uint64_t bytes = 8 * (1 + total * (state / 4) * SCAN_LB_SLOTS(state / 4));
    s = kiln__ops_tmp_alloc(ctx, bytes, &desc);
    if (s == KILN_OK) {
      const cl_uint zero = 0;
      cl_int err =
          clEnqueueFillBuffer(ctx->queue, desc.mem, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
      if (err != CL_SUCCESS)
        s = kiln__fail_cl(sc->op, err, "clEnqueueFillBuffer");
    }
  }
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(sc->op, k);
    kiln__args_mem(&a, x->mem);
    kiln__args_u64(&a, kiln__ops_elem_offset(x));
    kiln__args_mem(&a, y ? y->mem : NULL);
    kiln__args_u64(&a, kiln__ops_elem_offset(y));
    kiln__args_mem(&a, yi ? yi->mem : NULL);
    kiln__args_u64(&a, kiln__ops_elem_offset(yi));
    kiln__args_mem(&a, desc.mem);
    if (!chain)
      kiln__args_mem(&a, pre.mem);
    kiln__args_u64(&a, lines);
    kiln__args_u64(&a, len);
    kiln__args_u64(&a, upl);
    if (chain)
      kiln__args_u32(&a, (uint32_t)sub);
    kiln__args_u32(&a, (uint32_t)(e | state << 8));
    kiln__args_u32(&a, sc->flags);
    kiln__args_raw(&a, (2 * local + 1) * state, NULL);
    kiln__args_raw(&a, (local * (e + 1) * sb + 15) / 16 * 16, NULL);
    kiln__args_raw(&a, SCAN_LB_CTL_WORDS * 8, NULL);
    /* NAME_chain's groups loop over the chunks: as many as the device holds at once
     * (groups_per_cu per compute unit), fewer for short lines. */
    uint64_t groups = total;
    if (chain) {
      uint64_t most = kiln__launch_target_groups(ctx, lp);
      groups = groups < most ? groups : most;
    }
    s = kiln__args_enqueue_1d(&a, ctx, kiln__launch_grid(groups * local, local), local);
  }
  kiln__ops_tmp_free(ctx, &pre);
  kiln__ops_tmp_free(ctx, &desc);
  *done = s == KILN_OK;
  return s;
}

/*
 * Scans x, viewed as (outer, len, inner) with len > 0, into y (and yi). ctx->lock held.
 * need_idx: cummin/cummax, whose fixup needs indices even when the caller wants none.
 */
static kiln_status
run_scan(struct scan_call *sc, const kiln_tensor *x, uint64_t outer, uint64_t len, uint64_t inner,
         kiln_tensor *y, kiln_tensor *yi, int need_idx)
{
  KILN__ASSERT_LOCKED(sc->ctx);
  kiln_context *ctx = sc->ctx;
  const kiln__launch_params *lp = sc->lp;
  uint64_t lines = outer * inner, target = kiln__launch_target_groups(ctx, lp);
  int tiles = inner == 1 && len >= lp->two_pass_min;
  cl_kernel k;
  size_t local, global;
  uint64_t nchunk, clen;
  kiln__ops_tmp tot = {0}, idx = {0}, val = {0};
  kiln_status s;

  if (tiles && lp->single_pass) {
    int done;
    KILN_TRY(run_lookback(sc, x, lines, len, y, yi, need_idx, &done));
    if (done)
      return KILN_OK;
  }

  KILN_TRY(get(sc, tiles ? "_tiles" : "_lines", &k));
  uint64_t items = outer * ((inner + lp->cols_per_item - 1) / lp->cols_per_item);
  uint32_t want = lp->wg_size;
  /*
   * One item per line (or block of columns): wg_size bounds the group, which shrinks (to a
   * power of two, at least a warp on GPUs) until every compute unit gets two groups. The
   * columns of [1024, 65536] in groups of 256 were 64 groups for 132 compute units of an
   * H200, and those of [1024, 4096] one group for the two cores of a PoCL machine. CPU
   * devices leave small problems alone: PoCL compiles a kernel again for each new local
   * size, which costs more than a small scan.
   */
  if (!tiles && (ctx->info.is_gpu || outer * len * inner >= 65536)) {
    uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
    uint64_t per = items / (2 * cu), w = 1, least = ctx->info.is_gpu ? 32 : 1;
    while (w * 2 <= per)
      w <<= 1;
    if (w < least)
      w = least;
    if (w < want)
      want = (uint32_t)w;
  }
  KILN_TRY(kiln__launch_local_size(sc->op, ctx, k, want, tiles ? SCAN_STATE_BYTES : 0, &local));
  if (tiles)
    nchunk =
        kiln__launch_chunks(lp, lines, len, (uint64_t)local * lp->items_per_thread, target, &clen);
  else
    nchunk = kiln__launch_chunks(lp, items, len, lp->items_per_thread, target * local, &clen);

  cl_mem ymem = y ? y->mem : NULL, imem = yi ? yi->mem : NULL;
  uint64_t yoff = kiln__ops_elem_offset(y), ioff = kiln__ops_elem_offset(yi);
  s = KILN_OK;
  if (nchunk > 1) {
    s = kiln__ops_tmp_alloc(ctx, lines * nchunk * SCAN_STATE_BYTES, &tot);
    if (s == KILN_OK && need_idx && !yi) {
      s = kiln__ops_tmp_alloc(ctx, outer * len * inner * 8, &idx);
      imem = idx.mem;
      ioff = 0;
    }
    /* Likewise the values of an indexed scan whose caller wants only the indices. */
    if (s == KILN_OK && !y) {
      s = kiln__ops_tmp_alloc(ctx, outer * len * inner * kiln_dtype_size(x->dtype), &val);
      ymem = val.mem;
      yoff = 0;
    }
  }
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(sc->op, k);
    kiln__args_mem(&a, x->mem);
    kiln__args_u64(&a, kiln__ops_elem_offset(x));
    kiln__args_mem(&a, ymem);
    kiln__args_u64(&a, yoff);
    kiln__args_mem(&a, imem);
    kiln__args_u64(&a, ioff);
    kiln__args_mem(&a, tot.mem);
    if (tiles) {
      kiln__args_u64(&a, lines);
      kiln__args_u64(&a, len);
      kiln__args_u64(&a, nchunk);
      kiln__args_u64(&a, clen);
      kiln__args_u32(&a, lp->items_per_thread);
      kiln__args_u32(&a, sc->flags);
      kiln__args_raw(&a, local * SCAN_STATE_BYTES, NULL);
      global = (size_t)(lines * nchunk * local);
    } else {
      kiln__args_u64(&a, outer);
      kiln__args_u64(&a, len);
      kiln__args_u64(&a, inner);
      kiln__args_u64(&a, nchunk);
      kiln__args_u64(&a, clen);
      kiln__args_u32(&a, sc->flags);
      global = kiln__launch_grid(
          outer * nchunk * ((inner + lp->cols_per_item - 1) / lp->cols_per_item), local);
    }
    s = kiln__args_enqueue_1d(&a, ctx, global, local);
  }
  if (s == KILN_OK && nchunk > 1) {
    s = get(sc, "_totals", &k);
    if (s == KILN_OK)
      s = kiln__launch_local_size(sc->op, ctx, k, lp->wg_size, 0, &local);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(sc->op, k);
      kiln__args_mem(&a, tot.mem);
      kiln__args_u64(&a, outer);
      kiln__args_u64(&a, nchunk);
      kiln__args_u64(&a, inner);
      kiln__args_u32(&a, sc->flags);
      global = kiln__launch_grid(lines, local);
      s = kiln__args_enqueue_1d(&a, ctx, global, local);
    }
    if (s == KILN_OK)
      s = get(sc, "_fixup", &k);
    if (s == KILN_OK)
      s = kiln__launch_local_size(sc->op, ctx, k, lp->wg_size, 0, &local);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(sc->op, k);
      kiln__args_mem(&a, ymem);
      kiln__args_u64(&a, yoff);
      kiln__args_mem(&a, imem);
      kiln__args_u64(&a, ioff);
      kiln__args_mem(&a, tot.mem);
      kiln__args_u64(&a, outer);
      kiln__args_u64(&a, len);
      kiln__args_u64(&a, inner);
      kiln__args_u64(&a, nchunk);
      kiln__args_u64(&a, clen);
      kiln__args_u32(&a, sc->flags);
      /* One group per (line, chunk after the first). */
      global = (size_t)(lines * (nchunk - 1) * local);
      s = kiln__args_enqueue_1d(&a, ctx, global, local);
    }
  }
  kiln__ops_tmp_free(ctx, &val);
  kiln__ops_tmp_free(ctx, &idx);
  kiln__ops_tmp_free(ctx, &tot);
  return s;
}

/* kiln_scan (indexed 0: out in *values) and kiln_scan_indexed (indexed 1). */
static kiln_status
scan_impl(kiln_context *ctx, kiln_scan_op sop, const kiln_tensor *x, int64_t axis,
          const kiln_scan_options *opts, const kiln__launch_params *lp, int indexed,
          kiln_tensor **values, kiln_tensor **indices)
{
  char op[64];
  snprintf(op, sizeof op, "%s(%s)", indexed ? "kiln_scan_indexed" : "kiln_scan",
           kiln_scan_op_name(sop));
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(indexed ? !indices : !values, KILN_ERR_INVALID_ARGUMENT, op, "%s is NULL",
                 indexed ? "indices" : "out");
  KILN_RETURN_IF((unsigned)sop >= KILN_SCAN_OP_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown scan op %d", (int)sop);
  KILN_RETURN_IF(indexed && sop != KILN_SCAN_CUMMIN && sop != KILN_SCAN_CUMMAX,
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "kiln_scan_indexed takes KILN_SCAN_CUMMIN or KILN_SCAN_CUMMAX");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(check_op_dtype(op, sop, x->dtype));
  kiln_scan_options o;
  memset(&o, 0, sizeof o);
  if (opts)
    o = *opts;
  KILN_RETURN_IF(o.nan_policy != KILN_NAN_PROPAGATE && o.nan_policy != KILN_NAN_OMIT,
                 KILN_ERR_INVALID_ARGUMENT, op, "unknown NaN policy %d", (int)o.nan_policy);
  size_t ax;
  KILN_TRY(kiln__axis_normalize(op, x->shape.ndim, axis, &ax));
  kiln__launch_params tuned;
  if (!lp) {
    /* Tuned per (dtype, layout, size) bucket, before any lock (online tuning runs kernels). */
    uint64_t t_outer, t_len, t_inner;
    kiln__axis_split(&x->shape, ax, &t_outer, &t_len, &t_inner);
    kiln__launch_params_for(ctx, KILN__LAUNCH_SCAN, x->dtype, t_outer, t_len, t_inner, &tuned);
    lp = &tuned;
  }
  KILN_TRY(kiln__launch_params_check(op, lp));

  char options[192];
  kiln__program_options(&ctx->info, "scan", x->dtype,
                        &(kiln__program_variant){.cols = lp->cols_per_item}, options,
                        sizeof options);
  struct scan_call sc = {op,
                         ctx,
                         lp,
                         options,
                         scan_rows[sop].name,
                         (o.nan_policy == KILN_NAN_OMIT ? SCAN_F_OMIT : 0u) |
                             (o.exclusive ? SCAN_F_EXCL : 0u),
                         result_dtype(scan_rows[sop].res, x->dtype)};

  /* Tiled passes read x after writing partial results: any overlap goes through a temporary. */
  kiln__out_target tv = {0}, ti = {0};
  kiln_status s = KILN_OK;
  if (values)
    s = kiln__ops_out_begin(op, ctx, result_dtype(scan_rows[sop].res, x->dtype), &x->shape, values,
                            &x, 1, 0, &tv);
  if (s == KILN_OK && indexed)
    s = kiln__ops_out_begin(op, ctx, KILN_I64, &x->shape, indices, &x, 1, 0, &ti);
  if (s == KILN_OK && values && indexed) {
    kiln_tensor *outs[2] = {*values, *indices};
    static const char *const names[2] = {"values", "indices"};
    s = kiln__ops_outputs_disjoint(op, outs, names, 2);
  }
  kiln__ctx_lock(ctx);
  if (s == KILN_OK && x->numel) {
    uint64_t outer, len, inner;
    kiln__axis_split(&x->shape, ax, &outer, &len, &inner);
    int need_idx = sop == KILN_SCAN_CUMMIN || sop == KILN_SCAN_CUMMAX;
    s = run_scan(&sc, x, outer, len, inner, values ? tv.dst : NULL, indexed ? ti.dst : NULL,
                 need_idx);
  }
  if (tv.out)
    s = kiln__ops_out_finish(op, ctx, &tv, s);
  if (ti.out)
    s = kiln__ops_out_finish(op, ctx, &ti, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln__scan_tuned(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x, int64_t axis,
                 const kiln_scan_options *opts, const kiln__launch_params *lp, kiln_tensor **out)
{
  return scan_impl(ctx, op, x, axis, opts, lp, 0, out, NULL);
}

kiln_status
kiln__scan_indexed_tuned(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x, int64_t axis,
                         const kiln_scan_options *opts, const kiln__launch_params *lp,
                         kiln_tensor **values, kiln_tensor **indices)
{
  return scan_impl(ctx, op, x, axis, opts, lp, 1, values, indices);
}

kiln_status
kiln_scan(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x, int64_t axis,
          const kiln_scan_options *opts, kiln_tensor **out)
{
  return scan_impl(ctx, op, x, axis, opts, NULL, 0, out, NULL);
}

kiln_status
kiln_scan_indexed(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x, int64_t axis,
                  const kiln_scan_options *opts, kiln_tensor **values, kiln_tensor **indices)
{
  return scan_impl(ctx, op, x, axis, opts, NULL, 1, values, indices);
}

/* ---------------------------------------------------------------------------------- */

/* One first difference of src (outer, len, inner) into dst (outer, len - 1, inner). */
static kiln_status
diff_once(const char *op, kiln_context *ctx, const char *options, cl_mem src, uint64_t srcoff,
          cl_mem dst, uint64_t dstoff, uint64_t outer, uint64_t len, uint64_t inner)
{
  cl_kernel k;
  KILN_TRY(kiln__kernel_get(op, ctx, "scan", options, "diff1", &k));
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_mem(&a, src);
  kiln__args_u64(&a, srcoff);
  kiln__args_mem(&a, dst);
  kiln__args_u64(&a, dstoff);
  kiln__args_u64(&a, outer);
  kiln__args_u64(&a, len);
  kiln__args_u64(&a, inner);
  KILN_TRY(a.status);
  /* One work-item per (line, block of SCAN_DIFF_BLOCK outputs): see diff1 in scan.cl. */
  return kiln__launch_1d(op, ctx, k,
                         outer * ((len - 1 + SCAN_DIFF_BLOCK - 1) / SCAN_DIFF_BLOCK) * inner, 0);
}

kiln_status
kiln_diff(kiln_context *ctx, const kiln_tensor *x, int64_t axis, int64_t n, kiln_tensor **out)
{
  static const char op[] = "kiln_diff";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_RETURN_IF(n < 0, KILN_ERR_INVALID_ARGUMENT, op, "order n must be >= 0 (got %lld)",
                 (long long)n);
  size_t ax;
  KILN_TRY(kiln__axis_normalize(op, x->shape.ndim, axis, &ax));
  uint64_t outer, len, inner;
  kiln__axis_split(&x->shape, ax, &outer, &len, &inner);
  kiln__shape shape = x->shape;
  uint64_t steps = (uint64_t)n < len ? (uint64_t)n : len;
  shape.dims[ax] = (int64_t)(len - steps);
  /* Order 0 is a copy, which handles overlap itself; the kernels read x while writing y. */
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &shape, out, &x, 1, steps == 0, &t));
  kiln_tensor *y = t.dst;
  kiln_status s = KILN_OK;
  /* The scans' program (same options), so diff costs no build of its own. */
  kiln__launch_params lp;
  kiln__launch_params_default(ctx, KILN__LAUNCH_SCAN, &lp);
  char options[192];
  kiln__program_options(&ctx->info, "scan", x->dtype,
                        &(kiln__program_variant){.cols = lp.cols_per_item}, options,
                        sizeof options);
  size_t esz = kiln_dtype_size(x->dtype);

  kiln__ctx_lock(ctx);
  if (y->numel == 0) {
    /* nothing to write */
  } else if (steps == 0) {
    s = kiln__ops_copy(op, ctx, x, y);
  } else {
    /* Orders above 1 ping-pong between two temporaries; the last pass writes y. */
    kiln__ops_tmp tmp[2] = {{0}, {0}};
    cl_mem src = x->mem;
    uint64_t srcoff = kiln__ops_elem_offset(x), cur = len;
    for (uint64_t p = 0; s == KILN_OK && p < steps; p++) {
      int last = p + 1 == steps;
      cl_mem dst = y->mem;
      uint64_t dstoff = kiln__ops_elem_offset(y);
      if (!last) {
        kiln__ops_tmp *tp = &tmp[p & 1];
        if (!tp->mem)
          s = kiln__ops_tmp_alloc(ctx, outer * (cur - 1) * inner * esz, tp);
        dst = tp->mem;
        dstoff = 0;
      }
      if (s == KILN_OK)
        s = diff_once(op, ctx, options, src, srcoff, dst, dstoff, outer, cur, inner);
      src = dst;
      srcoff = dstoff;
      cur--;
    }
    kiln__ops_tmp_free(ctx, &tmp[0]);
    kiln__ops_tmp_free(ctx, &tmp[1]);
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* Scans compile their columns per work-item in (a launch parameter). */
static void
scan_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                   const void *variant, char *buf, size_t len)
{
  (void)source;
  (void)dtype;
  const kiln__program_variant *v = variant;
  kiln__options_append(buf, len, " -DKILN_COLS=%u",
                       v && v->cols ? v->cols : kiln__default_cols_per_item(info));
}

static const struct kiln__source scan_sources[] = {{"scan", SCAN_DTYPES}, {NULL, 0}};

const struct kiln__family kiln__scan_family = {
    .name = "scan",
    .sources = scan_sources,
    .build_options = scan_build_options,
    .tune = &kiln__scan_tune,
};
