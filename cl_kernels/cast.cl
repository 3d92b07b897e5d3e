/*
 * Casts from T to every dtype: kernel cast_to_<short name>(x, xoff, y, yoff, n),
 * one program per source dtype.
 *
 * Build options: see common.cl; -DKILN_FP64=1 adds cast_to_f64 and cast_to_c128
 * (and is needed by the f64/c128 sources).
 * Rules (match kiln_cast() in include/kiln/elementwise.h, docs/ops.md "Cast rules"):
 * float to integer truncates and saturates with NaN -> 0 (the _sat_rtz
 * conversions); integer to integer wraps; anything to bool is x != 0 (complex:
 * either part); to a float rounds to nearest even, once, from any source;
 * complex to real keeps the real part; real to complex sets imag = 0.
 * f16/bf16 NaN results keep the sign and, from a float source, the top payload
 * bits (made quiet); from a double source they are the canonical quiet NaN,
 * as the host conversions in lib/core/half.c give. Casting f16 or bf16 to
 * itself copies the bits.
 * Also copy_values(x, xoff, y, yoff, n), kiln_copy's kernel path.
 * Tunables (ew_loops.clh): KILN_EW_ITEMS, steps per work-item, and
 * KILN_EW_VEC, the elements per vector of copy_values; KILN_CAST_LANES, the
 * consecutive elements of one cast step (a device-type default); the tuner
 * families "cast" and "copy".
 */
#include "common.cl"
#include "ew_loops.clh"

#if defined(KILN_DT_F64) || defined(KILN_DT_C128)
#define KILN_SRC_DOUBLE 1
#else
#define KILN_SRC_DOUBLE 0
#endif

/* f16 loads are exact, NaN payloads included: vload_half may quiet a signalling NaN (PoCL
 * does), so a NaN is rebuilt from its bits; a select, next to memory traffic. */
#if defined(KILN_DT_F16)
inline float
load_f16(global const half *p, ulong i)
{
  uint h = ((global const ushort *)p)[i];
  float f = vload_half(i, p);
  uint nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
  return nan ? as_float(((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13)) : f;
}
#define LOAD(p, i) load_f16((p), (i))
#else
#define LOAD(p, i) KILN_LOAD(p, i)
#endif

/* The value a real target converts from (complex: the real part, as NumPy's cast with its
 * ComplexWarning) and the "nonzero" a bool target tests (complex: either part). */
#if KILN_IS_COMPLEX
#define REAL(v) ((v).x)
#define NONZERO(v) ((v).x != (RT)0 || (v).y != (RT)0)
#else
#define REAL(x) (x)
#define NONZERO(x) ((x) != (T)0)
#endif

#if KILN_IS_FLOAT || KILN_IS_COMPLEX
/* The NaN test is explicit: NVIDIA's _sat conversions turn NaN into the type's minimum
 * (INT_MIN, 128 for uchar) although the OpenCL spec asks for 0. */
#define TO_INT(type, x) ((x) != (x) ? (type)0 : convert_##type##_sat_rtz(x))
#else
#define TO_INT(type, x) ((type)(x))
#endif

/*
 * To f16 and bf16. A float value (f32, f16, bf16, c64, and integers: every i32/i64 that
 * rounds differently through f32 is beyond the f16 range anyway) goes through
 * vstore_half_rte / kiln_f32_to_bf16. A double goes straight to f16 through the double
 * vstore_half_rte, and to bf16 through f32 rounded to odd: f32 keeps 16 more bits than
 * bf16, so that first rounding cannot create a false tie and the second is the only one
 * that counts. i32/i64 to bf16 round to odd into f32 for the same reason (2^25 + 2^17 + 1
 * would otherwise round to the tie 2^25 + 2^17 in f32, then to even 2^25).
 */
inline ushort
nan_f16_bits(float v)
{
  uint u = as_uint(v);
  return (ushort)(((u >> 16) & 0x8000u) | 0x7e00u | ((u & 0x7fffffu) >> 13));
}

inline void
store_f16_float(global half *p, ulong i, float v)
{
  if (isnan(v))
    ((global ushort *)p)[i] = nan_f16_bits(v);
  else
    vstore_half_rte(v, i, p);
}

#if KILN_SRC_DOUBLE
inline void
store_f16_double(global half *p, ulong i, double v)
{
  if (isnan(v))
    ((global ushort *)p)[i] = signbit(v) ? (ushort)0xfe00u : (ushort)0x7e00u;
  else
    vstore_half_rte(v, i, p);
}

inline ushort
bf16_from_double(double v)
{
  if (isnan(v))
    return signbit(v) ? (ushort)0xffc0u : (ushort)0x7fc0u;
  float f = convert_float_rtz(v);
  uint odd = (double)f != v ? 1u : 0u;
  return kiln_f32_to_bf16(as_float(as_uint(f) | odd));
}
#define STORE_F16(p, i, v) store_f16_double((p), (i), (v))
#define TO_BF16(v) bf16_from_double(v)
#elif KILN_IS_FLOAT || KILN_IS_COMPLEX
#define STORE_F16(p, i, v) store_f16_float((p), (i), (v))
#define TO_BF16(v) kiln_f32_to_bf16(v)
#else
inline ushort
bf16_from_long(long v)
{
  float f = convert_float_rtz(v);
  uint odd = convert_long(f) != v ? 1u : 0u;
  return kiln_f32_to_bf16(as_float(as_uint(f) | odd));
}
#define STORE_F16(p, i, v) vstore_half_rte(convert_float(v), (i), (p))
#define TO_BF16(v) bf16_from_long(convert_long(v))
#endif

/* i64 to f32 rounded once, whatever convert_float(long) does (oclgrind goes through double,
 * and 2^60 + 2^36 + 1 lands on a tie there): the bits below the top 26 fold into a sticky
 * bit, then the 26-bit integer converts exactly-then-rounded and scales by a power of 2. */
#if defined(KILN_DT_I64)
inline float
f32_from_long(long v)
{
  ulong u = v < 0 ? (ulong)0 - (ulong)v : (ulong)v;
  uint sh = u >> 26 ? 38u - (uint)clz(u) : 0u;
  ulong t = (u >> sh) | ((u & (((ulong)1 << sh) - 1)) != 0 ? 1ul : 0ul);
  float f = ldexp(convert_float(t), (int)sh);
  return v < 0 ? -f : f;
}
#define TO_F32(v) f32_from_long(v)
#else
#define TO_F32(v) convert_float(v)
#endif

/* To complex: a complex source converts both parts, a real one gets imag = +0. */
#if KILN_IS_COMPLEX
#define TO_C64(x) convert_float2(x)
#define TO_C128(x) convert_double2(x)
#else
#define TO_C64(x) ((float2)(TO_F32(x), 0.0f))
#define TO_C128(x) ((double2)(convert_double(x), 0.0))
#endif

/* One statement per target: converts a loaded value v, writes element j of ys. */
#define CONV_F32(v, ys, j) ((ys)[j] = TO_F32(REAL(v)))
#define CONV_F64(v, ys, j) ((ys)[j] = convert_double(REAL(v)))
#define CONV_I32(v, ys, j) ((ys)[j] = TO_INT(int, REAL(v)))
#define CONV_I64(v, ys, j) ((ys)[j] = TO_INT(long, REAL(v)))
#define CONV_U8(v, ys, j) ((ys)[j] = TO_INT(uchar, REAL(v)))
#define CONV_BOOL(v, ys, j) ((ys)[j] = (uchar)NONZERO(v))
#define CONV_C64(v, ys, j) ((ys)[j] = TO_C64(v))
#define CONV_C128(v, ys, j) ((ys)[j] = TO_C128(v))
#define CONV_F16(v, ys, j) STORE_F16(ys, j, REAL(v))
#define CONV_BF16(v, ys, j) ((ys)[j] = TO_BF16(REAL(v)))
/* A 16-bit float cast to itself copies the bits (a signalling NaN stays one). */
#define CONV_BITS(v, ys, j) (((global ushort *)(ys))[j] = (v))
#define LOAD_BITS(p, i) (((global const ushort *)(p))[i])

/*
 * Each work-item converts KILN_EW_ITEMS steps a work-group apart (loads
 * first, then the stores: GPUs keep them in flight together), each step
 * KILN_CAST_LANES consecutive elements (1 on GPUs; CPU devices take several,
 * which the compiler turns into vector loads, conversions and stores: PoCL
 * does not vectorise these loops across work-items). VT is what is loaded
 * (the 16-bit self-casts move bits).
 */
#ifndef KILN_CAST_LANES
#define KILN_CAST_LANES 1
#endif
#define CAST_KERNEL(short, conv, type, VT, LD)                                             \
  kernel void cast_to_##short(global const ST *xs, ulong xoff, global type *ys, ulong yoff, \
                              ulong n)                                                     \
  {                                                                                        \
    FLAT_VECTORS_OF(n, KILN_CAST_LANES)                                                    \
    {                                                                                      \
      VT v[KILN_EW_ITEMS][KILN_CAST_LANES];                                                \
      FLAT_EACH(e)                                                                         \
      for (uint l = 0; l < KILN_CAST_LANES; l++)                                           \
        v[e][l] = LD(xs, xoff + FLAT_SLOT(e) * KILN_CAST_LANES + l);                       \
      FLAT_EACH(e)                                                                         \
      for (uint l = 0; l < KILN_CAST_LANES; l++)                                           \
        conv(v[e][l], ys, yoff + FLAT_SLOT(e) * KILN_CAST_LANES + l);                      \
    }                                                                                      \
    FLAT_TAIL_OF(i, n, KILN_CAST_LANES)                                                    \
    conv(LD(xs, xoff + i), ys, yoff + i);                                                  \
  }

/*
 * copy_values(x, xoff, y, yoff, n): kiln_copy's kernel, elements moved as MT
 * in vectors of KILN_EW_VEC, KILN_EW_ITEMS vectors per work-item (the host
 * passes a width that divides both offsets).
 */
/* c128 elements are already 16-byte vectors (ulong2): they move one at a time. */
#if KILN_EW_VEC > 1 && !defined(KILN_DT_C128)
#define COPY_VEC KILN_EW_VEC
#define MVEC KILN_CAT(MT, KILN_EW_VEC)
#else
#define COPY_VEC 1
#define MVEC MT
#endif
kernel void
copy_values(global const MT *xs, ulong xoff, global MT *ys, ulong yoff, ulong n)
{
  global const MVEC *xp = (global const MVEC *)(xs + xoff);
  global MVEC *yp = (global MVEC *)(ys + yoff);
  FLAT_VECTORS_OF(n, COPY_VEC)
  {
    MVEC v[KILN_EW_ITEMS];
    FLAT_EACH(e) v[e] = xp[FLAT_SLOT(e)];
    FLAT_EACH(e) FLAT_PUT(&yp[FLAT_SLOT(e)], v[e]);
  }
  FLAT_TAIL_OF(i, n, COPY_VEC) ys[yoff + i] = xs[xoff + i];
}

/*
 * With KILN_CAST_LANES of 2, 4, 8 or 16 (the CPU default is 8) and a real source stored as
 * itself, the casts to the integers, bool, f32 (not from i64: f32_from_long) and f64
 * take the lanes as one OpenCL vector: one vector load, conversion and store per step,
 * each lane computing exactly what the scalar conversion above does (NaN to 0 by a
 * select). PoCL turned the lane loop into scalar conversions with their saturation and
 * NaN tests; f32 to i32 over 2^22 elements ran at about half of NumPy's speed.
 */
#if (KILN_CAST_LANES == 2 || KILN_CAST_LANES == 4 || KILN_CAST_LANES == 8 ||                 \
     KILN_CAST_LANES == 16) &&                                                               \
    !KILN_IS_HALF && !KILN_IS_COMPLEX
#define CAST_VEC 1
#define CV(t) KILN_CAT(t, KILN_CAST_LANES)
#define CVCONV(t, v) KILN_CAT(convert_, CV(t))(v)
#define CVCONV_SAT(t, v) KILN_CAT(KILN_CAT(convert_, CV(t)), _sat_rtz)(v)
#if KILN_IS_FLOAT
/* mt: the signed integer type of the target's size, the select mask. */
#define VTO_INT(type, mt, v) select(CVCONV_SAT(type, v), (CV(type))0, CVCONV(mt, isnan(v)))
#else
#define VTO_INT(type, mt, v) CVCONV(type, v)
#endif
#define VCONV_I32(v) VTO_INT(int, int, v)
#define VCONV_I64(v) VTO_INT(long, long, v)
#define VCONV_U8(v) VTO_INT(uchar, char, v)
#define VCONV_BOOL(v) (CVCONV(uchar, (v) != (CV(T))0) & (CV(uchar))1)
#define VCONV_F32(v) CVCONV(float, v)
#define VCONV_F64(v) CVCONV(double, v)
#define CAST_KERNEL_V(short, conv, type, vconv)                                            \
  kernel void cast_to_##short(global const ST *xs, ulong xoff, global type *ys, ulong yoff, \
                              ulong n)                                                     \
  {                                                                                        \
    global const T *xp = xs + xoff;                                                        \
    global type *yp = ys + yoff;                                                           \
    /* Aligned vectors where both offsets allow (PoCL: 31-33 GB/s against 24-30 with  \
     * vloadN/vstoreN over 2^22 f32 to i32), vloadN/vstoreN elsewhere. */                  \
    int al = (xoff | yoff) % KILN_CAST_LANES == 0;                                         \
    FLAT_VECTORS_OF(n, KILN_CAST_LANES)                                                    \
    {                                                                                      \
      CV(T) v[KILN_EW_ITEMS];                                                              \
      if (al) {                                                                            \
        FLAT_EACH(e) v[e] = ((global const CV(T) *)xp)[FLAT_SLOT(e)];                      \
        FLAT_EACH(e)((global CV(type) *)yp)[FLAT_SLOT(e)] = vconv(v[e]);                   \
      } else {                                                                             \
        FLAT_EACH(e) v[e] = KILN_CAT(vload, KILN_CAST_LANES)(FLAT_SLOT(e), xp);            \
        FLAT_EACH(e) KILN_CAT(vstore, KILN_CAST_LANES)(vconv(v[e]), FLAT_SLOT(e), yp);     \
      }                                                                                    \
    }                                                                                      \
    FLAT_TAIL_OF(i, n, KILN_CAST_LANES)                                                    \
    conv(LOAD(xs, xoff + i), ys, yoff + i);                                                \
  }
#define CAST_KERNEL_NUM(short, conv, type, vconv) CAST_KERNEL_V(short, conv, type, vconv)
#else
#define CAST_KERNEL_NUM(short, conv, type, vconv) CAST_KERNEL(short, conv, type, T, LOAD)
#endif

#if defined(KILN_DT_F16)
#define F16_SELF ushort, LOAD_BITS
#define F16_CONV CONV_BITS
#else
#define F16_SELF T, LOAD
#define F16_CONV CONV_F16
#endif
#if defined(KILN_DT_BF16)
#define BF16_SELF ushort, LOAD_BITS
#define BF16_CONV CONV_BITS
#else
#define BF16_SELF T, LOAD
#define BF16_CONV CONV_BF16
#endif

/* The self-casts' (VT, LD) pair is one macro argument until expanded here. */
#define CAST_KERNEL_SELF(short, conv, type, self) CAST_KERNEL(short, conv, type, self)
#if defined(KILN_DT_I64)
CAST_KERNEL(f32, CONV_F32, float, T, LOAD)
#else
CAST_KERNEL_NUM(f32, CONV_F32, float, VCONV_F32)
#endif
CAST_KERNEL_NUM(i32, CONV_I32, int, VCONV_I32)
CAST_KERNEL_NUM(i64, CONV_I64, long, VCONV_I64)
CAST_KERNEL_NUM(u8, CONV_U8, uchar, VCONV_U8)
CAST_KERNEL_NUM(bool, CONV_BOOL, uchar, VCONV_BOOL)
CAST_KERNEL_SELF(f16, F16_CONV, half, F16_SELF)
CAST_KERNEL_SELF(bf16, BF16_CONV, ushort, BF16_SELF)
CAST_KERNEL(c64, CONV_C64, float2, T, LOAD)
#if defined(KILN_DT_F64) || defined(KILN_DT_C128) || defined(KILN_FP64)
CAST_KERNEL_NUM(f64, CONV_F64, double, VCONV_F64)
CAST_KERNEL(c128, CONV_C128, double2, T, LOAD)
#endif
