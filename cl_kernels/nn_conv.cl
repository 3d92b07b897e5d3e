/*
 * nn_conv family, convolution: kiln's direct kernels (forward, backward-data,
 * backward-weight), im2col and col2im for the GEMM route, the bias kernels, a plain batched
 * GEMM for builds without CLBlast, and the implicit GEMM (conv_pack, conv_igemm,
 * conv_igemm_bwd, conv_igemm_wgrad; described where they are defined, at the end).
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1) and the implicit GEMM's tile
 * (KILN_CONV_RM, KILN_CONV_RN, KILN_CONV_WX: the `tile` of the conv tuner family; the route is
 * chosen on the host, lib/ops/nn_conv.c). Tensors are `global ST *` through KILN_LOAD/KILN_STORE.
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
 *   im2col_lines(the same arguments)   its CPU form, 1-D over lines of out.z positions
 *     col [nc][rows = C_in/groups * kvol][L] (L = output volume), samples n0.. of group grp;
 *     tr 1: col [rows][nc][L] (the weight gradient's operand).
 *   grad_rows(g, goff, dst, ch, out, n0, nc, grp)   over out x C_out/groups * nc
 *     dst [C_out/groups][nc][L]: group grp's channels of samples n0.. of g [N, C_out, L].
 *   col2im(col, dx, dxoff, b, boff, ch, in, out, k, s, p, d, n0, nc, grp, flags)
 *     over in x nc * C_in/groups: the gather inverse, dx of samples n0.., channels of group
 *     grp; flags 1 adds b.
 *   col2im_lines(the same arguments)   its CPU form, 1-D over lines of in.z positions
 *   bias_add(y, yoff, b, boff, nrow, C, L)   over L x nrow * C: y[n, c, l] += b[c]
 *   bias_grad(g, goff, db, dboff, N, C, L, scratch)  one work-group per channel
 *   sum_parts(part, n, nparts, dst, doff, base, acc)   1-D: dst[base + i] (+)= the sum over p
 *     of part[p n + i]
 *     (the backward-weight GEMM's split partial sums, added in order)
 *   gemm_batched(a, aoff, lda, astr, b, boff, ldb, bstr, c, coff, ldc, cstr, m, n, kk, batch,
 *                flags)  C = op(A) op(B) (+ C with flags 4); flags 1: A transposed, 2: B.
 * The backward kernels gather in a fixed order: deterministic results.
 */
#include "common.cl"
#include "nn_planes.clh"

#define GRID_LOOP(i, n) for (ulong i = get_global_id(0); i < (n); i += get_global_size(0))

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
    PLANE_BEGIN(ovol, ch.x * ch.z, t)
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
    PLANE_BEGIN(ivol, ch.x * ch.y, t)
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
    PLANE_BEGIN(ovol, nc * rows, t)
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

/*
 * im2col's CPU form: a work-item per line of a column row (out.z positions along x), the
 * source line's address and the row's taps computed once per line; the line copies with a
 * bounds test per element (one work-item per element spent most of its time in the divisions
 * of its indices on PoCL). 1-D over nc * rows * out.x * out.y lines.
 */
kernel void
im2col_lines(global const ST *x, ulong xoff, global ST *col, long4 ch, long4 in, long4 out,
             long4 k, long4 s, long4 p, long4 d, long n0, long nc, long grp, uint tr)
{
  x += xoff;
  const long cig = ch.y / ch.w;
  const long ovol = out.x * out.y * out.z, ivol = in.x * in.y * in.z, kvol = k.x * k.y * k.z;
  const ulong rows = (ulong)(cig * kvol), per = (ulong)(out.x * out.y);
  for (ulong ln = get_global_id(0); ln < (ulong)nc * rows * per; ln += get_global_size(0)) {
    const ulong t = ln / per, q = ln % per;
    const long oz = (long)(q / (ulong)out.y), oy = (long)(q % (ulong)out.y);
    const ulong row = tr ? t / (ulong)nc : t % rows, nb = tr ? t % (ulong)nc : t / rows;
    const long cl = (long)(row / (ulong)kvol), kk = (long)(row % (ulong)kvol);
    const long a = kk / (k.y * k.z), bb = kk / k.z % k.y, c = kk % k.z;
    const long zz = oz * s.x - p.x + a * d.x, yy = oy * s.y - p.y + bb * d.y;
    global ST *dst = col + t * (ulong)ovol + (ulong)((oz * out.y + oy) * out.z);
    const int in_plane = zz >= 0 && zz < in.x && yy >= 0 && yy < in.y;
    global const ST *src =
        x + (((long)n0 + (long)nb) * ch.y + grp * cig + cl) * ivol + (zz * in.y + yy) * in.z;
    for (long ox = 0; ox < out.z; ox++) {
      const long xx = ox * s.z - p.z + c * d.z;
      KILN_STORE(dst, ox, in_plane && xx >= 0 && xx < in.z ? KILN_LOAD(src, xx) : (T)0);
    }
  }
}

kernel void
grad_rows(global const ST *g, ulong goff, global ST *dst, long4 ch, long4 out, long n0, long nc,
          long grp)
{
  const long cog = ch.z / ch.w;
  const ulong ovol = (ulong)(out.x * out.y * out.z);
  PLANE_BEGIN(ovol, nc * cog, t)
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
    PLANE_BEGIN(ivol, nc * cig, t)
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

/*
 * col2im's CPU form: a work-item per line of dx (in.z positions along x), in chunks of
 * C2I_CHUNK positions summed in private memory tap row by tap row, so that the depth and
 * height taps are resolved once per line rather than once per element (one work-item per
 * element spent most of its time in tap_out's divisions on PoCL). Stride 1 along x needs no
 * division at all. 1-D over nc * C_in/groups * in.x * in.y lines.
 */
#define C2I_CHUNK 64
kernel void
col2im_lines(global const ST *col, global ST *dx, ulong dxoff, global const ST *b, ulong boff,
             long4 ch, long4 in, long4 out, long4 k, long4 s, long4 p, long4 d, long n0, long nc,
             long grp, uint flags)
{
  dx += dxoff;
  const long cig = ch.y / ch.w;
  const long ovol = out.x * out.y * out.z, ivol = in.x * in.y * in.z, kvol = k.x * k.y * k.z;
  const ulong per = (ulong)(in.x * in.y);
  for (ulong ln = get_global_id(0); ln < (ulong)(nc * cig) * per; ln += get_global_size(0)) {
    const ulong t = ln / per, q = ln % per;
    const long zz = (long)(q / (ulong)in.y), yy = (long)(q % (ulong)in.y);
    const long cl = (long)(t % (ulong)cig), nb = (long)(t / (ulong)cig), ci = grp * cig + cl;
    global const ST *cp = col + (nb * cig + cl) * kvol * ovol;
    global ST *dst = dx + ((n0 + nb) * ch.y + ci) * ivol + (zz * in.y + yy) * in.z;
    const T bias = (flags & 1u) ? KILN_LOAD(b, boff + ci) : (T)0;
    for (long x0 = 0; x0 < in.z; x0 += C2I_CHUNK) {
      const long nx = min((long)C2I_CHUNK, in.z - x0);
      T acc[C2I_CHUNK];
      for (long i = 0; i < nx; i++)
        acc[i] = bias;
      for (long a = 0; a < k.x; a++) {
        const long oz = tap_out(zz, a, s.x, p.x, d.x, out.x);
        if (oz < 0)
          continue;
        for (long bb = 0; bb < k.y; bb++) {
          const long oy = tap_out(yy, bb, s.y, p.y, d.y, out.y);
          if (oy < 0)
            continue;
          for (long c = 0; c < k.z; c++) {
            global const ST *cr = cp + ((a * k.y + bb) * k.z + c) * ovol + (oz * out.y + oy) * out.z;
            if (s.z == 1) {
              /* ox = xx + p - c d, within [0, out.z) */
              const long sh = p.z - c * d.z;
              const long lo = max(0L, -sh - x0), hi = min(nx, out.z - sh - x0);
              for (long i = lo; i < hi; i++)
                acc[i] += KILN_LOAD(cr, x0 + i + sh);
            } else {
              for (long i = 0; i < nx; i++) {
                const long ox = tap_out(x0 + i, c, s.z, p.z, d.z, out.z);
                if (ox >= 0)
                  acc[i] += KILN_LOAD(cr, ox);
              }
            }
          }
        }
      }
      for (long i = 0; i < nx; i++)
        KILN_STORE(dst, x0 + i, acc[i]);
    }
  }
}

kernel void
bias_add(global ST *y, ulong yoff, global const ST *b, ulong boff, ulong nrow, ulong C, ulong L)
{
  PLANE_BEGIN(L, nrow * C, t)
  const ulong i = yoff + t * L + r;
  KILN_STORE(y, i, KILN_LOAD(y, i) + KILN_LOAD(b, boff + t % C));
  PLANE_END
}

/* dst[i] (+ dst[i] with acc) = the sum of part[p * n + i] over p, in order. */
kernel void
sum_parts(global const T *part, ulong n, ulong nparts, global ST *dst, ulong doff, ulong base,
          uint acc)
{
  dst += doff + base;
  GRID_LOOP(i, n)
  {
    T v = acc ? KILN_LOAD(dst, i) : (T)0;
    for (ulong p = 0; p < nparts; p++)
      v += part[p * n + i];
    KILN_STORE(dst, i, v);
  }
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
 * Route 4, kiln's implicit GEMM: conv_pack, then conv_igemm (forward) or conv_igemm_bwd
 * (backward-data and the transposed convolution). Per group, C [M, P] = A [M, K] x B [K, P]:
 *   forward:       M = C_out/g, P = N * out volume, K = C_in/g * kvol,
 *                  B [(ci, tap), (n, o)] = x[n, ci, the input position tap reads for o]
 *   backward-data: M = C_in/g,  P = N * in volume,  K = C_out/g * kvol,
 *                  B [(co, tap), (n, q)] = grad[n, co, the output that tap reads q from]
 * with zeros for padding (and, backward, stride gaps and positions past the end). The columns
 * run over the whole batch, so a tile never straddles the end of a small image half empty.
 *
 *   conv_pack(w, woff, tab, pk, pkoff, ch, sd, k, d, bwd, K, Kpad, Mpad)   1-D, grid loop
 *     A packed as pk [G][Kpad][Mpad] (rows of M contiguous, zeros past K and M) and the tap
 *     table tab [Kpad] (int4: source offset, dilated tap offsets z, y, x; .x -1 past K), so
 *     the GEMM kernels read both with plain coalesced loads and split no index per element.
 *   conv_igemm(src, soff, tab, pk, pkoff, b, boff, dst, doff, ch, cd, sd, s, p, flags, Kpad,
 *              Mpad, As, Bs), conv_igemm_bwd (same arguments)
 *     ch = (N, source channels, destination channels, groups); cd, sd: the spatial sizes of
 *     the columns (destination) and of the gathered source; flags 1: add b per destination
 *     channel; 2 (backward): every stride is 1 (no divisibility tests). Grid: dimension 0
 *     ceil(P / CONV_TN) groups of 256 items, dimension 1 over ceil(M / CONV_TM) * G tiles
 *     (capped by the host at 65535 groups and looped over). As, Bs: local, CONV_TK CONV_TM and
 *     CONV_TK CONV_TN elements. The host guarantees P, K and a group's source volume below
 *     2^31 (32-bit index arithmetic throughout).
 * The three GEMM kernels (these two and conv_igemm_wgrad below) are one template,
 * conv_igemm.clh, stamped once per pass: one tile loop, one register pipeline, one slice
 * multiply-add, and per pass only what is gathered and where the results go.
 *
 * A work-group of 256 items computes a CONV_TM x CONV_TN tile: item (tx, ty) of the
 * KILN_CONV_WX x (WY = 256 / KILN_CONV_WX) grid owns KILN_CONV_RM x KILN_CONV_RN results in 4 x 4
 * blocks (rows ty * 4 + r * 4 WY, columns tx * 4 + c * 4 WX), so that the local reads of a
 * warp are contiguous 4-vectors (conflict-free on banked local memory; the previous kernel's
 * stride-8 scalar reads were 4-way bank conflicts) and each vector feeds 4 or 8 multiply-adds. The next K slice's global loads are
 * issued before the current slice is multiplied (software pipelining through registers).
 * Build options (tile variants, lib/ops/nn_conv.c): KILN_CONV_RM, KILN_CONV_RN (multiples of
 * 4), KILN_CONV_WX (items along P; CONV_TN must divide 256).
 */
#ifndef KILN_CONV_RM
#define KILN_CONV_RM 4
#endif
#ifndef KILN_CONV_RN
#define KILN_CONV_RN 4
#endif
#ifndef KILN_CONV_WX
#define KILN_CONV_WX 16
#endif
#define CONV_WY (256 / KILN_CONV_WX)
#define CONV_TM (CONV_WY * KILN_CONV_RM)
#define CONV_TN (KILN_CONV_WX * KILN_CONV_RN)
#define CONV_TK 16
#define CONV_AL (CONV_TK * CONV_TM / 256) /* A elements an item loads per slice */
#define CONV_BL (CONV_TK * CONV_TN / 256) /* B elements an item loads per slice */
#define CONV_BR (256 / CONV_TN)           /* rows between an item's B elements */
#if KILN_CONV_RM % 4 || KILN_CONV_RN % 4 || 256 % KILN_CONV_WX || 256 % CONV_TN || \
    (CONV_TK * CONV_TM) % 256
#error "conv_igemm: unsupported tile (KILN_CONV_RM, KILN_CONV_RN, KILN_CONV_WX)"
#endif
#define CT4 KILN_CAT(T, 4)

kernel void
conv_pack(global const ST *w, ulong woff, global int4 *tab, global T *pk, ulong pkoff, long4 ch,
          long4 sd, long4 k, long4 d, uint bwd, uint K, uint Kpad, uint Mpad)
{
  w += woff;
  pk += pkoff;
  const uint G = (uint)ch.w, M = (uint)(ch.z / ch.w), rc = (uint)(ch.y / ch.w);
  const uint kvol = (uint)(k.x * k.y * k.z), khw = (uint)(k.y * k.z), kw = (uint)k.z;
  const ulong npk = (ulong)G * Kpad * Mpad;
  GRID_LOOP(i, Kpad + npk)
  {
    if (i < Kpad) {
      const uint kk = (uint)i;
      int4 e = (int4)(-1, 0, 0, 0);
      if (kk < K) {
        const uint c = kk / kvol, tap = kk % kvol;
        const int dz = (int)(tap / khw) * (int)d.x, dy = (int)(tap / kw % (uint)k.y) * (int)d.y,
                  dx = (int)(tap % kw) * (int)d.z;
        const int sv = (int)(sd.x * sd.y * sd.z);
        /* Forward: the whole offset of the tap (the column adds its base); backward: the
         * channel only (the output position needs a division by the stride). */
        e = (int4)((int)c * sv + (bwd ? 0 : (dz * (int)sd.y + dy) * (int)sd.z + dx), dz, dy, dx);
      }
      tab[kk] = e;
    } else {
      const ulong e = i - Kpad;
      const uint m = (uint)(e % Mpad), kk = (uint)(e / Mpad % Kpad), grp = (uint)(e / Mpad / Kpad);
      T v = (T)0;
      if (kk < K && m < M) {
        const uint c = kk / kvol, tap = kk % kvol;
        /* w is [C_out][C_in/g][kvol]: forward rows are output channels, backward rows input
         * channels of the group. */
        const ulong wi = bwd ? (((ulong)grp * rc + c) * M + m) * kvol + tap
                             : (((ulong)grp * M + m) * rc + c) * kvol + tap;
        v = KILN_LOAD(w, wi);
      }
      pk[e] = v;
    }
  }
}

/* The B element of row kk of the current column (zero outside the source). */
inline T
igemm_gather(const int bwd, global const ST *sp, int4 e, int bvalid, int bz, int by, int bx,
             int bbase, long4 sd, long4 s, uint flags)
{
  if (!bvalid || e.x < 0)
    return (T)0;
  if (!bwd) {
    const int zz = bz + e.y, yy = by + e.z, xx = bx + e.w;
    if ((uint)zz < (uint)sd.x && (uint)yy < (uint)sd.y && (uint)xx < (uint)sd.z)
      return KILN_LOAD(sp, bbase + e.x);
    return (T)0;
  }
  int oz = bz - e.y, oy = by - e.z, ox = bx - e.w;
  if (!(flags & 2u)) {
    if (oz < 0 || oy < 0 || ox < 0 || oz % (int)s.x || oy % (int)s.y || ox % (int)s.z)
      return (T)0;
    oz /= (int)s.x;
    oy /= (int)s.y;
    ox /= (int)s.z;
  }
  if ((uint)oz < (uint)sd.x && (uint)oy < (uint)sd.y && (uint)ox < (uint)sd.z)
    return KILN_LOAD(sp, e.x + (oz * (int)sd.y + oy) * (int)sd.z + ox);
  return (T)0;
}

/*
 * conv_igemm_wgrad: the weight gradient as an implicit GEMM with a split reduction, per group
 *   dW_g [M = C_out/g, J = C_in/g * kvol] = G_g [M, N L] x X [N L, J],
 *   X [(n, o), (ci, tap)] = x[n, ci, the input position tap reads for o] (zero in the padding),
 * the N L reduction cut into nsplit ranges of kc (a multiple of CONV_TK), each range's product
 * stored in part [nsplit][G][M][J] (sum_parts adds them in order: deterministic). Tiles, items
 * and the pipelining as conv_igemm (the same template, conv_igemm.clh); tab is conv_pack's
 * forward table, indexed by the column j, copied to the local table ct once per group. The
 * loads run along K (16 consecutive positions of a column per half warp: coalesced, where
 * running along the columns (channel, tap) scattered a warp's reads over a dozen segments),
 * so the local tiles' rows are padded by 4 elements. Each K slice's rows (sample, output
 * position) are split once into the local table rt (double-buffered: the next slice's rows
 * are written while the current slice is stored). Grid: dimension 0 ceil(J / CONV_TN) groups
 * of 256, dimension 1 over ceil(M / CONV_TM) * G * nsplit tiles (looped beyond what the host
 * launches). Local: As CONV_TK (CONV_TM + 4) and Bs CONV_TK (CONV_TN + 4) elements, rt 2 CONV_TK
 * int4, rl 2 CONV_TK int, ct CONV_TN int4.
 */
inline void
wgrad_row(local int4 *rt, local int *rl, uint r, uint k, uint ke, uint L, long4 out, long4 s,
          long4 p)
{
  int4 e = (int4)(0, 0, 0, -1);
  int l = 0;
  if (k < ke) {
    const uint n = k / L, q = k % L, ohw = (uint)(out.y * out.z), ow = (uint)out.z;
    l = (int)q;
    e = (int4)((int)(q / ohw) * (int)s.x - (int)p.x, (int)(q / ow % (uint)out.y) * (int)s.y - (int)p.y,
               (int)(q % ow) * (int)s.z - (int)p.z, (int)n);
  }
  rt[r] = e;
  rl[r] = l;
}

/* One slice's A (gradient) and B (gathered input) elements of an item, rows from rr, ll
 * (row akk for A, bk for B) and B's columns bj0 + i 16 from ct. */
inline void
wgrad_load(T *ra, T *rb, local const int4 *rr, local const int *ll, local const int4 *ct, uint akk,
           uint am0, uint bk, uint bj0, uint m0, uint M, uint L, global const ST *gp,
           global const ST *xp, long4 ch, long4 in, ulong ivol)
{
  const int4 ra_e = rr[akk];
#pragma unroll
  for (int i = 0; i < CONV_AL; i++) {
    const uint m = m0 + am0 + (uint)i * (256 / CONV_TK);
    ra[i] = ra_e.w >= 0 && m < M ? KILN_LOAD(gp, ((ulong)ra_e.w * ch.z + m) * L + (ulong)ll[akk])
                                 : (T)0;
  }
  const int4 e = rr[bk];
  const ulong sb = e.w >= 0 ? (ulong)e.w * (ulong)ch.y * ivol : 0;
  const int base = (e.x * (int)in.y + e.y) * (int)in.z + e.z;
#pragma unroll
  for (int i = 0; i < CONV_BL; i++) {
    const int4 te = ct[bj0 + (uint)i * (256 / CONV_TK)];
    T v = (T)0;
    if (e.w >= 0 && te.x >= 0) {
      const int zz = e.x + te.y, yy = e.y + te.z, xx = e.z + te.w;
      if ((uint)zz < (uint)in.x && (uint)yy < (uint)in.y && (uint)xx < (uint)in.z)
        v = KILN_LOAD(xp, sb + (ulong)(uint)(te.x + base));
    }
    rb[i] = v;
  }
}

/* reqd_work_group_size on GPUs only (KILN_CONV_GPU, from the host): NVIDIA's compiler sizes
 * the register budget by it (without it a kernel may run 1024 items: 64 registers each).
 * PoCL goes without: the programs kiln's background cache store builds again in the same
 * process make PoCL 3.1 compile the declared size's work-group function a second time, and
 * its dlhandle cache then releases an in-flight launch against that copy (the assertion
 * `found->ref_count > 0` of pocl_release_dlhandle_cache; nn_attention.cl does the same). The
 * kernels assume 256 items either way; the host launches nothing else. */
#if KILN_CONV_GPU
#define CONV_WG reqd_work_group_size(256, 1, 1)
#else
#define CONV_WG
#endif

#define IG_BODY igemm_fwd
#define IG_MODE 0
#include "conv_igemm.clh"
#define IG_BODY igemm_bwd
#define IG_MODE 1
#include "conv_igemm.clh"
#define IG_BODY igemm_wgrad
#define IG_MODE 2
#include "conv_igemm.clh"

kernel __attribute__((CONV_WG)) void
conv_igemm(global const ST *src, ulong soff, global const int4 *tab, global const T *pk,
           ulong pkoff, global const ST *b, ulong boff, global ST *dst, ulong doff, long4 ch,
           long4 cd, long4 sd, long4 s, long4 p, uint flags, uint Kpad, uint Mpad,
           local CT4 *As4, local CT4 *Bs4)
{
  igemm_fwd(src, soff, tab, pk, pkoff, b, boff, dst, doff, ch, cd, sd, s, p, flags, Kpad, Mpad,
            As4, Bs4);
}

kernel __attribute__((CONV_WG)) void
conv_igemm_bwd(global const ST *src, ulong soff, global const int4 *tab, global const T *pk,
               ulong pkoff, global const ST *b, ulong boff, global ST *dst, ulong doff, long4 ch,
               long4 cd, long4 sd, long4 s, long4 p, uint flags, uint Kpad, uint Mpad,
               local CT4 *As4, local CT4 *Bs4)
{
  igemm_bwd(src, soff, tab, pk, pkoff, b, boff, dst, doff, ch, cd, sd, s, p, flags, Kpad, Mpad,
            As4, Bs4);
}

kernel __attribute__((CONV_WG)) void
conv_igemm_wgrad(global const ST *g, ulong goff, global const ST *x, ulong xoff,
                 global const int4 *tab, global T *part, long4 ch, long4 in, long4 out, long4 s,
                 long4 p, uint J, uint kc, uint nsplit, local CT4 *As4, local CT4 *Bs4,
                 local int4 *rt, local int *rl, local int4 *ct)
{
  igemm_wgrad(g, goff, x, xoff, tab, part, ch, in, out, s, p, J, kc, nsplit, As4, Bs4, rt, rl, ct);
}
