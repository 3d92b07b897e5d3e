/*
 * Helpers around the FFT back ends (clFFT, VkFFT), which run unnormalised.
 *
 * Build options: see common.cl (-DT=float|double, -DKILN_DT_F32/F64=1).
 * Kernels:
 *   fft_scale(x, xoff, n, s)  x[i] *= s for the n reals from element xoff
 *     (interleaved complex data is scaled as 2n reals). Launch: 1-D, any
 *     global size (grid-stride).
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

#endif /* KILN_IS_FLOAT */
