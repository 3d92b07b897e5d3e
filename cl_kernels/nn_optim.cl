/*
 * nn training family, optimizer steps (lib/ops/nn_optim.c, docs/nn.md "Optimizers"): SGD,
 * Adam/AdamW and gradient-norm clipping over lists of tensors, OPT_SLOTS tensors per launch.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); f32, f64, f16 and bf16 (state in the
 * parameter's dtype, as PyTorch keeps it; arithmetic in T, float for the half types).
 *
 * Every kernel takes OPT_SLOTS slots, then `nslots` (the slots in use), then its scalars.
 * A slot is the tensors of one parameter (each as buffer, element offset) and its element
 * count n; unused slots carry NULL buffers and n = 0. Each slot is walked by a grid-stride
 * loop over all work-items, so the launch needs only max(n) items and every element is
 * touched by exactly one work-item (the updates are elementwise and in place).
 *
 * Kernels:
 *   sgd_step(slots(p, g, buf, n)..., nslots, lr, momentum, dampening, wd, flags)
 *     flags: OPT_MAXIMIZE, OPT_NESTEROV, OPT_FIRST (buf = d on the first step), OPT_MOMENTUM;
 *     sgd_stepv (same arguments): 16 (f64: 8) elements as one vector, a contiguous run of
 *     vectors per work-item (CPUs)
 *   adam_step(slots(p, g, m, v, vmax, n)..., nslots, lr, beta1, beta2, eps, wd, step_size,
 *             bc2_sqrt, flags)   flags: OPT_MAXIMIZE, OPT_AMSGRAD, OPT_DECOUPLED
 *     one element per work-item; adam_step4 (same arguments): four (max(n) / 4 items);
 *     adam_stepv (same arguments): as sgd_stepv (CPU devices)
 *   sumsq_part(slots(g, n)..., nslots, part, poff, ls)
 *     each work-group writes the sum of squares of its share of every slot to part[poff + group]
 *   norm_finish(part, n, out, ooff, ls)   one work-group: out[0] = sqrt(sum(part[0..n)))
 *   clip_scale(slots(g, n)..., nslots, norm, noff, max_norm)
 *     g *= min(1, max_norm / (norm + 1e-6)), a NaN coefficient kept (PyTorch's clamp)
 */
#include "common.cl"

#define OPT_SLOTS 8

#define OPT_MAXIMIZE 1u
#define OPT_NESTEROV 2u
#define OPT_FIRST 4u
#define OPT_MOMENTUM 8u
#define OPT_AMSGRAD 16u
#define OPT_DECOUPLED 32u

#define FOR_SLOTS(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)

#define GRID_LOOP(i, n) for (ulong i = get_global_id(0); i < (n); i += get_global_size(0))

/* ---------------------------------------------------------------- SGD */

/* One SGD step on TY values (T, or T vectors in sgd_vec): pv the parameter, d its gradient,
 * LOADB and STOREB the momentum buffer's load and store. */
#define SGD_ELEM(TY, pv, d, LOADB, STOREB)                                                   \
  do {                                                                                     \
    if (flags & OPT_MAXIMIZE)                                                              \
      d = -d;                                                                              \
    if (wd != (T)0)                                                                        \
      d += wd * pv;                                                                        \
    if (flags & OPT_MOMENTUM) {                                                            \
      TY b_ = (flags & OPT_FIRST) ? d : mom * LOADB + ((T)1 - damp) * d;                   \
      STOREB(b_);                                                                          \
      d = (flags & OPT_NESTEROV) ? d + mom * b_ : b_;                                      \
    }                                                                                      \
    pv -= lr * d;                                                                          \
  } while (0)

inline void
sgd_one(global ST *p, global const ST *g, global ST *buf, ulong n, T lr, T mom, T damp, T wd,
        uint flags)
{
  GRID_LOOP(i, n)
  {
    T pv = KILN_LOAD(p, i), d = KILN_LOAD(g, i);
#define SGD_STORE1(b) KILN_STORE(buf, i, b)
    SGD_ELEM(T, pv, d, KILN_LOAD(buf, i), SGD_STORE1);
#undef SGD_STORE1
    KILN_STORE(p, i, pv);
  }
}

#define SGD_PARAMS(s)                                                                      \
  global ST *p##s, ulong po##s, global const ST *g##s, ulong go##s, global ST *b##s,       \
      ulong bo##s, ulong n##s,
#define SGD_RUN(s)                                                                         \
  if (s < nslots)                                                                          \
    SGD_FN(p##s + po##s, g##s + go##s, b##s ? b##s + bo##s : b##s, n##s, lr, mom, damp, wd,  \
           flags);

#define SGD_FN sgd_one
kernel void
sgd_step(FOR_SLOTS(SGD_PARAMS) uint nslots, T lr, T mom, T damp, T wd, uint flags)
{
  FOR_SLOTS(SGD_RUN)
}
#undef SGD_FN

/* ---------------------------------------------------------------- Adam, AdamW */

/* One element of Adam (all TY values: T, or T vectors in adam_vec); returns the new parameter,
 * updates m, v, vm. */
#define ADAM_ELEM(TY, pv, gv, mv, vv, vmv)                                                   \
  do {                                                                                     \
    if (flags & OPT_MAXIMIZE)                                                              \
      gv = -gv;                                                                            \
    if (flags & OPT_DECOUPLED)                                                             \
      pv *= (T)1 - lr * wd;                                                                \
    else                                                                                   \
      gv += wd * pv;                                                                       \
    /* PyTorch's m.lerp_(g, 1 - beta1) and v.mul_(beta2).addcmul_(g, g, 1 - beta2). */    \
    mv += ((T)1 - b1) * (gv - mv);                                                         \
    vv = b2 * vv + ((T)1 - b2) * gv * gv;                                                  \
    TY den_;                                                                               \
    if (flags & OPT_AMSGRAD) {                                                             \
      vmv = fmax(vmv, vv);                                                                 \
      den_ = sqrt(vmv) / bc2s + eps;                                                       \
    } else {                                                                               \
      den_ = sqrt(vv) / bc2s + eps;                                                        \
    }                                                                                      \
    pv -= step_size * mv / den_;                                                           \
  } while (0)

/* One element per work-item: CPUs (PoCL vectorises across work-items; it measured the 4-vector
 * form below 1.7x slower, and slower still with both forms in one kernel). */
inline void
adam_one(global ST *p, global const ST *g, global ST *m, global ST *v, global ST *vm, ulong n,
         T lr, T b1, T b2, T eps, T wd, T step_size, T bc2s, uint flags)
{
  GRID_LOOP(i, n)
  {
    T pv = KILN_LOAD(p, i), gv = KILN_LOAD(g, i), mv = KILN_LOAD(m, i), vv = KILN_LOAD(v, i);
    T xv = (flags & OPT_AMSGRAD) ? KILN_LOAD(vm, i) : (T)0;
    ADAM_ELEM(T, pv, gv, mv, vv, xv);
    KILN_STORE(p, i, pv);
    KILN_STORE(m, i, mv);
    KILN_STORE(v, i, vv);
    if (flags & OPT_AMSGRAD)
      KILN_STORE(vm, i, xv);
  }
}

/* Four elements per work-item (GPUs, as the elementwise family's measured H200 default): 4-vector
 * loads and stores of whole groups of four (vloadn needs only the element's alignment), the last
 * partial group element by element. */
/* Four elements of a tensor as a T 4-vector (vloadn needs only the element's alignment). */
#if defined(KILN_DT_F16)
#define LOAD4(p) vload_half4(0, p)
#define STORE4(p, v) vstore_half4_rte(v, 0, p)
#elif defined(KILN_DT_BF16)
#define LOAD4(p) as_float4(convert_uint4(vload4(0, p)) << 16)
#define STORE4(p, v)                                                                       \
  do {                                                                                     \
    float4 v_ = (v);                                                                       \
    vstore4((ushort4)(kiln_f32_to_bf16(v_.x), kiln_f32_to_bf16(v_.y), kiln_f32_to_bf16(v_.z), \
                      kiln_f32_to_bf16(v_.w)),                                             \
            0, p);                                                                         \
  } while (0)
#else
#define LOAD4(p) vload4(0, p)
#define STORE4(p, v) vstore4(v, 0, p)
#endif

/* Elements i0 to n - 1, one by one (the last partial vector of adam_four and adam_vec). */
inline void
adam_tail(global ST *p, global const ST *g, global ST *m, global ST *v, global ST *vm, ulong i0,
          ulong n, T lr, T b1, T b2, T eps, T wd, T step_size, T bc2s, uint flags)
{
  for (ulong i = i0; i < n; i++) {
    T pv = KILN_LOAD(p, i), gv = KILN_LOAD(g, i), mv = KILN_LOAD(m, i), vv = KILN_LOAD(v, i);
    T xv = (flags & OPT_AMSGRAD) ? KILN_LOAD(vm, i) : (T)0;
    ADAM_ELEM(T, pv, gv, mv, vv, xv);
    KILN_STORE(p, i, pv);
    KILN_STORE(m, i, mv);
    KILN_STORE(v, i, vv);
    if (flags & OPT_AMSGRAD)
      KILN_STORE(vm, i, xv);
  }
}

inline void
adam_four(global ST *p, global const ST *g, global ST *m, global ST *v, global ST *vm, ulong n,
          T lr, T b1, T b2, T eps, T wd, T step_size, T bc2s, uint flags)
{
  for (ulong q = get_global_id(0); 4 * q < n; q += get_global_size(0)) {
    const ulong i0 = 4 * q;
    if (i0 + 4 <= n) {
      T pa[4], ga[4], ma[4], va[4], xa[4] = {0, 0, 0, 0};
      vstore4(LOAD4(p + i0), 0, pa);
      vstore4(LOAD4(g + i0), 0, ga);
      vstore4(LOAD4(m + i0), 0, ma);
      vstore4(LOAD4(v + i0), 0, va);
      if (flags & OPT_AMSGRAD)
        vstore4(LOAD4(vm + i0), 0, xa);
      for (int u = 0; u < 4; u++)
        ADAM_ELEM(T, pa[u], ga[u], ma[u], va[u], xa[u]);
      STORE4(p + i0, vload4(0, pa));
      STORE4(m + i0, vload4(0, ma));
      STORE4(v + i0, vload4(0, va));
      if (flags & OPT_AMSGRAD)
        STORE4(vm + i0, vload4(0, xa));
    } else {
      adam_tail(p, g, m, v, vm, i0, n, lr, b1, b2, eps, wd, step_size, bc2s, flags);
    }
  }
}

/*
 * CPU devices: vectors of AV elements (64 bytes: 16 floats, 8 doubles), the update on whole
 * vectors (the scalar grid-stride loop ran element by element on PoCL), a contiguous run of
 * them per work-item in each slot (KILN_RUN_LOOP; the host's global size sets the run).
 * Measured on PoCL (2 cores, `bench/ab.sh` on nn.adam f32, docs/nn.md): one vector per
 * work-item, whose every item paid the eight slots' dispatch for 64 bytes, 0.123 / 0.477 /
 * 2.43 ms at 2^18 / 2^20 / 2^22, runs of up to 32 vectors 0.068 / 0.141 / 1.10.
 */
#define AV KILN_VW64
#define AVT KILN_CAT(T, AV)
#if defined(KILN_DT_BF16)
KILN_BF16_FROM_FLOATV(AV)
#endif
#define LDV(p) KILN_VLOAD_ST(AV, p)
#define STV(p, v) KILN_VSTORE_ST(AV, v, p)
inline void
adam_vec(global ST *p, global const ST *g, global ST *m, global ST *v, global ST *vm, ulong n,
         T lr, T b1, T b2, T eps, T wd, T step_size, T bc2s, uint flags)
{
  KILN_RUN_LOOP(q, (n + AV - 1) / AV)
  {
    const ulong i0 = AV * q;
    if (i0 + AV <= n) {
      AVT pv = LDV(p + i0), gv = LDV(g + i0), mv = LDV(m + i0), vv = LDV(v + i0);
      AVT xv = (flags & OPT_AMSGRAD) ? LDV(vm + i0) : (AVT)0;
      ADAM_ELEM(AVT, pv, gv, mv, vv, xv);
      STV(p + i0, pv);
      STV(m + i0, mv);
      STV(v + i0, vv);
      if (flags & OPT_AMSGRAD)
        STV(vm + i0, xv);
    } else {
      adam_tail(p, g, m, v, vm, i0, n, lr, b1, b2, eps, wd, step_size, bc2s, flags);
    }
  }
}

/* SGD's CPU form, as adam_vec. */
inline void
sgd_vec(global ST *p, global const ST *g, global ST *buf, ulong n, T lr, T mom, T damp, T wd,
        uint flags)
{
  KILN_RUN_LOOP(q, (n + AV - 1) / AV)
  {
    const ulong i0 = AV * q;
    if (i0 + AV <= n) {
      AVT pv = LDV(p + i0), d = LDV(g + i0);
#define SGD_STOREV(b) STV(buf + i0, b)
      SGD_ELEM(AVT, pv, d, LDV(buf + i0), SGD_STOREV);
#undef SGD_STOREV
      STV(p + i0, pv);
    } else {
      for (ulong i = i0; i < n; i++) {
        T pv = KILN_LOAD(p, i), d = KILN_LOAD(g, i);
#define SGD_STORE1(b) KILN_STORE(buf, i, b)
        SGD_ELEM(T, pv, d, KILN_LOAD(buf, i), SGD_STORE1);
#undef SGD_STORE1
        KILN_STORE(p, i, pv);
      }
    }
  }
}

#define SGD_FN sgd_vec
kernel void
sgd_stepv(FOR_SLOTS(SGD_PARAMS) uint nslots, T lr, T mom, T damp, T wd, uint flags)
{
  FOR_SLOTS(SGD_RUN)
}
#undef SGD_FN

#define ADAM_PARAMS(s)                                                                     \
  global ST *p##s, ulong po##s, global const ST *g##s, ulong go##s, global ST *m##s,       \
      ulong mo##s, global ST *v##s, ulong vo##s, global ST *x##s, ulong xo##s, ulong n##s,
#define ADAM_RUN(s)                                                                        \
  if (s < nslots)                                                                          \
    ADAM_FN(p##s + po##s, g##s + go##s, m##s + mo##s, v##s + vo##s,                        \
            x##s ? x##s + xo##s : x##s, n##s, lr, b1, b2, eps, wd, step_size, bc2s, flags);

#define ADAM_FN adam_one
kernel void
adam_step(FOR_SLOTS(ADAM_PARAMS) uint nslots, T lr, T b1, T b2, T eps, T wd, T step_size,
          T bc2s, uint flags)
{
  FOR_SLOTS(ADAM_RUN)
}
#undef ADAM_FN

#define ADAM_FN adam_four
kernel void
adam_step4(FOR_SLOTS(ADAM_PARAMS) uint nslots, T lr, T b1, T b2, T eps, T wd, T step_size,
           T bc2s, uint flags)
{
  FOR_SLOTS(ADAM_RUN)
}
#undef ADAM_FN

#define ADAM_FN adam_vec
kernel void
adam_stepv(FOR_SLOTS(ADAM_PARAMS) uint nslots, T lr, T b1, T b2, T eps, T wd, T step_size,
           T bc2s, uint flags)
{
  FOR_SLOTS(ADAM_RUN)
}
#undef ADAM_FN

/* ---------------------------------------------------------------- gradient-norm clipping */

#define G_PARAMS(s) global ST *g##s, ulong go##s, ulong n##s,

inline T
sumsq_one(global const ST *g, ulong n)
{
  T a = (T)0;
  GRID_LOOP(i, n)
  {
    T v = KILN_LOAD(g, i);
    a += v * v;
  }
  return a;
}

/* Sum of ls[0..lsz) into ls[0] (lsz a power of two); every item must call it. */
inline void
group_sum(local T *ls, uint lid, uint lsz)
{
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off)
      ls[lid] += ls[lid + off];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

#define SUMSQ_RUN(s)                                                                       \
  if (s < nslots)                                                                          \
    a += sumsq_one(g##s + go##s, n##s);

kernel void
sumsq_part(FOR_SLOTS(G_PARAMS) uint nslots, global T *part, ulong poff, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  T a = (T)0;
  FOR_SLOTS(SUMSQ_RUN)
  ls[lid] = a;
  group_sum(ls, lid, lsz);
  if (lid == 0)
    part[poff + get_group_id(0)] = ls[0];
}

kernel void
norm_finish(global const T *part, ulong n, global ST *out, ulong ooff, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  T a = (T)0;
  for (ulong i = lid; i < n; i += lsz)
    a += part[i];
  ls[lid] = a;
  group_sum(ls, lid, lsz);
  if (lid == 0)
    KILN_STORE(out, ooff, sqrt(ls[0]));
}

inline void
scale_one(global ST *g, ulong n, T c)
{
  GRID_LOOP(i, n)
  KILN_STORE(g, i, KILN_LOAD(g, i) * c);
}

#define SCALE_RUN(s)                                                                       \
  if (s < nslots)                                                                          \
    scale_one(g##s + go##s, n##s, c);

kernel void
clip_scale(FOR_SLOTS(G_PARAMS) uint nslots, global const ST *norm, ulong noff, T max_norm)
{
  T c = max_norm / (KILN_LOAD(norm, noff) + (T)1e-6);
  if (!(c < (T)1) && !isnan(c))
    c = (T)1;
  FOR_SLOTS(SCALE_RUN)
}
