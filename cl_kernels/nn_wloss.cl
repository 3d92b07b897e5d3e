/*
 * nn training family: cross_entropy and nll with class weights (lib/ops/nn_wloss.c,
 * docs/nn.md "Class weights"), PyTorch's formulas.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); f32 and f64.
 *
 * Per row of C classes (x: logits, or log-probabilities for nll), a weighted target
 *   a_k = w_k ((1 - e) q_k + e / C)                 (probabilities q, flags WL_PROBS)
 *   a_k = (1 - e) w_t [k == t] + e / C w_k          (class index t; 0 in an ignored row)
 * gives loss = sum_k a_k (lse - x_k) (cross_entropy) or -sum_k a_k x_k (nll, WL_NLL), and
 * the gradient dx_k = g (p_k sum(a) - a_k) (cross_entropy, p = softmax(x)) or -g a_k (nll).
 * The row's weight for a mean is w_t (0 when ignored), or 1 with probabilities.
 * One work-group per row (rows looped), lanes over the classes.
 *
 * Kernels (offsets in elements):
 *   wl_fwd(x, xoff, ti, tioff, tp, tpoff, w, woff, loss, lw, rows, C, ignore, eps, flags, ls)
 *     loss[r] and lw[r] (compute-dtype temporaries)
 *   wl_finish(loss, lw, rows, out, ooff, mode, ls)   one work-group: out[0] = sum(loss)
 *     (mode 1: / sum(lw)); mode 2: out[0] = sum(lw) (the mean's divisor, into a temporary);
 *     mode 3: out[r] = loss[r] for every row (reduction none: T into the dtype's storage)
 *   wl_bwd(gout, goff, x, xoff, ti, tioff, tp, tpoff, w, woff, denom, dnoff, dx, dxoff, rows, C,
 *          ignore, eps, flags, ls)
 *     flags WL_GROW: g = gout[r] (reduction none), else gout[0]; WL_DENOM: g /= denom[0]
 */
#include "common.cl"

#define WL_PROBS 1u
#define WL_NLL 2u
#define WL_GROW 4u
#define WL_DENOM 8u

inline T
group_sum(local T *ls, T v)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  ls[lid] = v;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off)
      ls[lid] += ls[lid + off];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  return ls[0];
}

inline T
group_max(local T *ls, T v)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  ls[lid] = v;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off)
      ls[lid] = fmax(ls[lid], ls[lid + off]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  return ls[0];
}

/* The weighted target of class k in a row with index t (or probabilities tp). */
inline T
wl_target(global const long *ti, global const ST *tp, global const ST *w, ulong base, long t,
          ulong k, ulong C, T eps, uint flags)
{
  T wk = w ? KILN_LOAD(w, k) : (T)1;
  if (flags & WL_PROBS)
    return wk * (((T)1 - eps) * KILN_LOAD(tp, base + k) + eps / (T)C);
  T a = eps / (T)C * wk;
  if ((long)k == t)
    a += ((T)1 - eps) * wk;
  return a;
}

/* The row's class index (-1 for probabilities or an ignored row); bad indices give NaN rows
 * through the caller's check. */
#define WL_ROW_INDEX(t, r)                                                                    \
  long t = -1;                                                                                 \
  int ignored = 0;                                                                             \
  if (!(flags & WL_PROBS)) {                                                                   \
    t = ti[tioff + r];                                                                         \
    ignored = t == ignore;                                                                     \
  }

kernel void
wl_fwd(global const ST *x, ulong xoff, global const long *ti, ulong tioff, global const ST *tp,
       ulong tpoff, global const ST *w, ulong woff, global T *loss, global T *lw, ulong rows,
       ulong C, long ignore, T eps, uint flags, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  if (w)
    w += woff;
  for (ulong r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    const ulong base = r * C;
    WL_ROW_INDEX(t, r)
    T m = -INFINITY;
    if (!(flags & WL_NLL))
      for (ulong k = lid; k < C; k += lsz)
        m = fmax(m, KILN_LOAD(x, xoff + base + k));
    m = group_max(ls, m);
    T se = (T)0, a = (T)0, b = (T)0;
    for (ulong k = lid; k < C; k += lsz) {
      T xv = KILN_LOAD(x, xoff + base + k);
      if (!(flags & WL_NLL))
        se += exp(xv - m);
      if (!ignored) {
        T ak = wl_target(ti, tp, w, tpoff + base, t, k, C, eps, flags);
        a += ak;
        /* 0 * -inf (a zero target on a -inf logit) contributes 0, as PyTorch's xlogy. */
        b += ak == (T)0 ? (T)0 : ak * xv;
      }
    }
    se = group_sum(ls, se);
    a = group_sum(ls, a);
    b = group_sum(ls, b);
    if (lid == 0) {
      T l = (flags & WL_NLL) ? -b : a * (m + log(se)) - b;
      int bad = !(flags & WL_PROBS) && !ignored && (t < 0 || (ulong)t >= C);
      T wt = (flags & WL_PROBS) ? (T)1 : ignored || bad ? (T)0 : (w ? KILN_LOAD(w, t) : (T)1);
      if (ignored)
        l = (T)0;
      else if (bad)
        l = NAN;
      loss[r] = l;
      lw[r] = wt;
    }
  }
}

kernel void
wl_finish(global const T *loss, global const T *lw, ulong rows, global ST *out, ulong ooff,
          uint mode, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  if (mode == 3) {
    for (ulong r = lid; r < rows; r += lsz)
      KILN_STORE(out, ooff + r, loss[r]);
    return;
  }
  T a = (T)0, b = (T)0;
  for (ulong r = lid; r < rows; r += lsz) {
    if (mode != 2)
      a += loss[r];
    b += lw[r];
  }
  a = group_sum(ls, a);
  b = group_sum(ls, b);
  if (lid == 0)
    KILN_STORE(out, ooff, mode == 0 ? a : mode == 1 ? a / b : b);
}

kernel void
wl_bwd(global const ST *gout, ulong goff, global const ST *x, ulong xoff, global const long *ti,
       ulong tioff, global const ST *tp, ulong tpoff, global const ST *w, ulong woff,
       global const ST *denom, ulong dnoff, global ST *dx, ulong dxoff, ulong rows, ulong C,
       long ignore,
       T eps, uint flags, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  if (w)
    w += woff;
  for (ulong r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    const ulong base = r * C;
    WL_ROW_INDEX(t, r)
    T g = KILN_LOAD(gout, goff + ((flags & WL_GROW) ? r : 0));
    if (flags & WL_DENOM)
      g /= KILN_LOAD(denom, dnoff);
    T m = -INFINITY, se = (T)0, a = (T)0;
    if (!(flags & WL_NLL)) {
      for (ulong k = lid; k < C; k += lsz)
        m = fmax(m, KILN_LOAD(x, xoff + base + k));
      m = group_max(ls, m);
      for (ulong k = lid; k < C; k += lsz) {
        se += exp(KILN_LOAD(x, xoff + base + k) - m);
        if (!ignored)
          a += wl_target(ti, tp, w, tpoff + base, t, k, C, eps, flags);
      }
      se = group_sum(ls, se);
      a = group_sum(ls, a);
    }
    for (ulong k = lid; k < C; k += lsz) {
      T ak = ignored ? (T)0 : wl_target(ti, tp, w, tpoff + base, t, k, C, eps, flags);
      T d = (flags & WL_NLL) ? -ak : exp(KILN_LOAD(x, xoff + base + k) - m) / se * a - ak;
      if (!(flags & WL_PROBS) && !ignored && (t < 0 || (ulong)t >= C))
        d = NAN;
      KILN_STORE(dx, dxoff + base + k, ignored ? (T)0 : g * d);
    }
  }
}
