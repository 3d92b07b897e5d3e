/*
 * Casts from T to every dtype: kernel cast_to_<short name>(x, xoff, y, yoff, n).
 *
 * Build options: see common.cl; -DKILN_FP64=1 adds cast_to_f64.
 * Rules (match kiln_cast() in include/kiln/elementwise.h): float to integer
 * truncates and saturates with NaN -> 0 (the _sat_rtz conversions); integer
 * to integer wraps; anything to bool is x != 0; to float rounds to nearest even.
 */
#include "common.cl"

#if KILN_IS_FLOAT
/* The NaN test is explicit: NVIDIA's _sat conversions turn NaN into the type's minimum
 * (INT_MIN, 128 for uchar) although the OpenCL spec asks for 0. */
#define TO_INT(type, x) ((x) != (x) ? (type)0 : convert_##type##_sat_rtz(x))
#else
#define TO_INT(type, x) ((type)(x))
#endif

#define CAST_KERNEL(short, type, conv)                                                    \
  kernel void cast_to_##short(global const T *xs, ulong xoff, global type *ys, ulong yoff, \
                              ulong n)                                                    \
  {                                                                                       \
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {                    \
      T x = xs[xoff + i];                                                                 \
      ys[yoff + i] = conv;                                                                \
    }                                                                                     \
  }

CAST_KERNEL(f32, float, convert_float(x))
#if defined(KILN_DT_F64) || defined(KILN_FP64)
CAST_KERNEL(f64, double, convert_double(x))
#endif
CAST_KERNEL(i32, int, TO_INT(int, x))
CAST_KERNEL(i64, long, TO_INT(long, x))
CAST_KERNEL(u8, uchar, TO_INT(uchar, x))
CAST_KERNEL(bool, uchar, (uchar)(x != (T)0))
