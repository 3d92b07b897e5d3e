/*
 * nn_conv family, pooling: max and average pooling with their backward passes, adaptive
 * average pooling and its backward pass.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); no tunables. Tensors are
 * `global ST *` moved through KILN_LOAD/KILN_STORE, arithmetic in T.
 *
 * Geometry: planes independent planes of in.x * in.y * in.z elements (depth, height, width;
 * the host pads 1-D and 2-D pooling with leading axes of 1), outputs of out.x * out.y * out.z.
 * k, s, p, d: window, stride, padding and dilation per axis (.x depth, .y height, .z width).
 * Every kernel runs on a 2-D grid: dimension 0 over the spatial volume of one plane (rounded
 * up to the work-group size; the host keeps volumes below 2^31 so that positions decompose in
 * 32-bit arithmetic), dimension 1 over the planes. Offsets are in elements.
 *
 *   pool_fwd(x, xoff, y, yoff, ix, ixoff, planes, in, out, k, s, p, d, flags)  over outputs
 *     flags POOL_MAX: max (else average); POOL_IDX: write i64 argmax indices (max);
 *     POOL_INCLUDE_PAD: the average's divisor counts the padding.
 *   pool_max_s2_rows(the same arguments)   its CPU form for 2-D max pooling with stride 2
 *     along x, 1-D over the planes out.y output rows
 *   pool_tiled(x, xoff, y, yoff, ix, ixoff, total, ih, iw, oh, ow, kh, kw, flags)
 *     1-D over the total = planes oh ow outputs (below 2^32): pool_fwd for windows that tile
 *     the input (2-D or 1-D, stride = window, no padding or dilation, every window inside),
 *     in 32-bit index arithmetic; each input element is read at most once.
 *   pool_tiled_rows(the same arguments)   its CPU form, 1-D over the planes oh output rows
 *   pool_bwd_rows(g, goff, ix, ixoff, dx, dxoff, rows, ih, iw, oh, ow, kh, kw, flags)
 *     CPU devices' backward of tiling windows (max with ix, or average), 1-D over the
 *     rows = planes ih input rows
 *   pool_max_bwd(g, goff, ix, ixoff, dx, dxoff, planes, in, out, k, s, p, d)  over inputs
 *   pool_avg_bwd(g, goff, dx, dxoff, planes, in, out, k, s, p, flags)          over inputs
 *   adaptive_fwd(x, xoff, y, yoff, planes, in, out)                            over outputs
 *   adaptive_bwd(g, goff, dx, dxoff, planes, in, out)                          over inputs
 * The backward kernels gather: each input element sums the outputs whose window holds it,
 * in output order, so results do not depend on the launch.
 */
#include "common.cl"
#include "nn_planes.clh"

#define POOL_MAX 1u
#define POOL_IDX 2u
#define POOL_INCLUDE_PAD 4u

/* The outputs along one axis whose window [o s - p, o s - p + span) holds position q. */
inline void
out_range(long q, long s, long p, long span, long nout, long *lo, long *hi)
{
  long a = q + p - span + 1; /* smallest o s with o s - p + span - 1 >= q */
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  long b = (q + p) / s;
  *hi = b < nout - 1 ? b : nout - 1;
}

/* PyTorch's average-pooling window along one axis: the clipped [lo, hi) and the padded size. */
inline void
avg_window(long o, long in, long k, long s, long p, long *lo, long *hi, long *padded)
{
  long a = o * s - p, b = a + k;
  if (b > in + p)
    b = in + p;
  *padded = b - a;
  *lo = a < 0 ? 0 : a;
  *hi = b < in ? b : in;
}

/* Output (oz, oy, ox) of pool_fwd from its plane xp: the maximum (with its index in *mi) or
 * the average of its window. */
inline T
pool_one(global const ST *xp, long oz, long oy, long ox, long4 in, long4 k, long4 s, long4 p,
         long4 d, uint flags, long *mi)
{
  if (flags & POOL_MAX) {
    const long z0 = oz * s.x - p.x, y0 = oy * s.y - p.y, x0 = ox * s.z - p.z;
    T m = -INFINITY;
    *mi = -1;
    for (long a = 0; a < k.x; a++) {
      const long zz = z0 + a * d.x;
      if (zz < 0 || zz >= in.x)
        continue;
      for (long b = 0; b < k.y; b++) {
        const long yy = y0 + b * d.y;
        if (yy < 0 || yy >= in.y)
          continue;
        for (long c = 0; c < k.z; c++) {
          const long xx = x0 + c * d.z;
          if (xx < 0 || xx >= in.z)
            continue;
          const long q = (zz * in.y + yy) * in.z + xx;
          const T v = KILN_LOAD(xp, q);
          /* PyTorch's rule: a larger value or any NaN takes the place. */
          if (*mi < 0 || v > m || isnan(v)) {
            m = v;
            *mi = q;
          }
        }
      }
    }
    return m;
  }
  long zl, zh, zpad, yl, yh, ypad, xl, xh, xpad;
  avg_window(oz, in.x, k.x, s.x, p.x, &zl, &zh, &zpad);
  avg_window(oy, in.y, k.y, s.y, p.y, &yl, &yh, &ypad);
  avg_window(ox, in.z, k.z, s.z, p.z, &xl, &xh, &xpad);
  T acc = (T)0;
  for (long zz = zl; zz < zh; zz++)
    for (long yy = yl; yy < yh; yy++)
      for (long xx = xl; xx < xh; xx++)
        acc += KILN_LOAD(xp, (zz * in.y + yy) * in.z + xx);
  const long div =
      (flags & POOL_INCLUDE_PAD) ? zpad * ypad * xpad : (zh - zl) * (yh - yl) * (xh - xl);
  return acc / (T)div;
}

kernel void
pool_fwd(global const ST *x, ulong xoff, global ST *y, ulong yoff, global long *ix, ulong ixoff,
         ulong planes, long4 in, long4 out, long4 k, long4 s, long4 p, long4 d, uint flags)
{
  const ulong ovol = (ulong)(out.x * out.y * out.z), ivol = (ulong)(in.x * in.y * in.z);
  PLANE_BEGIN(ovol, planes, pl)
  SPLIT(r, out, oz, oy, ox)
  const ulong i = pl * ovol + r;
  long mi;
  const T v = pool_one(x + xoff + pl * ivol, oz, oy, ox, in, k, s, p, d, flags, &mi);
  KILN_STORE(y, yoff + i, v);
  if ((flags & POOL_MAX) && (flags & POOL_IDX))
    ix[ixoff + i] = mi;
  PLANE_END
}

/* The tiling window at plane offset q0 of pool_tiled: its maximum (pool_fwd's rule: the first
 * largest value, or the last NaN; its position in *mi) or its average. */
inline T
tiled_one(global const ST *xp, uint q0, uint iw, uint kh, uint kw, uint flags, uint *mi)
{
  if (flags & POOL_MAX) {
    T acc = KILN_LOAD(xp, q0);
    *mi = q0;
    for (uint b = 0; b < kh; b++)
      for (uint c = b ? 0 : 1; c < kw; c++) {
        const uint q = q0 + b * iw + c;
        const T v = KILN_LOAD(xp, q);
        if (v > acc || isnan(v)) {
          acc = v;
          *mi = q;
        }
      }
    return acc;
  }
  T acc = (T)0;
  for (uint b = 0; b < kh; b++)
    for (uint c = 0; c < kw; c++)
      acc += KILN_LOAD(xp, q0 + b * iw + c);
  return acc / (T)(kh * kw);
}

kernel void
pool_tiled(global const ST *x, ulong xoff, global ST *y, ulong yoff, global long *ix, ulong ixoff,
           uint total, uint ih, uint iw, uint oh, uint ow, uint kh, uint kw, uint flags)
{
  for (uint i = (uint)get_global_id(0); i < total; i += (uint)get_global_size(0)) {
    const uint ox = i % ow, t = i / ow, oy = t % oh, pl = t / oh;
    uint mi;
    const T v = tiled_one(x + xoff + (ulong)pl * ih * iw, oy * kh * iw + ox * kw, iw, kh, kw,
                          flags, &mi);
    if ((flags & POOL_MAX) && (flags & POOL_IDX))
      ix[ixoff + i] = (long)mi;
    KILN_STORE(y, yoff + i, v);
  }
}

/*
 * pool_tiled's CPU form: a work-item per row of ow outputs (no index division per output; one
 * output per work-item ran at about 1 GB/s on PoCL, a tenth of PyTorch's CPU speed at best),
 * 2 x 2 windows on 64-byte vectors of two input rows (PW outputs a step: the even and odd
 * lanes, folded in pool_tiled's order with its rule, or summed in its order), anything else
 * (and rows of fewer than PW outputs) output by output.
 */
#define PTV KILN_CAT(T, PW)
#if defined(KILN_DT_F64)
#define PW 4 /* KILN_VW64 / 2, the outputs of one 64-byte vector of a row */
#define PMV KILN_CAT(long, PW) /* the comparisons' lane masks, and the offsets kept in them */
#define PLANE2 ((PMV)(0, 2, 4, 6))
#define PZIP ((ulong8)(0, 4, 1, 5, 2, 6, 3, 7)) /* interleaves two PW vectors (shuffle2) */
#else
#define PW 8
#define PMV KILN_CAT(int, PW)
#define PLANE2 ((PMV)(0, 2, 4, 6, 8, 10, 12, 14))
#define PZIP ((uint16)(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15))
#endif
#if defined(KILN_DT_BF16)
KILN_BF16_FROM_FLOATV(KILN_VW64)
#endif
/* a, with the window offset in o, becomes v (offset vo) where v is larger or NaN. */
#define POOL_STEP(a, o, v, vo)                                                           \
  {                                                                                      \
    const PMV m_ = isgreater((v), (a)) | isnan(v);                                       \
    (a) = select((a), (v), m_);                                                          \
    (o) = select((o), (PMV)(vo), m_);                                                    \
  }
/* The PW lanes of v to y[at ..] (lane by lane: every storage type, any offset). */
inline void
pool_store_lanes(global ST *y, ulong at, PTV v)
{
  T l[PW];
  KILN_CAT(vstore, PW)(v, 0, l);
  for (uint u = 0; u < PW; u++)
    KILN_STORE(y, at + u, l[u]);
}

kernel void
pool_tiled_rows(global const ST *x, ulong xoff, global ST *y, ulong yoff, global long *ix,
                ulong ixoff, uint total, uint ih, uint iw, uint oh, uint ow, uint kh, uint kw,
                uint flags)
{
  const uint rows = total / ow;
  for (uint row = (uint)get_global_id(0); row < rows; row += (uint)get_global_size(0)) {
    const uint oy = row % oh, pl = row / oh, qr = oy * kh * iw;
    global const ST *xp = x + xoff + (ulong)pl * ih * iw;
    const ulong i0 = (ulong)row * ow;
    uint ox = 0;
    if (kh == 2 && kw == 2 && ow >= PW) {
      /* whole vectors, the last one overlapping its neighbour where PW does not divide ow
       * (the outputs written twice are the same; element by element the few left over cost
       * as much as the vectors, at iw 56 in f32) */
      for (uint v = 0; v < ow; v += PW) {
        ox = min(v, ow - PW);
        const uint q = qr + 2 * ox;
        const KILN_CAT(T, KILN_VW64) r0 = KILN_VLOAD_ST(KILN_VW64, xp + q);
        const KILN_CAT(T, KILN_VW64) r1 = KILN_VLOAD_ST(KILN_VW64, xp + q + iw);
        PTV a = r0.even;
        PMV o = (PMV)0;
        if (flags & POOL_MAX) {
          POOL_STEP(a, o, r0.odd, 1)
          POOL_STEP(a, o, r1.even, (long)iw)
          POOL_STEP(a, o, r1.odd, (long)iw + 1)
        } else {
          a = (((a + r0.odd) + r1.even) + r1.odd) / (T)4; /* the scalar loop's order */
        }
        pool_store_lanes(y, yoff + i0 + ox, a);
        if (flags & POOL_IDX) {
          KILN_CAT(long, PW) iv = KILN_CAT(convert_long, PW)(o + PLANE2) + (long)q;
          KILN_CAT(vstore, PW)(iv, 0, ix + ixoff + i0 + ox);
        }
      }
      ox = ow;
    }
    for (; ox < ow; ox++) {
      uint mi;
      const T v = tiled_one(xp, qr + ox * kw, iw, kh, kw, flags, &mi);
      if ((flags & POOL_MAX) && (flags & POOL_IDX))
        ix[ixoff + i0 + ox] = (long)mi;
      KILN_STORE(y, yoff + i0 + ox, v);
    }
  }
}

/*
 * pool_fwd's CPU form for 2-D max pooling with stride 2 along x (no dilation there; the
 * ResNet stem's 3x3 stride 2 padding 1, say): a work-item per output row, the outputs whose
 * windows lie inside the row PW at a time (tap c of lane u reads element 2 (ox + u) - p + c:
 * the even lanes of one 64-byte load per tap and window row), the rest through pool_one. One
 * output per work-item took about 80 ns on PoCL. 1-D over the planes out.y rows.
 */
kernel void
pool_max_s2_rows(global const ST *x, ulong xoff, global ST *y, ulong yoff, global long *ix,
                 ulong ixoff, ulong planes, long4 in, long4 out, long4 k, long4 s, long4 p,
                 long4 d, uint flags)
{
  const ulong ivol = (ulong)(in.y * in.z), rows = planes * (ulong)out.y;
  /* vector steps start where every tap's load lies in the row: 2 ox - p.z >= 0 and
   * 2 ox - p.z + k.z - 1 + 2 PW - 1 <= in.z - 1 */
  const long olo = (p.z + 1) / 2, ohi = in.z - k.z - 2 * PW + 1 + p.z;
  for (ulong row = get_global_id(0); row < rows; row += get_global_size(0)) {
    const long oy = (long)(row % (ulong)out.y), y0 = oy * s.y - p.y;
    global const ST *xp = x + xoff + (row / (ulong)out.y) * ivol;
    const ulong i0 = row * (ulong)out.z;
    long ox = 0;
    while (ox < out.z) {
      if (ox >= olo && ohi >= 0 && 2 * ox <= ohi && ox + PW <= out.z) {
        PTV m = (PTV)(-INFINITY);
        PMV o = (PMV)(-1);
        for (long b = 0; b < k.y; b++) {
          const long yy = y0 + b * d.y;
          if (yy < 0 || yy >= in.y)
            continue;
          for (long c = 0; c < k.z; c++) {
            const long q = yy * in.z + 2 * ox - p.z + c;
            const PTV v = KILN_VLOAD_ST(KILN_VW64, xp + q).even;
            const PMV take = (o < (PMV)0) | isgreater(v, m) | isnan(v);
            m = select(m, v, take);
            o = select(o, (PMV)q + PLANE2, take);
          }
        }
        pool_store_lanes(y, yoff + i0 + ox, m);
        if (flags & POOL_IDX)
          KILN_CAT(vstore, PW)(KILN_CAT(convert_long, PW)(o), 0, ix + ixoff + i0 + ox);
        ox += PW;
      } else {
        long mi;
        const T v = pool_one(xp, 0, oy, ox, in, k, s, p, d, flags, &mi);
        KILN_STORE(y, yoff + i0 + ox, v);
        if (flags & POOL_IDX)
          ix[ixoff + i0 + ox] = mi;
        ox++;
      }
    }
  }
}

/*
 * The backward of tiling windows on CPU devices (pool_bwd_rows): a work-item per input row,
 * each input in at most one window (oy = yy / kh, ox = xx / kw), so the gradient of input q is
 * g[o] where ix[o] == q (max, POOL_MAX) or g[o] / (kh kw) (average), 0 outside every window;
 * pool_max_bwd's and pool_avg_bwd's results without their per-element window search (as the
 * forward's one output per work-item, one input per work-item with index divisions is slow on
 * PoCL). Windows 2 wide take 64-byte vectors of the row, the rest element by element. ix unused
 * for the average.
 */
kernel void
pool_bwd_rows(global const ST *g, ulong goff, global const long *ix, ulong ixoff, global ST *dx,
              ulong dxoff, uint rows, uint ih, uint iw, uint oh, uint ow, uint kh, uint kw,
              uint flags)
{
  const T div = (T)(kh * kw);
  for (uint row = (uint)get_global_id(0); row < rows; row += (uint)get_global_size(0)) {
    const uint yy = row % ih, pl = row / ih, oy = yy / kh;
    global ST *dr = dx + dxoff + (ulong)row * iw;
    uint xx = 0;
    if (oy < oh) {
      const ulong o0 = ((ulong)pl * oh + oy) * ow;
      global const ST *gp = g + goff + o0;
      global const long *ip = ix + ixoff + o0;
      const long qb = (long)yy * iw;
      uint ox = 0;
      if (kw == 2 && ow >= PW) {
        /* PW outputs a step: their gradients to the even and odd lanes of 2 PW inputs, the
         * last step overlapping the one before where PW does not divide ow (as
         * pool_tiled_rows) */
        for (uint v = 0; v < ow; v += PW) {
          ox = min(v, ow - PW);
          const PTV gv = KILN_VLOAD_ST(PW, gp + ox);
          PTV ev, od;
          if (flags & POOL_MAX) {
            const KILN_CAT(long, PW) iv = KILN_CAT(vload, PW)(0, ip + ox);
            const KILN_CAT(long, PW) qe = (long)(qb + 2 * ox) + KILN_CAT(convert_long, PW)(PLANE2);
            ev = select((PTV)0, gv, KILN_CAT(convert_, PMV)(iv == qe));
            od = select((PTV)0, gv, KILN_CAT(convert_, PMV)(iv == qe + 1));
          } else {
            ev = od = gv / div;
          }
          KILN_VSTORE_ST(KILN_VW64, shuffle2(ev, od, PZIP), dr + 2 * ox);
        }
        ox = ow;
        xx = 2 * ow;
      }
      for (; ox < ow; ox++) {
        const T gv = KILN_LOAD(gp, ox);
        if (flags & POOL_MAX) {
          const long iv = ip[ox];
          for (uint c = 0; c < kw; c++, xx++)
            KILN_STORE(dr, xx, iv == qb + (long)xx ? gv : (T)0);
        } else {
          for (uint c = 0; c < kw; c++, xx++)
            KILN_STORE(dr, xx, gv / div);
        }
      }
    }
    for (; xx < iw; xx++)
      KILN_STORE(dr, xx, (T)0);
  }
}

kernel void
pool_max_bwd(global const ST *g, ulong goff, global const long *ix, ulong ixoff, global ST *dx,
             ulong dxoff, ulong planes, long4 in, long4 out, long4 k, long4 s, long4 p, long4 d)
{
  const ulong ovol = (ulong)(out.x * out.y * out.z), ivol = (ulong)(in.x * in.y * in.z);
  PLANE_BEGIN(ivol, planes, pl)
  SPLIT(r, in, zz, yy, xx)
  long zl, zh, yl, yh, xl, xh;
  out_range(zz, s.x, p.x, (k.x - 1) * d.x + 1, out.x, &zl, &zh);
  out_range(yy, s.y, p.y, (k.y - 1) * d.y + 1, out.y, &yl, &yh);
  out_range(xx, s.z, p.z, (k.z - 1) * d.z + 1, out.z, &xl, &xh);
  global const ST *gp = g + goff + pl * ovol;
  global const long *ixp = ix + ixoff + pl * ovol;
  T acc = (T)0;
  for (long oz = zl; oz <= zh; oz++)
    for (long oy = yl; oy <= yh; oy++)
      for (long ox = xl; ox <= xh; ox++) {
        const long o = (oz * out.y + oy) * out.z + ox;
        if (ixp[o] == (long)r)
          acc += KILN_LOAD(gp, o);
      }
  KILN_STORE(dx, dxoff + pl * ivol + r, acc);
  PLANE_END
}

kernel void
pool_avg_bwd(global const ST *g, ulong goff, global ST *dx, ulong dxoff, ulong planes, long4 in,
             long4 out, long4 k, long4 s, long4 p, uint flags)
{
  const ulong ovol = (ulong)(out.x * out.y * out.z), ivol = (ulong)(in.x * in.y * in.z);
  PLANE_BEGIN(ivol, planes, pl)
  SPLIT(r, in, zz, yy, xx)
  long zl, zh, yl, yh, xl, xh;
  out_range(zz, s.x, p.x, k.x, out.x, &zl, &zh);
  out_range(yy, s.y, p.y, k.y, out.y, &yl, &yh);
  out_range(xx, s.z, p.z, k.z, out.z, &xl, &xh);
  global const ST *gp = g + goff + pl * ovol;
  T acc = (T)0;
  for (long oz = zl; oz <= zh; oz++) {
    long a0, a1, ap;
    avg_window(oz, in.x, k.x, s.x, p.x, &a0, &a1, &ap);
    for (long oy = yl; oy <= yh; oy++) {
      long b0, b1, bp;
      avg_window(oy, in.y, k.y, s.y, p.y, &b0, &b1, &bp);
      for (long ox = xl; ox <= xh; ox++) {
        long c0, c1, cp;
        avg_window(ox, in.z, k.z, s.z, p.z, &c0, &c1, &cp);
        const long div =
            (flags & POOL_INCLUDE_PAD) ? ap * bp * cp : (a1 - a0) * (b1 - b0) * (c1 - c0);
        acc += KILN_LOAD(gp, (oz * out.y + oy) * out.z + ox) / (T)div;
      }
    }
  }
  KILN_STORE(dx, dxoff + pl * ivol + r, acc);
  PLANE_END
}

/* Adaptive window of output o along an axis of n inputs and m outputs: [lo, hi). */
inline void
adaptive_window(long o, long n, long m, long *lo, long *hi)
{
  *lo = o * n / m;
  *hi = ((o + 1) * n + m - 1) / m;
}

kernel void
adaptive_fwd(global const ST *x, ulong xoff, global ST *y, ulong yoff, ulong planes, long4 in,
             long4 out)
{
  const ulong ovol = (ulong)(out.x * out.y * out.z), ivol = (ulong)(in.x * in.y * in.z);
  PLANE_BEGIN(ovol, planes, pl)
  SPLIT(r, out, oz, oy, ox)
  long zl, zh, yl, yh, xl, xh;
  adaptive_window(oz, in.x, out.x, &zl, &zh);
  adaptive_window(oy, in.y, out.y, &yl, &yh);
  adaptive_window(ox, in.z, out.z, &xl, &xh);
  global const ST *xp = x + xoff + pl * ivol;
  T acc = (T)0;
  for (long zz = zl; zz < zh; zz++)
    for (long yy = yl; yy < yh; yy++)
      for (long xx = xl; xx < xh; xx++)
        acc += KILN_LOAD(xp, (zz * in.y + yy) * in.z + xx);
  KILN_STORE(y, yoff + pl * ovol + r, acc / (T)((zh - zl) * (yh - yl) * (xh - xl)));
  PLANE_END
}

/* The outputs along an axis whose adaptive window holds q: [lo, hi). */
inline void
adaptive_range(long q, long n, long m, long *lo, long *hi)
{
  *lo = q * m / n;
  long b = ((q + 1) * m + n - 1) / n;
  *hi = b < m ? b : m;
}

kernel void
adaptive_bwd(global const ST *g, ulong goff, global ST *dx, ulong dxoff, ulong planes, long4 in,
             long4 out)
{
  const ulong ovol = (ulong)(out.x * out.y * out.z), ivol = (ulong)(in.x * in.y * in.z);
  PLANE_BEGIN(ivol, planes, pl)
  SPLIT(r, in, zz, yy, xx)
  long zl, zh, yl, yh, xl, xh;
  adaptive_range(zz, in.x, out.x, &zl, &zh);
  adaptive_range(yy, in.y, out.y, &yl, &yh);
  adaptive_range(xx, in.z, out.z, &xl, &xh);
  global const ST *gp = g + goff + pl * ovol;
  T acc = (T)0;
  for (long oz = zl; oz < zh; oz++) {
    long a0, a1;
    adaptive_window(oz, in.x, out.x, &a0, &a1);
    if (zz < a0 || zz >= a1)
      continue;
    for (long oy = yl; oy < yh; oy++) {
      long b0, b1;
      adaptive_window(oy, in.y, out.y, &b0, &b1);
      if (yy < b0 || yy >= b1)
        continue;
      for (long ox = xl; ox < xh; ox++) {
        long c0, c1;
        adaptive_window(ox, in.z, out.z, &c0, &c1);
        if (xx < c0 || xx >= c1)
          continue;
        acc += KILN_LOAD(gp, (oz * out.y + oy) * out.z + ox) /
               (T)((a1 - a0) * (b1 - b0) * (c1 - c0));
      }
    }
  }
  KILN_STORE(dx, dxoff + pl * ivol + r, acc);
  PLANE_END
}
