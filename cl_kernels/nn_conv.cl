/*
 * nn_conv family, convolution: kiln's direct kernels (forward, backward-data,
 * backward-weight), im2col and col2im for the GEMM route, the bias kernels and a plain batched
 * GEMM for builds without CLBlast.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); no tunables (the route is chosen on
 * the host, lib/ops/nn_conv.c). Tensors are `global ST *` through KILN_LOAD/KILN_STORE.
 *
 * Geometry (long4 arguments, .x depth, .y height, .z width; the host pads 1-D and 2-D with
 * leading axes of 1): ch = (N, C_in, C_out, groups); in, out: spatial sizes of the
 * convolution's input and output; k, s, p, d: kernel, stride, padding, dilation. x is
 * [N, C_in, in], y [N, C_out, out], w [C_out, C_in / groups, k]. Offsets are in elements.
 * Grids: "over V x R" is a 2-D grid, dimension 0 over the V positions of one plane (rounded up
 * to the work-group size; V < 2^31, split in 32-bit arithmetic), dimension 1 over R rows;
 * conv_bwd_weight and gemm_batched are 1-D with a grid-stride loop.
 *
 *   conv_fwd(x, xoff, w, woff, b, boff, y, yoff, ch, in, out, k, s, p, d, flags)
 *     over out x N * C_out.
 *     flags 1: add bias b.
 *   conv_bwd_data(g, goff, w, woff, b, boff, dx, dxoff, ch, in, out, k, s, p, d, flags)
 *     over in x N * C_in, gathering every (output, tap) that reads the element; flags 1: add b
 *     (the transposed convolution's bias).
 *   conv_bwd_weight(g, goff, x, xoff, dw, dwoff, ch, in, out, k, s, p, d)  over dw
 *   im2col(x, xoff, col, ch, in, out, k, s, p, d, n0, nc, grp, tr)   over out x nc * rows
 *     col [nc][rows = C_in/groups * kvol][L] (L = output volume), samples n0.. of group grp;
 *     tr 1: col [rows][nc][L] (the weight gradient's operand).
 *   grad_rows(g, goff, dst, ch, out, n0, nc, grp)   over out x C_out/groups * nc
 *     dst [C_out/groups][nc][L]: group grp's channels of samples n0.. of g [N, C_out, L].
 *   col2im(col, dx, dxoff, b, boff, ch, in, out, k, s, p, d, n0, nc, grp, flags)
 *     over in x nc * C_in/groups: the gather inverse, dx of samples n0.., channels of group
 *     grp; flags 1 adds b.
 *   bias_add(y, yoff, b, boff, nrow, C, L)   over L x nrow * C: y[n, c, l] += b[c]
 *   bias_grad(g, goff, db, dboff, N, C, L, scratch)  one work-group per channel
 *   gemm_batched(a, aoff, lda, astr, b, boff, ldb, bstr, c, coff, ldc, cstr, m, n, kk, batch,
 *                flags)  C = op(A) op(B) (+ C with flags 4); flags 1: A transposed, 2: B.
 * The backward kernels gather in a fixed order: deterministic results.
 */
#include "common.cl"

#define GRID_LOOP(i, n) for (ulong i = get_global_id(0); i < (n); i += get_global_size(0))

/* The work-item's position r in a plane of vol positions (none beyond vol), then a loop over
 * its rows t (dimension 1 of the grid strides over them: the host caps it at 65535 groups).
 * Closed by PLANE_END. */
#define PLANE_BEGIN(vol, nrows)                                                           \
  const uint r = (uint)get_global_id(0);                                                  \
  if (r >= (uint)(vol))                                                                   \
    return;                                                                               \
  for (ulong t = get_global_id(1); t < (ulong)(nrows); t += get_global_size(1)) {
#define PLANE_END }

/* Position r of a volume with axes (.x, .y, .z) of d as (Z_, Y_, X_). */
#define SPLIT(r, d, Z_, Y_, X_)                                                    \
  const uint Y_##w_ = (uint)(d).z, Y_##hw_ = (uint)(d).y * Y_##w_;               \
  const long Z_ = (long)((r) / Y_##hw_), Y_ = (long)((r) / Y_##w_ % (uint)(d).y), \
             X_ = (long)((r) % Y_##w_);

kernel void
conv_fwd(global const ST *x, ulong xoff, global const ST *w, ulong woff, global const ST *b,
         ulong boff, global ST *y, ulong yoff, long4 ch, long4 in, long4 out, long4 k, long4 s,
         long4 p, long4 d, uint flags)
{
  x += xoff;
  w += woff;
  y += yoff;
  const long cig = ch.y / ch.w, cog = ch.z / ch.w;
  const long ovol = out.x * out.y * out.z, ivol = in.x * in.y * in.z, kvol = k.x * k.y * k.z;
  {
    PLANE_BEGIN(ovol, ch.x * ch.z)
    SPLIT(r, out, oz, oy, ox)
    const ulong i = t * (ulong)ovol + r;
    const long co = (long)(t % (ulong)ch.z), n = (long)(t / (ulong)ch.z), grp = co / cog;
    const long z0 = oz * s.x - p.x, y0 = oy * s.y - p.y, x0 = ox * s.z - p.z;
    T acc = (flags & 1u) ? KILN_LOAD(b, boff + co) : (T)0;
    for (long cl = 0; cl < cig; cl++) {
      global const ST *xp = x + (n * ch.y + grp * cig + cl) * ivol;
      global const ST *wp = w + (co * cig + cl) * kvol;
      for (long a = 0; a < k.x; a++) {
        const long zz = z0 + a * d.x;
        if (zz < 0 || zz >= in.x)
          continue;
        for (long bb = 0; bb < k.y; bb++) {
          const long yy = y0 + bb * d.y;
          if (yy < 0 || yy >= in.y)
            continue;
          for (long c = 0; c < k.z; c++) {
            const long xx = x0 + c * d.z;
            if (xx < 0 || xx >= in.z)
              continue;
            acc += KILN_LOAD(xp, (zz * in.y + yy) * in.z + xx) *
                   KILN_LOAD(wp, (a * k.y + bb) * k.z + c);
          }
        }
      }
    }
    KILN_STORE(y, i, acc);
  }
  PLANE_END
}

/* The output index along an axis that tap j reads position q from, or -1. */
inline long
tap_out(long q, long j, long s, long p, long d, long nout)
{
  const long t = q + p - j * d;
  if (t < 0 || t % s)
    return -1;
  const long o = t / s;
  return o < nout ? o : -1;
}

kernel void
conv_bwd_data(global const ST *g, ulong goff, global const ST *w, ulong woff, global const ST *b,
              ulong boff, global ST *dx, ulong dxoff, long4 ch, long4 in, long4 out, long4 k,
              long4 s, long4 p, long4 d, uint flags)
{
  g += goff;
  w += woff;
  dx += dxoff;
  const long cig = ch.y / ch.w, cog = ch.z / ch.w;
  const long ovol = out.x * out.y * out.z, ivol = in.x * in.y * in.z, kvol = k.x * k.y * k.z;
  {
    PLANE_BEGIN(ivol, ch.x * ch.y)
    SPLIT(r, in, zz, yy, xx)
    const ulong i = t * (ulong)ivol + r;
    const long ci = (long)(t % (ulong)ch.y), n = (long)(t / (ulong)ch.y), grp = ci / cig,
               cl = ci % cig;
    T acc = (flags & 1u) ? KILN_LOAD(b, boff + ci) : (T)0;
    for (long a = 0; a < k.x; a++) {
      const long oz = tap_out(zz, a, s.x, p.x, d.x, out.x);
      if (oz < 0)
        continue;
      for (long bb = 0; bb < k.y; bb++) {
        const long oy = tap_out(yy, bb, s.y, p.y, d.y, out.y);
        if (oy < 0)
          continue;
        for (long c = 0; c < k.z; c++) {
          const long ox = tap_out(xx, c, s.z, p.z, d.z, out.z);
          if (ox < 0)
            continue;
          const long o = (oz * out.y + oy) * out.z + ox, kk = (a * k.y + bb) * k.z + c;
          for (long co = grp * cog; co < (grp + 1) * cog; co++)
            acc += KILN_LOAD(g, (n * ch.z + co) * ovol + o) *
                   KILN_LOAD(w, (co * cig + cl) * kvol + kk);
        }
      }
    }
    KILN_STORE(dx, i, acc);
  }
  PLANE_END
}

kernel void
conv_bwd_weight(global const ST *g, ulong goff, global const ST *x, ulong xoff, global ST *dw,
                ulong dwoff, long4 ch, long4 in, long4 out, long4 k, long4 s, long4 p, long4 d)
{
  g += goff;
  x += xoff;
  dw += dwoff;
  const long cig = ch.y / ch.w, cog = ch.z / ch.w;
  const long ovol = out.x * out.y * out.z, ivol = in.x * in.y * in.z, kvol = k.x * k.y * k.z;
  GRID_LOOP(i, (ulong)(ch.z * cig * kvol))
  {
    const long kk = (long)(i % (ulong)kvol), t = (long)(i / (ulong)kvol);
    const long cl = t % cig, co = t / cig, grp = co / cog;
    const long a = kk / (k.y * k.z), bb = kk / k.z % k.y, c = kk % k.z;
    T acc = (T)0;
    for (long n = 0; n < ch.x; n++) {
      global const ST *xp = x + (n * ch.y + grp * cig + cl) * ivol;
      global const ST *gp = g + (n * ch.z + co) * ovol;
      for (long oz = 0; oz < out.x; oz++) {
        const long zz = oz * s.x - p.x + a * d.x;
        if (zz < 0 || zz >= in.x)
          continue;
        for (long oy = 0; oy < out.y; oy++) {
          const long yy = oy * s.y - p.y + bb * d.y;
          if (yy < 0 || yy >= in.y)
            continue;
          for (long ox = 0; ox < out.z; ox++) {
            const long xx = ox * s.z - p.z + c * d.z;
            if (xx < 0 || xx >= in.z)
              continue;
            acc += KILN_LOAD(gp, (oz * out.y + oy) * out.z + ox) *
                   KILN_LOAD(xp, (zz * in.y + yy) * in.z + xx);
          }
        }
      }
    }
    KILN_STORE(dw, i, acc);
  }
}

kernel void
im2col(global const ST *x, ulong xoff, global ST *col, long4 ch, long4 in, long4 out, long4 k,
       long4 s, long4 p, long4 d, long n0, long nc, long grp, uint tr)
{
  x += xoff;
  const long cig = ch.y / ch.w;
  const long ovol = out.x * out.y * out.z, ivol = in.x * in.y * in.z, kvol = k.x * k.y * k.z;
  const long rows = cig * kvol;
  {
    PLANE_BEGIN(ovol, nc * rows)
    SPLIT(r, out, oz, oy, ox)
    const ulong i = t * (ulong)ovol + r;
    const uint row = tr ? (uint)(t / (ulong)nc) : (uint)(t % (ulong)rows),
               nb = tr ? (uint)(t % (ulong)nc) : (uint)(t / (ulong)rows);
    const uint cl = row / (uint)kvol, kk = row % (uint)kvol;
    SPLIT(kk, k, a, bb, c)
    const long zz = oz * s.x - p.x + a * d.x, yy = oy * s.y - p.y + bb * d.y,
               xx = ox * s.z - p.z + c * d.z;
    T v = (T)0;
    if (zz >= 0 && zz < in.x && yy >= 0 && yy < in.y && xx >= 0 && xx < in.z)
      v = KILN_LOAD(x, ((n0 + nb) * ch.y + grp * cig + cl) * ivol + (zz * in.y + yy) * in.z + xx);
    KILN_STORE(col, i, v);
  }
  PLANE_END
}

kernel void
grad_rows(global const ST *g, ulong goff, global ST *dst, long4 ch, long4 out, long n0, long nc,
          long grp)
{
  const long cog = ch.z / ch.w;
  const ulong ovol = (ulong)(out.x * out.y * out.z);
  PLANE_BEGIN(ovol, nc * cog)
  const long co = (long)(t / (ulong)nc), nb = (long)(t % (ulong)nc);
  KILN_STORE(dst, t * ovol + r,
             KILN_LOAD(g, goff + (ulong)((n0 + nb) * ch.z + grp * cog + co) * ovol + r));
  PLANE_END
}

kernel void
col2im(global const ST *col, global ST *dx, ulong dxoff, global const ST *b, ulong boff, long4 ch,
       long4 in, long4 out, long4 k, long4 s, long4 p, long4 d, long n0, long nc, long grp,
       uint flags)
{
  dx += dxoff;
  const long cig = ch.y / ch.w;
  const long ovol = out.x * out.y * out.z, ivol = in.x * in.y * in.z, kvol = k.x * k.y * k.z;
  {
    PLANE_BEGIN(ivol, nc * cig)
    SPLIT(r, in, zz, yy, xx)
    const ulong q = r;
    const long cl = (long)(t % (ulong)cig), nb = (long)(t / (ulong)cig), ci = grp * cig + cl;
    global const ST *cp = col + (nb * cig + cl) * kvol * ovol;
    T acc = (flags & 1u) ? KILN_LOAD(b, boff + ci) : (T)0;
    for (long a = 0; a < k.x; a++) {
      const long oz = tap_out(zz, a, s.x, p.x, d.x, out.x);
      if (oz < 0)
        continue;
      for (long bb = 0; bb < k.y; bb++) {
        const long oy = tap_out(yy, bb, s.y, p.y, d.y, out.y);
        if (oy < 0)
          continue;
        for (long c = 0; c < k.z; c++) {
          const long ox = tap_out(xx, c, s.z, p.z, d.z, out.z);
          if (ox >= 0)
            acc += KILN_LOAD(cp, ((a * k.y + bb) * k.z + c) * ovol + (oz * out.y + oy) * out.z + ox);
        }
      }
    }
    KILN_STORE(dx, ((n0 + nb) * ch.y + ci) * ivol + q, acc);
  }
  PLANE_END
}

kernel void
bias_add(global ST *y, ulong yoff, global const ST *b, ulong boff, ulong nrow, ulong C, ulong L)
{
  PLANE_BEGIN(L, nrow * C)
  const ulong i = yoff + t * L + r;
  KILN_STORE(y, i, KILN_LOAD(y, i) + KILN_LOAD(b, boff + t % C));
  PLANE_END
}

/* One work-group per channel: a strided sum over N * L, then a tree in local memory. */
kernel void
bias_grad(global const ST *g, ulong goff, global ST *db, ulong dboff, ulong N, ulong C, ulong L,
          local T *sh)
{
  g += goff;
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  for (ulong c = get_group_id(0); c < C; c += get_num_groups(0)) {
    T acc = (T)0;
    for (ulong n = 0; n < N; n++)
      for (ulong l = lid; l < L; l += lsz)
        acc += KILN_LOAD(g, (n * C + c) * L + l);
    sh[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = lsz / 2; h > 0; h /= 2) {
      if (lid < h)
        sh[lid] += sh[lid + h];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
      KILN_STORE(db, dboff + c, sh[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

kernel void
gemm_batched(global const ST *a, ulong aoff, ulong lda, ulong astr, global const ST *b, ulong boff,
             ulong ldb, ulong bstr, global ST *c, ulong coff, ulong ldc, ulong cstr, ulong m,
             ulong n, ulong kk, ulong batch, uint flags)
{
  GRID_LOOP(i, batch * m * n)
  {
    const ulong j = i % n, r = i / n % m, e = i / (m * n);
    global const ST *ap = a + aoff + e * astr;
    global const ST *bp = b + boff + e * bstr;
    T acc = (T)0;
    for (ulong l = 0; l < kk; l++) {
      const T av = (flags & 1u) ? KILN_LOAD(ap, l * lda + r) : KILN_LOAD(ap, r * lda + l);
      const T bv = (flags & 2u) ? KILN_LOAD(bp, j * ldb + l) : KILN_LOAD(bp, l * ldb + j);
      acc += av * bv;
    }
    const ulong ci = coff + e * cstr + r * ldc + j;
    if (flags & 4u)
      acc += KILN_LOAD(c, ci);
    KILN_STORE(c, ci, acc);
  }
}

/*
 * conv_igemm: the forward pass as an implicit GEMM, the columns built in local memory and
 * never stored. Per (sample, group): Y [C_out/g, L] = W_g [C_out/g, K] x col [K, L] with
 * K = C_in/g * kvol. A 16 x 16 work-group computes a CONV_TM x CONV_TN tile of Y
 * (CONV_TM = 16 CONV_RM rows, CONV_TN = 16 CONV_RN columns: a block of CONV_RM x CONV_RN
 * adjacent outputs per work-item, so that its local reads are contiguous vectors),
 * stepping through K in slices of 16: a slice of W and the matching slice of columns
 * (gathered from x with the padding as zeros) go to local memory, then every work-item
 * accumulates its outputs in registers. Grid: (ceil(L / CONV_TN) 16, ceil(C_out/g / CONV_TM)
 * 16, N groups), local (16, 16, 1). flags 1: add bias. Local arguments As (16 CONV_TM T),
 * Bs (16 CONV_TN T), tab (16 long4). Build options: KILN_CONV_RM, KILN_CONV_RN (default 4
 * and 4).
 */
#ifndef KILN_CONV_RM
#define KILN_CONV_RM 4
#endif
#ifndef KILN_CONV_RN
#define KILN_CONV_RN 4
#endif
#define CONV_TM (16 * KILN_CONV_RM)
#define CONV_TN (16 * KILN_CONV_RN)
#define CONV_TK 16

kernel __attribute__((reqd_work_group_size(16, 16, 1))) void
conv_igemm(global const ST *x, ulong xoff, global const ST *w, ulong woff, global const ST *b,
           ulong boff, global ST *y, ulong yoff, long4 ch, long4 in, long4 out, long4 k, long4 s,
           long4 p, long4 d, uint flags, local T *As, local T *Bs, local long4 *tab)
{
  /* As [CONV_TK][CONV_TM], Bs [CONV_TK][CONV_TN] and tab, the slice's taps (channel, then the
   * three dilated offsets; channel -1 past K), split once per slice instead of once per
   * loaded element: arguments, not kernel-scope arrays, because some implementations (the
   * oclgrind simulator) count every kernel's local arrays against each launch. */
  const uint tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
  const uint cig = (uint)(ch.y / ch.w), cog = (uint)(ch.z / ch.w);
  const uint L = (uint)(out.x * out.y * out.z), kvol = (uint)(k.x * k.y * k.z);
  const uint K = cig * kvol, khw = (uint)(k.y * k.z), kw = (uint)k.z;
  /* Dimension 2 of the grid strides over (sample, group) pairs (the host caps it at 65535):
   * every work-item of a group takes the same trips, so the barriers stay uniform. */
  for (ulong ng = get_global_id(2); ng < (ulong)(ch.x * ch.w); ng += get_global_size(2)) {
  const ulong n = ng / (ulong)ch.w, grp = ng % (ulong)ch.w;
  const uint l0 = (uint)get_group_id(0) * CONV_TN, m0 = (uint)get_group_id(1) * CONV_TM;
  const ulong ivol = (ulong)(in.x * in.y * in.z);
  global const ST *xp = x + xoff + (n * (ulong)ch.y + grp * cig) * ivol;
  global const ST *wp = w + woff + (grp * cog) * (ulong)K;

  /* The columns this work-item loads: tid % CONV_TN, rows tid / CONV_TN + j * (256 / CONV_TN)
   * of each slice; their output positions do not change over K, so split them once. */
  const uint bcol = tid % CONV_TN, brow0 = tid / CONV_TN;
  const uint bl = l0 + bcol;
  long bz0 = 0, by0 = 0, bx0 = 0;
  const int bvalid = bl < L;
  if (bvalid) {
    SPLIT(bl, out, oz, oy, ox)
    bz0 = oz * s.x - p.x;
    by0 = oy * s.y - p.y;
    bx0 = ox * s.z - p.z;
  }

  T acc[KILN_CONV_RM][KILN_CONV_RN];
  for (int i = 0; i < KILN_CONV_RM; i++)
    for (int j = 0; j < KILN_CONV_RN; j++)
      acc[i][j] = (T)0;

  for (uint k0 = 0; k0 < K; k0 += CONV_TK) {
    if (tid < CONV_TK) {
      const uint kg = k0 + tid;
      long4 e = (long4)(-1, 0, 0, 0);
      if (kg < K) {
        const uint tap = kg % kvol;
        e = (long4)(kg / kvol, (long)(tap / khw) * d.x, (long)(tap / kw % (uint)k.y) * d.y,
                    (long)(tap % kw) * d.z);
      }
      tab[tid] = e;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* W slice: CONV_TM x 16, stored transposed (As[kk][m]). */
    for (uint e = tid; e < CONV_TM * CONV_TK; e += 256) {
      const uint mm = e / CONV_TK, kk = e % CONV_TK;
      const uint row = m0 + mm, kg = k0 + kk;
      As[kk * CONV_TM + mm] = row < cog && kg < K ? KILN_LOAD(wp, (ulong)row * K + kg) : (T)0;
    }
    /* Column slice: 16 x CONV_TN, gathered from x. */
    for (uint r = brow0; r < CONV_TK; r += 256 / CONV_TN) {
      const long4 e = tab[r];
      T v = (T)0;
      if (bvalid && e.x >= 0) {
        const long zz = bz0 + e.y, yy = by0 + e.z, xx = bx0 + e.w;
        if (zz >= 0 && zz < in.x && yy >= 0 && yy < in.y && xx >= 0 && xx < in.z)
          v = KILN_LOAD(xp, (ulong)e.x * ivol + (ulong)((zz * in.y + yy) * in.z + xx));
      }
      Bs[r * CONV_TN + bcol] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (uint kk = 0; kk < CONV_TK; kk++) {
      T av[KILN_CONV_RM], bv[KILN_CONV_RN];
      for (int i = 0; i < KILN_CONV_RM; i++)
        av[i] = As[kk * CONV_TM + ty * KILN_CONV_RM + i];
      for (int j = 0; j < KILN_CONV_RN; j++)
        bv[j] = Bs[kk * CONV_TN + tx * KILN_CONV_RN + j];
      for (int i = 0; i < KILN_CONV_RM; i++)
        for (int j = 0; j < KILN_CONV_RN; j++)
          acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  global ST *yp = y + yoff + (n * (ulong)ch.z + grp * cog) * (ulong)L;
  for (int i = 0; i < KILN_CONV_RM; i++) {
    const uint row = m0 + ty * KILN_CONV_RM + i;
    if (row >= cog)
      continue;
    const T bias = (flags & 1u) ? KILN_LOAD(b, boff + grp * cog + row) : (T)0;
    for (int j = 0; j < KILN_CONV_RN; j++) {
      const uint col = l0 + tx * KILN_CONV_RN + j;
      if (col < L)
        KILN_STORE(yp, (ulong)row * L + col, acc[i][j] + bias);
    }
  }
  }
}

/*
 * conv_igemm_bwd: the backward-data pass (and the transposed convolution) as an implicit GEMM,
 * conv_igemm's tiling with the roles turned: per (sample, group)
 * dX [C_in/g, in volume] = W_g^T [C_in/g, K'] x G [K', in volume] with K' = C_out/g * kvol,
 * where column q of G holds, for each (output channel, tap), the gradient at the output that
 * tap reads q from (0 where no output does: padding, stride gaps, past the end). flags 1: add
 * b per input channel (the transposed convolution's bias). Same grid shape over
 * (in volume, C_in/g, N groups).
 */
kernel __attribute__((reqd_work_group_size(16, 16, 1))) void
conv_igemm_bwd(global const ST *g, ulong goff, global const ST *w, ulong woff, global const ST *b,
               ulong boff, global ST *dx, ulong dxoff, long4 ch, long4 in, long4 out, long4 k,
               long4 s, long4 p, long4 d, uint flags, local T *As, local T *Bs,
               local long4 *tab)
{
  const uint tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
  const uint cig = (uint)(ch.y / ch.w), cog = (uint)(ch.z / ch.w);
  const uint V = (uint)(in.x * in.y * in.z), kvol = (uint)(k.x * k.y * k.z);
  const uint K = cog * kvol, khw = (uint)(k.y * k.z), kw = (uint)k.z;
  const ulong ovol = (ulong)(out.x * out.y * out.z);
  const uint q0 = (uint)get_group_id(0) * CONV_TN, m0 = (uint)get_group_id(1) * CONV_TM;
  const uint bcol = tid % CONV_TN, brow0 = tid / CONV_TN;
  const uint bq = q0 + bcol;
  const int bvalid = bq < V;
  long bz = 0, by = 0, bx = 0;
  if (bvalid) {
    SPLIT(bq, in, zz, yy, xx)
    bz = zz + p.x;
    by = yy + p.y;
    bx = xx + p.z;
  }
  for (ulong ng = get_global_id(2); ng < (ulong)(ch.x * ch.w); ng += get_global_size(2)) {
    const ulong n = ng / (ulong)ch.w, grp = ng % (ulong)ch.w;
    global const ST *gp = g + goff + (n * (ulong)ch.z + grp * cog) * ovol;
    global const ST *wp = w + woff + grp * cog * (ulong)cig * kvol;
    T acc[KILN_CONV_RM][KILN_CONV_RN];
    for (int i = 0; i < KILN_CONV_RM; i++)
      for (int j = 0; j < KILN_CONV_RN; j++)
        acc[i][j] = (T)0;
    for (uint k0 = 0; k0 < K; k0 += CONV_TK) {
      if (tid < CONV_TK) {
        const uint kg = k0 + tid;
        long4 e = (long4)(-1, 0, 0, 0);
        if (kg < K) {
          const uint tap = kg % kvol;
          e = (long4)(kg / kvol, (long)(tap / khw) * d.x, (long)(tap / kw % (uint)k.y) * d.y,
                      (long)(tap % kw) * d.z);
        }
        tab[tid] = e;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      /* W^T slice: As[kk][m] = W[co][m][tap] for kk = (co, tap). */
      for (uint e = tid; e < CONV_TM * CONV_TK; e += 256) {
        const uint mm = e / CONV_TK, kk = e % CONV_TK;
        const uint row = m0 + mm, kg = k0 + kk;
        T v = (T)0;
        if (row < cig && kg < K) {
          const uint co = kg / kvol, tap = kg % kvol;
          v = KILN_LOAD(wp, ((ulong)co * cig + row) * kvol + tap);
        }
        As[kk * CONV_TM + mm] = v;
      }
      /* Gradient slice: the output each tap reads this column's position from. */
      for (uint r = brow0; r < CONV_TK; r += 256 / CONV_TN) {
        const long4 e = tab[r];
        T v = (T)0;
        if (bvalid && e.x >= 0) {
          const long tz = bz - e.y, ty_ = by - e.z, tx_ = bx - e.w;
          if (tz >= 0 && ty_ >= 0 && tx_ >= 0 && tz % s.x == 0 && ty_ % s.y == 0 &&
              tx_ % s.z == 0) {
            const long oz = tz / s.x, oy = ty_ / s.y, ox = tx_ / s.z;
            if (oz < out.x && oy < out.y && ox < out.z)
              v = KILN_LOAD(gp, (ulong)e.x * ovol + (ulong)((oz * out.y + oy) * out.z + ox));
          }
        }
        Bs[r * CONV_TN + bcol] = v;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
      for (uint kk = 0; kk < CONV_TK; kk++) {
        T av[KILN_CONV_RM], bv[KILN_CONV_RN];
        for (int i = 0; i < KILN_CONV_RM; i++)
          av[i] = As[kk * CONV_TM + ty * KILN_CONV_RM + i];
        for (int j = 0; j < KILN_CONV_RN; j++)
          bv[j] = Bs[kk * CONV_TN + tx * KILN_CONV_RN + j];
        for (int i = 0; i < KILN_CONV_RM; i++)
          for (int j = 0; j < KILN_CONV_RN; j++)
            acc[i][j] = fma(av[i], bv[j], acc[i][j]);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    global ST *xp = dx + dxoff + (n * (ulong)ch.y + grp * cig) * (ulong)V;
    for (int i = 0; i < KILN_CONV_RM; i++) {
      const uint row = m0 + ty * KILN_CONV_RM + i;
      if (row >= cig)
        continue;
      const T bias = (flags & 1u) ? KILN_LOAD(b, boff + grp * cig + row) : (T)0;
      for (int j = 0; j < KILN_CONV_RN; j++) {
        const uint col = q0 + tx * KILN_CONV_RN + j;
        if (col < V)
          KILN_STORE(xp, (ulong)row * V + col, acc[i][j] + bias);
      }
    }
  }
}
