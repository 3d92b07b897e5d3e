/*
 * Helpers around the FFT back ends (clFFT, VkFFT), which run unnormalised.
 *
 * Build options: see common.cl (-DT=float|double, -DKILN_DT_F32/F64=1).
 * Kernels:
 *   fft_scale(x, xoff, n, s)  x[i] *= s for the n reals from element xoff
 *     (interleaved complex data is scaled as 2n reals). Launch: 1-D, any
 *     global size (grid-stride).
 *   fft_c2r_hermitian(x, batch, n0, n1, h, ncols)  makes the C2R input
 *     [batch, n0, n1, h, 2] (zero-offset; n0 = n1 = 1 below rank 3) a
 *     valid half spectrum: the columns that a real result maps onto
 *     themselves (0, and h - 1 when ncols is 2: even last size) become
 *     Hermitian over the outer axes, c[j] = (c[j] + conj(c[-j])) / 2; at
 *     rank 1 that is zeroing their imaginary parts. This is what
 *     numpy.fft.irfftn computes (it drops the imaginary parts after the
 *     outer inverse transforms), which the back ends do not reliably do.
 *     Launch: 1-D, any global size (grid-stride); each pair (j, -j) is
 *     written by one item, so it runs in place.
 */
#include "common.cl"

/* `kiln cache warm` builds every source for every dtype: only f32/f64 get kernels. */
#if KILN_IS_FLOAT

kernel void
fft_scale(global T *x, ulong xoff, ulong n, T s)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    x[xoff + i] *= s;
}

kernel void
fft_c2r_hermitian(global T *x, ulong batch, ulong n0, ulong n1, ulong h, uint ncols)
{
  ulong outer = n0 * n1, total = batch * outer * ncols;
  for (ulong i = get_global_id(0); i < total; i += get_global_size(0)) {
    ulong col = i % ncols ? h - 1 : 0, row = i / ncols;
    ulong b = row / outer, j = row % outer;
    ulong mirror = (n0 - j / n1) % n0 * n1 + (n1 - j % n1) % n1;
    global T *p = x + 2 * ((b * outer + j) * h + col);
    if (mirror == j) {
      p[1] = (T)0;
    } else if (mirror > j) {
      global T *q = x + 2 * ((b * outer + mirror) * h + col);
      /* Halves first: the sum of two finite values may overflow. */
      T re = (T)0.5 * p[0] + (T)0.5 * q[0], im = (T)0.5 * p[1] - (T)0.5 * q[1];
      p[0] = re;
      p[1] = im;
      q[0] = re;
      q[1] = -im;
    }
  }
}

#endif /* KILN_IS_FLOAT */
