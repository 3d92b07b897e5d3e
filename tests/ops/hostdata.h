/*
 * Host-side helpers shared by the op suites (layout, index, create and random; the
 * elementwise, reduce and scan suites use the bool check):
 * dtype-generic element access, deterministic test patterns, upload and
 * download through the public API, index arithmetic and byte-exact checks
 * against a host reference expressed as "output element i comes from input
 * element src[i]".
 */
#ifndef KILN_TESTS_HOSTDATA_H
#define KILN_TESTS_HOSTDATA_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"

extern const kiln_dtype hd_all_dtypes[6];
#define HD_NDTYPES 6

/* Loops dt over every dtype the harness device supports (f64 only with fp64); no break inside. */
#define HD_FOR_DTYPES(dt)                                                     \
  for (size_t dt##_i = 0; dt##_i < HD_NDTYPES; dt##_i++)                      \
    for (int dt##_k = hd_dtype_ok(hd_all_dtypes[dt##_i]); dt##_k; dt##_k = 0) \
      for (kiln_dtype dt = hd_all_dtypes[dt##_i]; dt##_k; dt##_k = 0)

/* The six dtypes above and f16, bf16, c64, c128: what byte-moving ops take. */
extern const kiln_dtype hd_every_dtype[10];
#define HD_NEVERY 10

/* As HD_FOR_DTYPES over hd_every_dtype (c128 too needs fp64); in the small mode (the
 * simulator) without the dtypes hd_small_skip names: one per element size, as the
 * byte-moving kernels index memory by element size alone. */
#define HD_FOR_EVERY_DTYPE(dt)                                                              \
  for (size_t dt##_i = 0; dt##_i < HD_NEVERY; dt##_i++)                                     \
    for (int dt##_k =                                                                       \
             hd_dtype_ok(hd_every_dtype[dt##_i]) && !hd_small_skip(hd_every_dtype[dt##_i]); \
         dt##_k; dt##_k = 0)                                                                \
      for (kiln_dtype dt = hd_every_dtype[dt##_i]; dt##_k; dt##_k = 0)

/* Nonzero when the harness device supports dtype (f64 and c128 need fp64). */
int hd_dtype_ok(kiln_dtype dt);

/* Nonzero in the small mode (the simulator) for the dtypes a byte-moving op need not run
 * there: all but one of each element size (f32, f64, u8, f16, c128 stay). */
int hd_small_skip(kiln_dtype dt);

/* Element i of a host buffer of dtype, as a double / as an exact integer (floats truncate;
 * f16/bf16 converted exactly; complex: the real part). */
double hd_getf(kiln_dtype dt, const void *buf, uint64_t i);
int64_t hd_geti(kiln_dtype dt, const void *buf, uint64_t i);
/* Stores v (integer dtypes wrap, bool stores v != 0, f16/bf16 round to nearest even,
 * complex gets imaginary part 0). */
void hd_setf(kiln_dtype dt, void *buf, uint64_t i, double v);
void hd_seti(kiln_dtype dt, void *buf, uint64_t i, int64_t v);

/*
 * n deterministic values for dtype that differ between neighbours (bool
 * alternates irregularly). seed varies the pattern. f16, bf16, c64 and c128
 * get random bit patterns (NaNs with payloads, infinities, -0 and
 * subnormals among them), which byte-moving ops must carry unchanged.
 * Caller frees.
 */
void *hd_pattern(kiln_dtype dt, uint64_t n, uint64_t seed);

/*
 * As hd_pattern, but finite values for every dtype, for ops that compute on them: f16/bf16
 * and complex (both parts) get small values that are not all exactly representable.
 */
void *hd_values(kiln_dtype dt, uint64_t n, uint64_t seed);

/* A tensor of shape holding hd_values(dt, numel, seed); *host receives the data (may be NULL). */
kiln_tensor *hd_make_values(kiln_dtype dt, size_t nd, const int64_t *shape, uint64_t seed,
                            void **host);

/* Uploads host data (n = product of shape) into a new tensor; fails the test on error. */
kiln_tensor *hd_upload(kiln_dtype dt, size_t nd, const int64_t *shape, const void *data);

/* A tensor of shape holding hd_pattern(dt, numel, seed); *host receives the data (may be NULL). */
kiln_tensor *hd_make(kiln_dtype dt, size_t nd, const int64_t *shape, uint64_t seed, void **host);

/*
 * Downloads a tensor into a fresh malloc'd buffer (at least 1 byte); a bool tensor's bytes
 * are checked with hd_expect_bool01.
 */
void *hd_download(const kiln_tensor *t);

/*
 * The bool invariant: when dt is KILN_BOOL, asserts every one of the n bytes of a
 * downloaded buffer is 0 or 1 (every op that writes a bool keeps it; a 255 is a true
 * that NumPy would never hold and that breaks ==, sums and bitwise ops after it).
 * Other dtypes: no check. what names the case in failure messages.
 */
void hd_expect_bool01(kiln_dtype dt, const void *got, uint64_t n, const char *what);
/* hd_expect_bool01 of a tensor's whole contents (downloads it). */
void hd_expect_bool01_tensor(const kiln_tensor *t, const char *what);

uint64_t hd_numel(size_t nd, const int64_t *shape);
void hd_unravel(uint64_t i, size_t nd, const int64_t *shape, int64_t *coord);
uint64_t hd_ravel(size_t nd, const int64_t *shape, const int64_t *coord);

/* Asserts t has this shape and dtype. */
void hd_expect_shape(const kiln_tensor *t, kiln_dtype dt, size_t nd, const int64_t *shape);

/*
 * Asserts got[i] == in[src[i]] byte for byte for i < n, or got[i] == fill
 * where src[i] < 0. what names the case in failure messages.
 */
void hd_expect_map(kiln_dtype dt, const void *got, const void *in, const int64_t *src, uint64_t n,
                   const void *fill, const char *what);

/* Asserts two host buffers of n elements of dtype are byte-identical. */
void hd_expect_equal(kiln_dtype dt, const void *got, const void *want, uint64_t n,
                     const char *what);

/*
 * A host array of dtype dt beside its n values as the device holds them, in long double
 * (exact for every dtype, i64 included, on x86's 64-bit mantissa): the reductions' and scans'
 * references compute on v. hd_host_alloc aborts the test when out of memory; hd_host_set
 * stores v rounded (or converted) to dt in raw and the stored value in v[i].
 */
struct hd_host {
  kiln_dtype dt;
  uint64_t n;
  void *raw;
  long double *v;
};
void hd_host_alloc(struct hd_host *h, kiln_dtype dt, uint64_t n);
void hd_host_set(struct hd_host *h, uint64_t i, long double v);
void hd_host_free(struct hd_host *h);
/* Element i of a downloaded buffer of real dtype dt, integers exactly. */
long double hd_elem(kiln_dtype dt, const void *p, uint64_t i);

#endif
