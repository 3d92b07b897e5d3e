/*
 * Shared definitions for every kiln kernel source.
 *
 * Expects from the host: -DT=<OpenCL type kernels compute in> and exactly one
 * of -DKILN_DT_F32/F64/I32/I64/U8/BOOL/F16/BF16/C64/C128=1. Optional:
 * -DKILN_FP64=1 when the device supports doubles (needed by sources that
 * convert to f64).
 *
 * Storage: ST is the type a buffer of the dtype holds and KILN_LOAD(p, i) /
 * KILN_STORE(p, i, v) move element i between a `global ST *` and a T. For
 * f16 and bf16, T is float and ST is half (vload_half/vstore_half_rte, core
 * OpenCL: no cl_khr_fp16 needed) or ushort (the top half of an f32, rounded
 * to nearest even by kiln_f32_to_bf16); for every other dtype ST is T and
 * the two macros are plain indexing. C64/C128 compute in float2/double2
 * (.x real, .y imaginary) with RT the real type; KILN_IS_COMPLEX is 1.
 * MT is the type byte-moving kernels copy elements as; KILN_ONE/KILN_ZERO
 * are 1 and 0 of T.
 *
 * Provides: UT (unsigned twin of T, for wrapping arithmetic), KILN_IS_FLOAT,
 * KILN_BITS, KILN_T_MIN/KILN_T_MAX (the range of T), KILN_SUP_<class> (1 when T belongs to an op-table dtype class),
 * KILN_GEN_IF(cls, body, a, b, c) (expands body(a, b, c) only for supported classes).
 */
#ifndef KILN_COMMON_CL
#define KILN_COMMON_CL

#if defined(KILN_DT_F64) || defined(KILN_DT_C128) || defined(KILN_FP64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* KILN_IS_FLOAT: T is a real floating type (f16 and bf16 included: they compute in float). */
#if defined(KILN_DT_F32) || defined(KILN_DT_F64) || defined(KILN_DT_F16) || defined(KILN_DT_BF16)
#define KILN_IS_FLOAT 1
#else
#define KILN_IS_FLOAT 0
#endif
#if defined(KILN_DT_F16) || defined(KILN_DT_BF16)
#define KILN_IS_HALF 1
#else
#define KILN_IS_HALF 0
#endif
#if defined(KILN_DT_C64)
#define KILN_IS_COMPLEX 1
#define RT float
#elif defined(KILN_DT_C128)
#define KILN_IS_COMPLEX 1
#define RT double
#else
#define KILN_IS_COMPLEX 0
#define RT T
#endif

/* bfloat16 <-> float. NaN keeps its sign and top payload bits and is made quiet, so that
 * rounding cannot carry it into the exponent (to infinity). */
inline float kiln_bf16_to_f32(ushort h) { return as_float((uint)h << 16); }
inline ushort kiln_f32_to_bf16(float f)
{
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (ushort)((u >> 16) | 0x40u);
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* kiln_f32_to_bf16 on vectors: KILN_BF16_FROM_FLOATV(N) defines kiln_bf16_from_floatv for
 * floatN (N empty: float). */
#define KILN_BF16_FROM_FLOATV(N)                                                         \
  inline KILN_CAT(ushort, N) kiln_bf16_from_floatv(KILN_CAT(float, N) f)                 \
  {                                                                                      \
    KILN_CAT(uint, N) u = KILN_CAT(as_uint, N)(f);                                       \
    KILN_CAT(uint, N) r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                        \
    r = select(r, (u >> 16) | 0x40u, (u & 0x7fffffffu) > 0x7f800000u); /* NaN: quiet */ \
    return KILN_CAT(convert_ushort, N)(r);                                               \
  }

#if defined(KILN_DT_F16)
/* vstore_halfN_rte for N = 8 and 16 at any 2-byte-aligned address: PoCL 3.1's own 8- and
 * 16-wide forms store with 16-byte-aligned moves, which fault elsewhere (its 4-wide form does
 * not). */
inline void kiln_vstore_half4(float4 v, global half *p) { vstore_half4_rte(v, 0, p); }
inline void kiln_vstore_half8(float8 v, global half *p)
{
  vstore_half4_rte(v.lo, 0, p);
  vstore_half4_rte(v.hi, 0, p + 4);
}
inline void kiln_vstore_half16(float16 v, global half *p)
{
  kiln_vstore_half8(v.lo, p);
  kiln_vstore_half8(v.hi, p + 8);
}
#define ST half
#define KILN_LOAD(p, i) vload_half((i), (p))
#define KILN_STORE(p, i, v) vstore_half_rte((v), (i), (p))
#elif defined(KILN_DT_BF16)
#define ST ushort
#define KILN_LOAD(p, i) kiln_bf16_to_f32((p)[i])
#define KILN_STORE(p, i, v) ((p)[i] = kiln_f32_to_bf16(v))
#else
#define ST T
#define KILN_LOAD(p, i) ((p)[i])
#define KILN_STORE(p, i, v) ((p)[i] = (v))
#endif

/* MT: the type kernels that only move elements copy them as, one element's size. For f16,
 * bf16 and complex an integer type, so every bit (NaN payloads, -0) survives and no half
 * arithmetic is needed; for the other dtypes T itself. */
#if KILN_IS_HALF
#define MT ushort
#elif defined(KILN_DT_C64)
#define MT ulong
#elif defined(KILN_DT_C128)
#define MT ulong2
#else
#define MT T
#endif

/* 1 and 0 of T (complex: 1 + 0i, which `(T)1` is not: it sets both parts). */
#if KILN_IS_COMPLEX
#define KILN_ONE ((T)((RT)1, (RT)0))
#define KILN_ZERO ((T)((RT)0, (RT)0))
#else
#define KILN_ONE ((T)1)
#define KILN_ZERO ((T)0)
#endif

#if defined(KILN_DT_I32)
#define UT uint
#define KILN_BITS 32
#define KILN_SIGNED 1
#elif defined(KILN_DT_I64)
#define UT ulong
#define KILN_BITS 64
#define KILN_SIGNED 1
#elif defined(KILN_DT_U8) || defined(KILN_DT_BOOL)
#define UT uchar
#define KILN_BITS 8
#define KILN_SIGNED 0
#else
#define UT T
#define KILN_BITS 0
#define KILN_SIGNED 1
#endif

/* The smallest and largest value of T (floats: the infinities; bool: false and true, not
 * the 0 and 255 of the uchar it is stored in): the identities of max and min. */
#if KILN_IS_FLOAT
#define KILN_T_MIN ((T)-INFINITY)
#define KILN_T_MAX ((T)INFINITY)
#elif defined(KILN_DT_I32)
#define KILN_T_MIN ((T)INT_MIN)
#define KILN_T_MAX ((T)INT_MAX)
#elif defined(KILN_DT_I64)
#define KILN_T_MIN ((T)LONG_MIN)
#define KILN_T_MAX ((T)LONG_MAX)
#elif defined(KILN_DT_BOOL)
#define KILN_T_MIN ((T)0)
#define KILN_T_MAX ((T)1)
#else
#define KILN_T_MIN ((T)0)
#define KILN_T_MAX ((T)UCHAR_MAX)
#endif

/* Membership of T in the dtype classes of include/kiln/op_table.h, as 0/1 tokens for pasting.
 * Complex dtypes belong to none of them (their ops are their own rows). */
#if KILN_IS_COMPLEX
#define KILN_SUP_ALL 0
#define KILN_SUP_FLOAT 0
#define KILN_SUP_INT 0
#define KILN_SUP_INTNB 0
#define KILN_SUP_NUM 0
#elif KILN_IS_FLOAT
#define KILN_SUP_ALL 1
#define KILN_SUP_FLOAT 1
#define KILN_SUP_INT 0
#define KILN_SUP_INTNB 0
#define KILN_SUP_NUM 1
#elif defined(KILN_DT_BOOL)
#define KILN_SUP_ALL 1
#define KILN_SUP_FLOAT 0
#define KILN_SUP_INT 1
#define KILN_SUP_INTNB 0
#define KILN_SUP_NUM 0
#else
#define KILN_SUP_ALL 1
#define KILN_SUP_FLOAT 0
#define KILN_SUP_INT 1
#define KILN_SUP_INTNB 1
#define KILN_SUP_NUM 1
#endif

#define KILN_CAT_(a, b) a##b
#define KILN_CAT(a, b) KILN_CAT_(a, b)

/* KILN_VW64: lanes of a 64-byte vector of T (a cache line, one AVX-512 register), the width of
 * the nn kernels' CPU forms: 8 doubles, else 16 (floats; the 16-bit types compute in float). */
#if defined(KILN_DT_F64)
#define KILN_VW64 8
#else
#define KILN_VW64 16
#endif

/* Horizontal sums and NaN-skipping maxima of T vectors of 4, 8 and 16 lanes, by halving
 * (floating T; the CPU forms of the nn kernels). */
#if KILN_IS_FLOAT
inline T kiln_hsum4(KILN_CAT(T, 4) b) { return (b.s0 + b.s1) + (b.s2 + b.s3); }
inline T kiln_hsum8(KILN_CAT(T, 8) a) { return kiln_hsum4(a.lo + a.hi); }
inline T kiln_hsum16(KILN_CAT(T, 16) v) { return kiln_hsum8(v.lo + v.hi); }
inline T kiln_hmax4(KILN_CAT(T, 4) b) { return fmax(fmax(b.s0, b.s1), fmax(b.s2, b.s3)); }
inline T kiln_hmax8(KILN_CAT(T, 8) a) { return kiln_hmax4(fmax(a.lo, a.hi)); }
inline T kiln_hmax16(KILN_CAT(T, 16) v) { return kiln_hmax8(fmax(v.lo, v.hi)); }
#endif

/*
 * N consecutive elements of a `global ST *` as a T vector and back, at any element offset:
 * KILN_VLOAD_ST(N, p), KILN_VSTORE_ST(N, v, p) (N 4, 8 or 16). bf16 stores go through
 * kiln_bf16_from_floatv, which the includer instantiates for its N (KILN_BF16_FROM_FLOATV).
 */
#if defined(KILN_DT_F16)
#define KILN_VLOAD_ST(N, p) KILN_CAT(vload_half, N)(0, (p))
#define KILN_VSTORE_ST(N, v, p) KILN_CAT(kiln_vstore_half, N)((v), (p))
#elif defined(KILN_DT_BF16)
#define KILN_VLOAD_ST(N, p)                                                              \
  KILN_CAT(as_float, N)(KILN_CAT(convert_uint, N)(KILN_CAT(vload, N)(0, (p))) << 16)
#define KILN_VSTORE_ST(N, v, p) KILN_CAT(vstore, N)(kiln_bf16_from_floatv(v), 0, (p))
#else
#define KILN_VLOAD_ST(N, p) KILN_CAT(vload, N)(0, (p))
#define KILN_VSTORE_ST(N, v, p) KILN_CAT(vstore, N)((v), 0, (p))
#endif
/*
 * KILN_RUN_LOOP(q, n): this work-item's contiguous run of [0, n) in a 1-D launch, indices
 * [g r, min(n, g r + r)) with g its global id and r = ceil(n / global size). The CPU forms
 * take their vectors this way: PoCL runs a group's work-items one after another, so a run per
 * item streams memory in order where a grid stride jumps, and a few long runs pay the per-item
 * overhead once (the host sets the run length through the global size).
 */
#define KILN_RUN_LOOP(q, n)                                                              \
  const ulong q##_run = ((ulong)(n) + get_global_size(0) - 1) / get_global_size(0);     \
  for (ulong q = get_global_id(0) * q##_run, q##_end = min((ulong)(n), q + q##_run);     \
       q < q##_end; q++)
/* Fixed arity on purpose: OpenCL C forbids variadic macros (NVIDIA's compiler enforces it). */
#define KILN_GEN_0(body, a, b, c)
#define KILN_GEN_1(body, a, b, c) body(a, b, c)
#define KILN_GEN_IF(cls, body, a, b, c) KILN_CAT(KILN_GEN_, KILN_SUP_##cls)(body, a, b, c)

/* Result types named in the op table. */
#define KILN_RES_SAME T
#define KILN_RES_BOOL uchar

/* Shape and strides of a broadcast operation; mirrors struct kiln__bcast on the host. */
typedef struct {
  ulong shape[8];
  ulong stride[3][8];
} kiln_bcast;

#endif
