/*
 * linalg_spectral family, eigen and SVD part: eigh and svd (device reductions to
 * tridiagonal/bidiagonal form, host LAPACKE stage on those, device back-transformations), and
 * the host-LAPACKE ops eig, lstsq's minimum-norm route, pinv, matrix_rank, matrix_norm and
 * cond (include/kiln/linalg_spectral.h, docs/linalg.md).
 *
 * The reductions are LAPACK's blocked dsytrd (dlatrd panels) and dgebrd (dlabrd panels) on
 * the device (cl_kernels/linalg_eig.cl): a few launches per column with no host wait, one
 * GEMM per panel for the trailing update. Their reflectors stay in the layout
 * kiln__lsp_ormqr applies, so the back-transformations are the QR family's blocked
 * compact-WY updates.
 */
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/shape.h"
#include "kiln_config.h"
#include "ops/linalg_host.h"
#include "ops/linalg_internal.h"
#include "ops/linalg_spectral_internal.h"
#include "ops/ops_common.h"
#if KILN_HAVE_LAPACKE
#include <lapacke.h>
#endif

#define SRC "linalg_qr"

static kiln_status
need_lapacke(const char *op, const char *what)
{
#if KILN_HAVE_LAPACKE
  (void)op;
  (void)what;
  return KILN_OK;
#else
  return kiln__fail(KILN_ERR_UNSUPPORTED, op, 0,
                    "%s runs on the host through LAPACKE, and this kiln was built without it "
                    "(meson -Dlapacke=enabled with liblapacke-dev installed)",
                    what);
#endif
}

/*
 * The N of an entry "key=N" (key given with its '=') in KILN_DEBUG_LINALG_HOST when N lies in
 * lo .. hi, else 0: the host threads and the reductions' launch shapes, to time them.
 */
static uint64_t
debug_num(const char *key, long lo, long hi)
{
  const char *e = kiln__env(KILN__ENV_DEBUG_LINALG_HOST), *p = e ? strstr(e, key) : NULL;
  long t = p ? strtol(p + strlen(key), NULL, 10) : 0;
  return t >= lo && t <= hi ? (uint64_t)t : 0;
}

/* Whether KILN_DEBUG_LINALG_HOST names the routine (a comma-separated list). */
static int
host_pick(const char *routine)
{
  const char *e = kiln__env(KILN__ENV_DEBUG_LINALG_HOST);
  size_t len = strlen(routine);
  for (const char *p = e; p && *p;) {
    const char *q = strchr(p, ',');
    size_t l = q ? (size_t)(q - p) : strlen(p);
    if (l == len && strncmp(p, routine, len) == 0)
      return 1;
    p = q ? q + 1 : NULL;
  }
  return 0;
}

/* debug_num for a power of two from 8 (work-group sizes: the group reductions halve them). */
static size_t
debug_pow2(const char *key, size_t dflt)
{
  uint64_t v = debug_num(key, 8, 1024);
  return v && (v & (v - 1)) == 0 ? (size_t)v : dflt;
}

static double
eps_of(kiln_dtype dt)
{
  return dt == KILN_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
}

#if KILN_HAVE_LAPACKE
static kiln_status
no_conv(const char *op, const char *routine, uint64_t b, long info)
{
  /* LAPACKE refuses an array holding a NaN with minus its position (a NaN or Inf in the input
   * matrix reaches the host stage as NaN): that is bad input, not an iteration that failed */
  if (info < 0)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, (int)info,
                      "matrix %llu of the batch has NaN or Inf entries: LAPACK %s refused its "
                      "argument %ld",
                      (unsigned long long)b, routine, -info);
  return kiln__fail(KILN_ERR_NO_CONVERGENCE, op, (int)info,
                    "LAPACK %s did not converge on matrix %llu of the batch (info %ld)", routine,
                    (unsigned long long)b, info);
}
#endif

static kiln_status
host_mem(const char *op, int ok)
{
  return ok ? KILN_OK : kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "no memory for host workspaces");
}

#if KILN_HAVE_LAPACKE
/*
 * Singular values (descending) of the m x n row-major matrix x, overwritten (gesdd 'N'), or
 * with u (m x ucols) and vt (vrows x n) when u is given (full: ucols = m, vrows = n).
 */
static kiln_status
host_svd(const char *op, uint64_t b, double *x, uint64_t m, uint64_t n, double *s, double *u,
         double *vt, int full)
{
  uint64_t k = m < n ? m : n;
  if (k == 0) { /* LAPACK leaves U and V^T alone: they are identities */
    if (u) {
      uint64_t uc = full ? m : k, vr = full ? n : k;
      for (uint64_t i = 0; i < m * uc; i++)
        u[i] = i / uc == i % uc ? 1.0 : 0.0;
      for (uint64_t i = 0; i < vr * n; i++)
        vt[i] = i / n == i % n ? 1.0 : 0.0;
    }
    return KILN_OK;
  }
  double du = 0, dv = 0;
  lapack_int info = LAPACKE_dgesdd(
      LAPACK_ROW_MAJOR, u ? (full ? 'A' : 'S') : 'N', (lapack_int)m, (lapack_int)n, x,
      (lapack_int)n, s, u ? u : &du, u ? (lapack_int)(full ? m : k) : 1, u ? vt : &dv,
      (lapack_int)n); /* row-major LAPACKE wants ldvt >= n even for 'N' */
  if (info > 0)
    return no_conv(op, "dgesdd", b, info);
  KILN_RETURN_IF(info < 0, KILN_ERR_INVALID_ARGUMENT, op, "LAPACK dgesdd refused argument %d",
                 (int)-info);
  return KILN_OK;
}
#endif

/* ---------------------------------------------------------------- eigh */

#if KILN_HAVE_LAPACKE
/*
 * Whether the host LAPACK that liblapacke loaded is OpenBLAS's (Debian's
 * libopenblas0-pthread as the liblapack.so.3 alternative, or first on LD_LIBRARY_PATH):
 * threaded and blocked, so the O(n^3) divide and conquer routines (dstedc, dbdsdc), BLAS 3
 * in their merges, beat the O(n^2) MRRR and bisection ones, which run on one core.
 */
static int
host_fast_blas(void)
{
  return dlsym(RTLD_DEFAULT, "openblas_get_num_threads") != NULL;
}

/* Whether eigh's tridiagonal eigenvectors of order n come from MRRR (else dstedc). */
static int
use_mrrr(uint64_t n)
{
  if (host_pick("stemr") || host_pick("larrv") || host_pick("stedc"))
    return !host_pick("stedc");
  int h = kiln__lsp_mrrr_min();
  if (h >= 0)
    return n >= (uint64_t)h;
  /* MRRR on every host thread beat OpenBLAS's dstedc on the H200's host at 4096 (first run:
   * dstedc 1.9 s, single-threaded dstemr 1.0 s) */
  return n >= KILN__LSP_MRRR_MIN;
}
#endif

static atomic_int hook_mrrr_threads = -1;

void
kiln__linalg_spectral_test_mrrr_threads(int threads)
{
  atomic_store(&hook_mrrr_threads, threads);
}

#if KILN_HAVE_LAPACKE
typedef struct sv_ord {
  double s;
  uint64_t i;
} sv_ord;

static int
sv_desc(const void *x, const void *y)
{
  double a = ((const sv_ord *)x)->s, b = ((const sv_ord *)y)->s;
  return (a < b) - (a > b);
}

/* One thread's share of the parallel MRRR: eigenpairs il .. iu (1-based) of (d, e). */
typedef struct mrrr_job {
  const double *d, *e;
  uint64_t n, il, iu, lo;
  double *w, *z; /* pair j (0-based) into w[j - lo] and row j - lo of z (n long) */
  lapack_int info;
} mrrr_job;

static void *
mrrr_run(void *arg)
{
  mrrr_job *j = arg;
  uint64_t n = j->n, m = j->iu - j->il + 1;
  double *dc = malloc(n * sizeof *dc), *ec = malloc(n * sizeof *ec);
  double *wt = malloc(n * sizeof *wt);
  lapack_int *supp = malloc(2 * m * sizeof *supp), found = 0, tryrac = 1;
  j->info = -1;
  if (dc && ec && wt && supp) {
    memcpy(dc, j->d, n * sizeof *dc);
    memcpy(ec, j->e, n * sizeof *ec);
    /* column-major: the vectors contiguous, straight into the thread's rows of z (dstemr
     * writes its m columns only) */
    j->info =
        LAPACKE_dstemr(LAPACK_COL_MAJOR, 'V', 'I', (lapack_int)n, dc, ec, 0.0, 0.0,
                       (lapack_int)j->il, (lapack_int)j->iu, &found, wt,
                       j->z + (j->il - 1 - j->lo) * n, (lapack_int)n, (lapack_int)m, supp, &tryrac);
    if (j->info == 0 && (uint64_t)found != m)
      j->info = 1;
  }
  if (j->info == 0)
    memcpy(j->w + j->il - 1 - j->lo, wt, m * sizeof *wt);
  free(dc);
  free(ec);
  free(wt);
  free(supp);
  return NULL;
}

/* Runs fn on count jobs of size bytes each, on count - 1 new threads and the caller's. */
static void
run_jobs(void *(*fn)(void *), void *jobs, size_t size, uint64_t count)
{
  pthread_t th[64];
  uint64_t started = 0;
  for (uint64_t t = 1; t < count && t < 64; t++) {
    if (pthread_create(&th[t], NULL, fn, (char *)jobs + t * size) != 0)
      break;
    started = t;
  }
  fn(jobs);
  for (uint64_t t = 1; t <= started; t++)
    pthread_join(th[t], NULL);
  for (uint64_t t = started + 1; t < count; t++) /* threads that could not start */
    fn((char *)jobs + t * size);
}

/* The eigenvalues il .. iu (1-based) by bisection (dstebz), to place a split between them. */
typedef struct gap_job {
  const double *d, *e;
  uint64_t n, il, iu, best; /* best: 0-based index of the first value after the widest gap */
} gap_job;

static void *
gap_run(void *arg)
{
  gap_job *j = arg;
  uint64_t m0 = j->iu - j->il + 1;
  double w[16];
  lapack_int ib[16], is[16 + 1], m = 0, nsplit = 0;
  lapack_int *isplit = j->n <= 16 ? is : malloc(j->n * sizeof *isplit);
  lapack_int *iblock = ib;
  j->best = (j->il + j->iu) / 2;
  if (!isplit || m0 > 16 || m0 < 2)
    return NULL;
  lapack_int info =
      LAPACKE_dstebz('I', 'E', (lapack_int)j->n, 0.0, 0.0, (lapack_int)j->il, (lapack_int)j->iu,
                     0.0, j->d, j->e, &m, &nsplit, w, iblock, isplit);
  if (info == 0 && (uint64_t)m == m0) {
    double bg = -1;
    for (uint64_t k = 1; k < m0; k++) {
      double g = (w[k] - w[k - 1]) / (fabs(w[k]) + fabs(w[k - 1]) + DBL_MIN);
      if (g > bg) {
        bg = g;
        j->best = j->il - 1 + k;
      }
    }
  }
  if (isplit != is)
    free(isplit);
  return NULL;
}

/*
 * The eigenpairs lo .. hi - 1 (0-based, ascending) of (d, e; e[n-1] = 0) by MRRR on several
 * host threads (MRRR computes each vector on its own, which is what makes it parallel:
 * ScaLAPACK's pdstegr and PMRRR split the index range the same way): one dstemr call per
 * index range. The ranges are cut at the widest relative gap among the 8 eigenvalues around
 * each even split (found by bisection, in parallel), so that no pair of close eigenvalues
 * straddles two calls, whose root representations differ. w[hi - lo], the vector of w[j] at
 * z + j n. Returns LAPACK's info (nonzero: the caller falls back).
 */
static lapack_int
mrrr_parallel(uint64_t n, const double *d, const double *e, uint64_t lo, uint64_t hi, double *w,
              double *z, uint64_t threads)
{
  uint64_t cnt = hi - lo;
  if (threads > 64)
    threads = 64;
  if (threads > cnt / 2)
    threads = cnt / 2 ? cnt / 2 : 1;
  gap_job gap[64];
  for (uint64_t t = 1; t < threads; t++) {
    uint64_t target = lo + t * cnt / threads; /* the split before 0-based index target */
    uint64_t il = target > lo + 3 ? target - 3 : lo + 1, iu = target + 4 < hi ? target + 4 : hi;
    gap[t - 1] = (gap_job){.d = d, .e = e, .n = n, .il = il, .iu = iu};
  }
  if (threads > 1)
    run_jobs(gap_run, gap, sizeof gap[0], threads - 1);
  mrrr_job job[64];
  uint64_t start = lo, nj = 0;
  for (uint64_t t = 0; t < threads && start < hi; t++) {
    uint64_t end = t + 1 < threads ? gap[t].best : hi;
    if (end <= start)
      continue;
    job[nj++] =
        (mrrr_job){.d = d, .e = e, .n = n, .il = start + 1, .iu = end, .lo = lo, .w = w, .z = z};
    start = end;
  }
  run_jobs(mrrr_run, job, sizeof job[0], nj);
  for (uint64_t t = 0; t < nj; t++)
    if (job[t].info != 0)
      return job[t].info;
  /* Each call takes its own root representation, and vectors of two calls can lose
   * orthogonality far beyond what the gap between them predicts (a 33 x 33 case, cut at a
   * relative gap of 0.24: 3000 eps between vectors three places apart). The vectors around
   * each cut are checked against each other (O(n) a pair); past 10 n eps this returns
   * nonzero and the caller falls back to dstedc. */
  double tol = 10.0 * (double)n * DBL_EPSILON;
  for (uint64_t t = 1; t < nj; t++) {
    uint64_t prev = job[t - 1].il - 1 - lo, cut = job[t].il - 1 - lo, end = job[t].iu - lo;
    uint64_t a0 = cut > prev + 8 ? cut - 8 : prev, b1 = end < cut + 8 ? end : cut + 8;
    for (uint64_t a = a0; a < cut; a++)
      for (uint64_t b = cut; b < b1; b++) {
        double dot = 0.0;
        for (uint64_t i = 0; i < n; i++)
          dot += z[a * n + i] * z[b * n + i];
        if (fabs(dot) > tol)
          return 1;
      }
  }
  return 0;
}

static uint64_t
host_threads_env(void)
{
  return debug_num("threads=", 1, 64);
}

/* Host threads for the parallel MRRR and dbdsvdx: the online CPUs, at most one per 64 rows. */
static uint64_t
mrrr_threads(uint64_t n)
{
  int h = atomic_load(&hook_mrrr_threads);
  if (h > 0)
    return (uint64_t)h;
  if (host_threads_env())
    return host_threads_env();
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t t = c > 0 ? (uint64_t)c : 1, most = n / 64;
  t = t < most ? t : most;
  return t ? t : 1;
}
#endif

#if KILN_HAVE_LAPACKE
/*
 * dstemr's two stages, which LAPACKE does not wrap: dlarre (the root representations and
 * every eigenvalue, by dqds for the whole spectrum) and dlarrv (the vectors of the index range
 * dol .. dou). Looked up at run time in the LAPACK the process loaded (the reference one and
 * OpenBLAS's both export them); without them eigh keeps the per-thread dstemr calls.
 */
typedef void dlarre_fn(const char *range, const lapack_int *n, double *vl, double *vu,
                       const lapack_int *il, const lapack_int *iu, double *d, double *e, double *e2,
                       const double *rtol1, const double *rtol2, const double *spltol,
                       lapack_int *nsplit, lapack_int *isplit, lapack_int *m, double *w,
                       double *werr, double *wgap, lapack_int *iblock, lapack_int *indexw,
                       double *gers, double *pivmin, double *work, lapack_int *iwork,
                       lapack_int *info, size_t range_len);
typedef void dlarrv_fn(const lapack_int *n, const double *vl, const double *vu, double *d,
                       double *l, const double *pivmin, const lapack_int *isplit,
                       const lapack_int *m, const lapack_int *dol, const lapack_int *dou,
                       const double *minrgp, const double *rtol1, const double *rtol2, double *w,
                       double *werr, double *wgap, const lapack_int *iblock,
                       const lapack_int *indexw, const double *gers, double *z,
                       const lapack_int *ldz, lapack_int *isuppz, double *work, lapack_int *iwork,
                       lapack_int *info);
typedef void dlarrr_fn(const lapack_int *n, const double *d, const double *e, lapack_int *info);

/* What dlarre leaves for dlarrv (dstemr's work arrays), shared read-only by the threads. */
typedef struct mrrv_root {
  lapack_int n, m;
  double vl, vu, pivmin, rtol1, rtol2;
  const double *d, *l, *w, *werr, *wgap, *gers;
  const lapack_int *isplit, *iblock, *indexw;
  dlarrv_fn *larrv;
} mrrv_root;

/* One thread's dlarrv call: the vectors dol .. dou (1-based, in dlarre's order). */
typedef struct mrrv_job {
  const mrrv_root *r;
  lapack_int dol, dou, lo, info;
  double *w, *zt; /* the refined value j - 1 into w[j - 1 - lo], its vector at zt + (j-1-lo) n */
} mrrv_job;

static void *
mrrv_run(void *arg)
{
  mrrv_job *j = arg;
  const mrrv_root *r = j->r;
  size_t n = (size_t)r->n, m = (size_t)r->m;
  /* dlarrv keeps cluster representations in the columns next to the range (dol - 1 and
   * dou + 1) and zeroes them: the thread's own block of columns zl .. zu */
  lapack_int zl = j->dol > 1 ? j->dol - 1 : 1, zu = j->dou < r->m ? j->dou + 1 : r->m;
  size_t cols = (size_t)(zu - zl + 1);
  double *d = malloc(n * sizeof *d), *l = malloc(n * sizeof *l), *w = malloc(m * sizeof *w);
  double *werr = malloc(m * sizeof *werr), *wgap = malloc(m * sizeof *wgap);
  double *work = malloc(12 * n * sizeof *work), *z = malloc(n * cols * sizeof *z);
  lapack_int *iwork = malloc(7 * n * sizeof *iwork), *isuppz = malloc(2 * m * sizeof *isuppz);
  j->info = -1;
  if (d && l && w && werr && wgap && work && z && iwork && isuppz) {
    memcpy(d, r->d, n * sizeof *d);
    memcpy(l, r->l, n * sizeof *l);
    memcpy(w, r->w, m * sizeof *w);
    memcpy(werr, r->werr, m * sizeof *werr);
    memcpy(wgap, r->wgap, m * sizeof *wgap);
    /* Fortran's Z(1, zl) is z[0]: the base lies zl - 1 columns before the block, and dlarrv
     * touches no column outside zl .. zu (an address computed, never dereferenced) */
    double *zbase = (double *)((uintptr_t)z - (uintptr_t)(zl - 1) * n * sizeof *z);
    lapack_int ldz = r->n;
    const double minrgp = 1e-3; /* dstemr's */
    r->larrv(&r->n, &r->vl, &r->vu, d, l, &r->pivmin, r->isplit, &r->m, &j->dol, &j->dou, &minrgp,
             &r->rtol1, &r->rtol2, w, werr, wgap, r->iblock, r->indexw, r->gers, zbase, &ldz,
             isuppz, work, iwork, &j->info);
  }
  if (j->info == 0) {
    memcpy(j->w + j->dol - 1 - j->lo, w + j->dol - 1, (size_t)(j->dou - j->dol + 1) * sizeof *w);
    memcpy(j->zt + (size_t)(j->dol - 1 - j->lo) * n, z + (size_t)(j->dol - zl) * n,
           (size_t)(j->dou - j->dol + 1) * n * sizeof *z);
  }
  free(d);
  free(l);
  free(w);
  free(werr);
  free(wgap);
  free(work);
  free(z);
  free(iwork);
  free(isuppz);
  return NULL;
}

/* Ascending order of eigenvalues that come block by block (dlarre's order). */
static int
w_asc(const void *x, const void *y)
{
  double a = ((const sv_ord *)x)->s, b = ((const sv_ord *)y)->s;
  return (a > b) - (a < b);
}

/*
 * The eigenpairs lo .. hi - 1 (0-based, ascending) of (d, e; n >= 3) by MRRR as dstemr
 * computes them (RANGE 'A'; a subset lo > 0 or hi < n only where the matrix does not split,
 * else info 1), with the vector stage on several host threads: dlarre once (root representations,
 * every eigenvalue by dqds), then one dlarrv call per thread for an index range (dlarrv's dol/dou,
 * the subset interface ScaLAPACK's parallel MRRR uses). A cluster that straddles two ranges is
 * refined by both threads alike (the same deterministic computation), so the vectors equal one
 * call's. Measured on the H200's host (16 cores) it lost to the per-thread dstemr calls
 * (mrrr_parallel): eigh's host stage 1.2 s against 0.47 s at 4096, 54 against 32 ms at 1024
 * (123 ms on one thread, 80 on four): dlarre runs alone, and dlarrv's cost with a subset
 * does not shrink with it (on 2 cores, 4 threads did 3.3 times one call's work). Kept as
 * KILN_DEBUG_LINALG_HOST=larrv. w[hi - lo] ascending, the vector of w[j] at zt + j n.
 * Returns LAPACK's info (nonzero: failed, or dlarre/dlarrv not found: the caller falls
 * back); d and e kept.
 */
static lapack_int
mrrv_parallel(uint64_t n, const double *d, const double *e, uint64_t lo, uint64_t hi, double *w,
              double *zt, uint64_t threads)
{
  dlarre_fn *larre = (dlarre_fn *)(uintptr_t)dlsym(RTLD_DEFAULT, "dlarre_");
  dlarrv_fn *larrv = (dlarrv_fn *)(uintptr_t)dlsym(RTLD_DEFAULT, "dlarrv_");
  dlarrr_fn *larrr = (dlarrr_fn *)(uintptr_t)dlsym(RTLD_DEFAULT, "dlarrr_");
  if (!larre || !larrv || !larrr || n < 3 || n > INT32_MAX / 16)
    return -1;
  if (threads > 64)
    threads = 64;
  if (threads > hi - lo)
    threads = hi - lo;
  size_t nn = (size_t)n;
  double *dc = malloc(nn * sizeof *dc), *ec = malloc(nn * sizeof *ec),
         *e2 = malloc(nn * sizeof *e2), *wr = malloc(nn * sizeof *wr),
         *werr = malloc(nn * sizeof *werr), *wgap = malloc(nn * sizeof *wgap),
         *gers = malloc(2 * nn * sizeof *gers), *work = malloc(6 * nn * sizeof *work);
  lapack_int *isplit = malloc(nn * sizeof *isplit), *iblock = malloc(nn * sizeof *iblock),
             *indexw = malloc(nn * sizeof *indexw), *iwork = malloc(5 * nn * sizeof *iwork);
  sv_ord *ord = malloc(nn * sizeof *ord);
  lapack_int info = -1;
  if (!(dc && ec && e2 && wr && werr && wgap && gers && work && isplit && iblock && indexw &&
        iwork && ord))
    goto done;
  /* dstemr's scaling into the range its pivot bounds assume */
  double eps = DBL_EPSILON, smlnum = DBL_MIN / eps, rmin = sqrt(smlnum),
         rmax = fmin(sqrt(1.0 / smlnum), 1.0 / sqrt(sqrt(DBL_MIN))), tnrm = 0, scale = 1.0;
  for (size_t i = 0; i < nn; i++)
    tnrm = fmax(tnrm, fmax(fabs(d[i]), i + 1 < nn ? fabs(e[i]) : 0.0));
  if (tnrm > 0 && tnrm < rmin)
    scale = rmin / tnrm;
  else if (tnrm > rmax)
    scale = rmax / tnrm;
  for (size_t i = 0; i < nn; i++) {
    dc[i] = d[i] * scale;
    ec[i] = i + 1 < nn ? e[i] * scale : 0.0;
    e2[i] = ec[i] * ec[i];
  }
  lapack_int ni = (lapack_int)n, rr = 0, il = 0, iu = 0, nsplit = 0, m = 0;
  /* dstemr with tryrac: split where relative accuracy allows (its refinement of the values by
   * dlarrj is left out: eigh promises absolute accuracy) */
  larrr(&ni, dc, ec, &rr);
  double thresh = rr == 0 ? eps : -eps, rtol1 = sqrt(eps), rtol2 = fmax(sqrt(eps) * 5e-3, 4 * eps);
  double vl = 0, vu = 0, pivmin = 0;
  larre("A", &ni, &vl, &vu, &il, &iu, dc, ec, e2, &rtol1, &rtol2, &thresh, &nsplit, isplit, &m, wr,
        werr, wgap, iblock, indexw, gers, &pivmin, work, iwork, &info, 1);
  if (info != 0 || m != ni || (nsplit > 1 && (lo > 0 || hi < n))) {
    info = info ? info : 1;
    goto done;
  }
  mrrv_root root = {.n = ni,
                    .m = m,
                    .vl = vl,
                    .vu = vu,
                    .pivmin = pivmin,
                    .rtol1 = rtol1,
                    .rtol2 = rtol2,
                    .d = dc,
                    .l = ec,
                    .w = wr,
                    .werr = werr,
                    .wgap = wgap,
                    .gers = gers,
                    .isplit = isplit,
                    .iblock = iblock,
                    .indexw = indexw,
                    .larrv = larrv};
  /* ranges of equal size (dlarrv's cost is about even per vector), each end moved to the
   * widest gap among the 8 values around it, so few clusters straddle two threads */
  mrrv_job job[64];
  uint64_t nj = 0, start = lo, cnt = hi - lo;
  for (uint64_t t = 0; t < threads && start < hi; t++) {
    uint64_t end = t + 1 < threads ? lo + (t + 1) * cnt / threads : hi;
    if (end < hi) {
      uint64_t a = end > start + 4 ? end - 4 : start + 1, b = end + 4 < hi ? end + 4 : hi;
      double bg = -1;
      for (uint64_t k = a; k < b; k++) /* a split before k: the gap right of k - 1 */
        if (wgap[k - 1] > bg) {
          bg = wgap[k - 1];
          end = k;
        }
    }
    if (end <= start)
      continue;
    job[nj++] = (mrrv_job){.r = &root,
                           .dol = (lapack_int)start + 1,
                           .dou = (lapack_int)end,
                           .lo = (lapack_int)lo,
                           .w = w,
                           .zt = zt};
    start = end;
  }
  run_jobs(mrrv_run, job, sizeof job[0], nj);
  for (uint64_t t = 0; t < nj; t++)
    if (job[t].info != 0) {
      info = job[t].info;
      goto done;
    }
  for (size_t i = 0; i < hi - lo; i++)
    w[i] /= scale;
  if (nsplit > 1) { /* blocks one after the other: sort, vectors along (one cycle at a time) */
    for (size_t i = 0; i < nn; i++)
      ord[i] = (sv_ord){w[i], i};
    qsort(ord, nn, sizeof *ord, w_asc);
    double *tmp = work; /* 6 n long */
    for (size_t i = 0; i < nn; i++) {
      if (ord[i].i == SIZE_MAX)
        continue;
      /* position i takes source ord[i].i; follow the cycle */
      size_t dst = i, src = ord[i].i;
      memcpy(tmp, zt + i * nn, nn * sizeof *tmp);
      double wt = w[i];
      while (src != i) {
        memcpy(zt + dst * nn, zt + src * nn, nn * sizeof *zt);
        w[dst] = w[src];
        ord[dst].i = SIZE_MAX;
        dst = src;
        src = ord[dst].i;
      }
      memcpy(zt + dst * nn, tmp, nn * sizeof *tmp);
      w[dst] = wt;
      ord[dst].i = SIZE_MAX;
    }
  }
done:
  free(dc);
  free(ec);
  free(e2);
  free(wr);
  free(werr);
  free(wgap);
  free(gers);
  free(work);
  free(isplit);
  free(iblock);
  free(indexw);
  free(iwork);
  free(ord);
  return info;
}

/*
 * Eigenvalues (ascending, into d) and optionally vectors (z, n x n, vector j in row j: the
 * column-major Z LAPACK writes, which the device transposes) of the symmetric tridiagonal
 * (d[n], e[n-1]; e has n entries, the last one scratch). Vectors come from MRRR (O(n^2))
 * where use_mrrr says so (the reference LAPACK from order KILN__LSP_MRRR_MIN up: its divide
 * and conquer is O(n^3) through a single-threaded BLAS): one dstemr call per host thread
 * (mrrr_parallel), or with KILN_DEBUG_LINALG_HOST=larrv dlarre once and dlarrv over the
 * threads (mrrv_parallel: 2.5x slower on the H200's host, see there); otherwise, and
 * whenever MRRR gives up, from dstedc. Level 1 and 2 (eigh's orthogonality check redoing a
 * matrix) take dstedc and dsteqr.
 */
static kiln_status
tridiag_eig(const char *op, uint64_t b, uint64_t n, double *d, double *e, double *z, int level)
{
  if (n == 0)
    return KILN_OK;
  if (z && level > 0) { /* the check's redo: dstedc, then dsteqr */
    lapack_int info =
        level == 1 ? LAPACKE_dstedc(LAPACK_COL_MAJOR, 'I', (lapack_int)n, d, e, z, (lapack_int)n)
                   : LAPACKE_dsteqr(LAPACK_COL_MAJOR, 'I', (lapack_int)n, d, e, z, (lapack_int)n);
    return info == 0 ? KILN_OK : no_conv(op, level == 1 ? "dstedc" : "dsteqr", b, info);
  }
  if (!z) {
    lapack_int info = LAPACKE_dsterf((lapack_int)n, d, e);
    return info == 0 ? KILN_OK : no_conv(op, "dsterf", b, info);
  }
  double *w = malloc(n * sizeof *w), *d0 = malloc(n * sizeof *d0), *e0 = malloc(n * sizeof *e0);
  lapack_int *supp = malloc(2 * n * sizeof *supp);
  kiln_status s = host_mem(op, w && d0 && e0 && supp);
  if (s == KILN_OK) {
    memcpy(d0, d, n * sizeof *d0);
    memcpy(e0, e, (n - 1) * sizeof *e0);
    e0[n - 1] = e[n - 1] = 0.0;
    lapack_int found = 0, tryrac = 1, info = 1;
    uint64_t th = use_mrrr(n) ? mrrr_threads(n) : 0;
    if (th && n >= 3 && host_pick("larrv")) {
      info = mrrv_parallel(n, d0, e0, 0, n, w, z, th);
      found = info == 0 ? (lapack_int)n : 0;
      if (info != 0)
        kiln__log(KILN__LOG_DEBUG, "%s: dlarre/dlarrv gave up on matrix %llu (info %d): dstemr", op,
                  (unsigned long long)b, (int)info);
    }
    if (info != 0 && th > 1) {
      info = mrrr_parallel(n, d0, e0, 0, n, w, z, th);
      found = info == 0 ? (lapack_int)n : 0;
    } else if (info != 0 && th == 1) {
      info = LAPACKE_dstemr(LAPACK_COL_MAJOR, 'V', 'A', (lapack_int)n, d, e, 0.0, 0.0, 0, 0, &found,
                            w, z, (lapack_int)n, (lapack_int)n, supp, &tryrac);
    }
    if (info == 0 && (uint64_t)found == n) {
      memcpy(d, w, n * sizeof *d);
    } else {
      if (th)
        kiln__log(KILN__LOG_DEBUG, "%s: dstemr gave up on matrix %llu (info %d): dstedc", op,
                  (unsigned long long)b, (int)info);
      memcpy(d, d0, n * sizeof *d);
      info = LAPACKE_dstedc(LAPACK_COL_MAJOR, 'I', (lapack_int)n, d, e0, z, (lapack_int)n);
      if (info != 0)
        s = no_conv(op, "dstedc", b, info);
    }
  }
  free(w);
  free(d0);
  free(e0);
  free(supp);
  return s;
}
#endif

static kiln_status
kern(const kiln__lsp *L, const char *name, cl_kernel *k)
{
  return kiln__ops_kernel(L->op, L->ctx, SRC, L->dt, name, k);
}

static size_t
group_local(const kiln__lsp *L, cl_kernel k, size_t cap)
{
  size_t max = kiln__launch_pow2_local(L->ctx, k);
  if (!L->ctx->info.is_gpu && cap > 64)
    cap = 64;
  return max < cap ? max : cap;
}

static void
args_mat(kiln__args *a, kiln__lsp_mat x)
{
  kiln__args_mem(a, x.mem);
  kiln__args_u64(a, x.off);
}

/*
 * Phase timing (KILN_LOG=debug): waits for the queue and logs the time since *t, then
 * restarts it. The waits cost three synchronisations per call, so only debug logging pays.
 */
static double
mono_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void
phase(const kiln__lsp *L, const char *what, uint64_t n, double *t)
{
  if (kiln__log_level() < KILN_LOG_DEBUG)
    return;
  clFinish(L->ctx->queue);
  double now = mono_s();
  if (*t > 0)
    kiln__log(KILN__LOG_DEBUG, "%s: phase %s n %llu %s %.3f ms", L->op, what, (unsigned long long)n,
              kiln_dtype_name(L->dt), (now - *t) * 1e3);
  *t = now;
}

/* With phase's timing: the host's time since *t, before waiting for the queue (how long the
 * enqueues took: past the phase's whole time, the host limits it). */
static void
phase_host(const kiln__lsp *L, const char *what, uint64_t n, const double *t)
{
  if (kiln__log_level() < KILN_LOG_DEBUG || *t <= 0)
    return;
  kiln__log(KILN__LOG_DEBUG, "%s: phase %s n %llu %s enqueued in %.3f ms", L->op, what,
            (unsigned long long)n, kiln_dtype_name(L->dt), (mono_s() - *t) * 1e3);
}

static kiln_status
kern_eig(const kiln__lsp *L, const char *name, cl_kernel *k)
{
  return kiln__ops_kernel(L->op, L->ctx, "linalg_eig", L->dt, name, k);
}

/* Lanes per row of tr_fin. */
#define TD_LPR 8
/* tr_symv's tile side, which is also its work-group size (SY_TS in linalg_eig.cl). */
#define TD_TS 32

/* Scratch of the blocked tridiagonal reduction of n x n matrices with panels of nb columns. */
typedef struct td_ws {
  kiln_tensor *vw, *wp, *aa, *part;
  uint64_t nb, nchunk, symk;
  size_t lfin;
  cl_kernel ksym, kfin;
  /* tr_panel (td_panel_groups > 0): its kernel, groups, lanes, grid-barrier counter (one
   * uint) and that counter's value so far */
  cl_kernel kpan;
  uint64_t gpan, sbase;
  size_t lpan;
  kiln_tensor *sync;
} td_ws;

/* Block rows of tr_symv's tiles for a column of len rows below the diagonal. */
static uint64_t
td_blocks(uint64_t len)
{
  return (len + TD_TS - 1) / TD_TS;
}

/*
 * tr_symv's tiles per group for nblk block rows: nblk / 16, from 1 to 4 (about nblk^2 / (2 kt)
 * groups: 2080 at order 4096). On the H200 the reduction of 4096 took 140 ms with 4 and 144
 * with 8 (16: 222 with CLBlast's full update, against 153 with 8); at 1024, 2 beat 4 (20.1
 * against 21.9 ms).
 * KILN_DEBUG_LINALG_HOST=symk=N fixes it.
 */
static uint64_t
td_symk(const td_ws *t, uint64_t nblk)
{
  if (t->symk)
    return t->symk;
  uint64_t k = nblk / 16;
  return k < 1 ? 1 : k > 4 ? 4 : k;
}

/* tr_panel's local memory in elements: its lane sets' tile scratch or tr_fin_panel's. */
static size_t
tr_panel_local(const td_ws *t)
{
  size_t lm = t->lpan / TD_TS * (TD_TS + 8 * (TD_TS + 1)), lf = 4 * t->nb + 6 * t->lpan;
  return lm > lf ? lm : lf;
}

static atomic_int hook_panel = -1;
static atomic_uint panel_launches;

void
kiln__linalg_spectral_test_tr_panel(int mode)
{
  atomic_store(&hook_panel, mode);
}

unsigned
kiln__linalg_spectral_test_tr_panel_launches(void)
{
  return atomic_load(&panel_launches);
}

/*
 * The work-groups of tr_panel, 0 for the per-column kernels: on GPUs of two compute units or
 * more, one group per compute unit (all must be resident at once; KILN_DEBUG_LINALG_HOST=gpan=N
 * takes fewer); `notpanel` or the test hook's 0 keep the per-column kernels, `tpanel` or its
 * 1 force the panel kernel, on CPU devices with one group (PoCL's threads take a launch's
 * groups in chunks: two on one thread would wait for each other forever).
 */
static uint64_t
td_panel_groups(const kiln__lsp *L)
{
  int h = atomic_load(&hook_panel);
  int on = h >= 0 ? h : host_pick("tpanel") ? 1 : host_pick("notpanel") ? 0 : -1;
  uint64_t cu = L->ctx->info.compute_units;
  if (on == 0 || (on < 0 && (!L->ctx->info.is_gpu || cu < 2)))
    return 0;
  if (!L->ctx->info.is_gpu || cu < 1)
    return 1;
  uint64_t g = debug_num("gpan=", 1, 4096);
  return g && g < cu ? g : cu;
}

static void
td_ws_release(td_ws *t)
{
  kiln_tensor_release(t->vw);
  kiln_tensor_release(t->wp);
  kiln_tensor_release(t->aa);
  kiln_tensor_release(t->part);
  kiln_tensor_release(t->sync);
  memset(t, 0, sizeof *t);
}

static kiln_status
td_ws_make(const kiln__lsp *L, uint64_t n, td_ws *t)
{
  memset(t, 0, sizeof *t);
  t->nb = L->nb;
  /* row chunks of the V^T x, W^T x partial sums: a few per compute unit on GPUs */
  t->nchunk = L->ctx->info.is_gpu ? 64 : 4;
  if (debug_num("nchunk=", 1, 1024))
    t->nchunk = debug_num("nchunk=", 1, 1024);
  t->symk = debug_num("symk=", 1, 64);
  KILN_TRY(kern_eig(L, "tr_symv", &t->ksym));
  KILN_TRY(kern_eig(L, "tr_fin", &t->kfin));
  KILN_RETURN_IF(kiln__launch_pow2_local(L->ctx, t->ksym) < TD_TS, KILN_ERR_UNSUPPORTED, L->op,
                 "the device runs tr_symv in work-groups of at most %zu work-items, not %d",
                 kiln__launch_pow2_local(L->ctx, t->ksym), TD_TS);
  /* tr_fin: TD_LPR lanes per row, each summing every TD_LPR-th column of the row's V and W
   * (one lane per row walked them alone, uncoalesced, in long dependent chains), 64 rows per
   * group on GPUs (64 groups at n = 4096: each group repeats the column's reductions) */
  t->lfin = group_local(L, t->kfin, debug_pow2("lfin=", L->ctx->info.is_gpu ? 64 * TD_LPR : 64));
  t->gpan = td_panel_groups(L);
  if (t->gpan) {
    KILN_TRY(kern_eig(L, "tr_panel", &t->kpan));
    /* 8 sets of SY_TS lanes: a task round of 8 x 132 sets covers order 1024's 528 tiles */
    t->lpan = group_local(L, t->kpan, debug_pow2("lpan=", 256));
    /* a row's V and W columns in four loads a lane (nb <= 4 TD_LPR), the partials' columns
     * one lane each */
    if (t->lpan < TD_TS || t->lpan < 2 * t->nb || t->nb > 4 * TD_LPR ||
        tr_panel_local(t) * L->ts > L->ctx->info.local_mem_bytes)
      t->gpan = 0;
  }
  uint64_t nn = n ? n : 1, slots = td_blocks(n > 1 ? n - 1 : 1);
  /* partials: tr_symv's aux groups, or tr_panel's strips */
  uint64_t nparts = t->nchunk > slots ? t->nchunk : slots;
  kiln_status s = kiln__ops_scratch(L->op, L->ctx, L->dt, nn * 3 * t->nb, &t->vw);
  /* the slots (rows of n) and a quadratic-form partial per tile group (at most one a tile) */
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, slots * nn + slots * (slots + 1) / 2, &t->wp);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, nn, &t->aa);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, nparts * (2 + 2 * t->nb), &t->part);
  if (s == KILN_OK && t->gpan)
    s = kiln__ops_scratch(L->op, L->ctx, KILN_I32, 1, &t->sync);
  if (s != KILN_OK)
    td_ws_release(t);
  return s;
}

static void
args_t(kiln__args *a, const kiln_tensor *t)
{
  kiln__args_mem(a, t->mem);
  kiln__args_u64(a, kiln__ops_elem_offset(t));
}

/* The arguments tr_symv and tr_fin share, in their order: column c (panel column i) of a. */
static void
tr_args(kiln__args *args, const td_ws *t, kiln__lsp_mat a, uint64_t n, uint64_t c, uint64_t i,
        uint64_t nch, uint64_t kt)
{
  args_mat(args, a);
  kiln__args_u32(args, (uint32_t)n);
  kiln__args_u32(args, (uint32_t)c);
  kiln__args_u32(args, (uint32_t)i);
  args_t(args, t->vw);
  kiln__args_u32(args, (uint32_t)t->nb);
  args_t(args, t->wp);
  args_t(args, t->aa);
  args_t(args, t->part);
  kiln__args_u32(args, (uint32_t)nch);
  kiln__args_u32(args, (uint32_t)kt);
}

/*
 * Whether sytrd's trailing update writes the upper triangle alone (red_gemm's upper): on GPUs
 * (H200, 4096 f64: reduction 144 against 153 ms); KILN_DEBUG_LINALG_HOST=rtri or rfull
 * chooses.
 */
static int
upper_update(const kiln__lsp *L)
{
  if (host_pick("rtri") || host_pick("rfull"))
    return host_pick("rtri");
  return L->ctx->info.is_gpu;
}

/*
 * The reductions' trailing update C -= X Y^T. With upper, C's upper triangle alone (all that
 * eigh's tr_symv reads) on gemm_tile, the large GEMM kernel where it applies. Otherwise all of
 * C through CLBlast wherever kiln has it, whatever the linalg family's gemm says (that choice,
 * made for LU's and Cholesky's narrow updates, then applies to the back-transformations
 * only). On the H200 gemm_tile took 44 ms of eigh's 4096 run and 68 of svd's, the
 * back-transformations' GEMMs included (the trace does not tell them apart).
 * KILN_DEBUG_LINALG_HOST=rtile keeps gemm_tile, to time them against each other.
 */
static kiln_status
red_gemm(const kiln__lsp *L, uint64_t m, uint64_t n, uint64_t k, kiln__lsp_mat x, kiln__lsp_mat y,
         kiln__lsp_mat c, int upper)
{
  if (upper)
    return kiln__linalg_tile_gemm(
        L->op, L->ctx, L->dt, m, n, k, -1.0, x.mem, x.off, x.ld, 1, y.mem, y.off, 1, y.ld, 0,
        c.mem, c.off, c.ld, 1,
        2u | kiln__linalg_large_bit(L->ctx, L->dt, KILN__LINALG_GEMM_LARGE), 1, 0, 0, 0);
  kiln__lsp l2 = *L;
  if (L->clblast && !host_pick("rtile"))
    l2.tile = 0;
  return kiln__lsp_gemm(&l2, 0, 1, m, n, k, -1.0, x, y, 1.0, c);
}

/* The per-column kernels over the jb columns of the panel from j0: tr_symv, tr_fin. */
static kiln_status
tr_columns(const kiln__lsp *L, td_ws *t, kiln__lsp_mat a, uint64_t n, uint64_t j0, uint64_t jb,
           kiln__lsp_mat d, kiln__lsp_mat e, kiln__lsp_mat tau)
{
  uint64_t nb = t->nb, lpr = t->lfin >= TD_LPR ? TD_LPR : t->lfin;
  for (uint64_t i = 0; i < jb; i++) {
    uint64_t c = j0 + i, len = n - c - 1;
    uint64_t nch = (len + 31) / 32, nblk = td_blocks(len), kt = td_symk(t, nblk), tiles = 0;
    if (nch > t->nchunk)
      nch = t->nchunk;
    for (uint64_t ch = 0; ch * kt < nblk; ch++) /* chunk ch of the strips b < nblk - ch kt */
      tiles += nblk - ch * kt;
    kiln__args args = kiln__args_begin(L->op, t->ksym);
    tr_args(&args, t, a, n, c, i, nch, kt);
    kiln__args_local(&args, TD_TS * (TD_TS + 2) * L->ts);
    KILN_TRY(kiln__args_enqueue_1d(&args, L->ctx, (size_t)(tiles + nch) * TD_TS, TD_TS));
    args = kiln__args_begin(L->op, t->kfin);
    tr_args(&args, t, a, n, c, i, nch, kt);
    args_mat(&args, tau);
    args_mat(&args, d);
    args_mat(&args, e);
    kiln__args_u32(&args, i + 1 < jb);
    kiln__args_u32(&args, (uint32_t)lpr);
    kiln__args_local(&args, (2 * nb + 4 * t->lfin) * L->ts);
    size_t rows = t->lfin / lpr, groups = (size_t)((len + rows - 1) / rows);
    KILN_TRY(kiln__args_enqueue_1d(&args, L->ctx, groups * t->lfin, t->lfin));
  }
  return KILN_OK;
}

/* tr_panel over the jb columns of the panel from j0 (linalg_eig.cl). */
static kiln_status
tr_panel(const kiln__lsp *L, td_ws *t, kiln__lsp_mat a, uint64_t n, uint64_t j0, uint64_t jb,
         kiln__lsp_mat d, kiln__lsp_mat e, kiln__lsp_mat tau)
{
  uint64_t nb = t->nb, lpr = t->lpan >= TD_LPR ? TD_LPR : t->lpan;
  kiln__args args = kiln__args_begin(L->op, t->kpan);
  args_mat(&args, a);
  kiln__args_u32(&args, (uint32_t)n);
  kiln__args_u32(&args, (uint32_t)j0);
  kiln__args_u32(&args, (uint32_t)jb);
  args_t(&args, t->vw);
  kiln__args_u32(&args, (uint32_t)nb);
  args_t(&args, t->wp);
  args_t(&args, t->aa);
  args_t(&args, t->part);
  kiln__args_u32(&args, (uint32_t)t->symk);
  args_mat(&args, tau);
  args_mat(&args, d);
  args_mat(&args, e);
  kiln__args_u32(&args, (uint32_t)lpr);
  kiln__args_mem(&args, t->sync->mem);
  kiln__args_u32(&args, (uint32_t)t->sbase);
  kiln__args_local(&args, tr_panel_local(t) * L->ts);
  t->sbase += t->gpan * (2 * jb - 1);
  atomic_fetch_add(&panel_launches, 1);
  return kiln__args_enqueue_1d(&args, L->ctx, t->gpan * t->lpan, t->lpan);
}

/*
 * Reduces the symmetric n x n matrix a (full, in place) to tridiagonal form as LAPACK's dsytrd
 * (lower) with dlatrd panels of nb columns: d[n], e[n-1], reflectors below the subdiagonal
 * with tau[n-1]. Per panel one launch of tr_panel (td_panel_groups) or per column two
 * (tr_symv, tr_fin; no host wait: tr_fin also updates the next column of its panel), then one
 * GEMM A22 -= [V W] [W V]^T over the trailing matrix's upper triangle (upper_update) or all of
 * it: tr_symv reads the upper one only.
 */
static kiln_status
sytrd(const kiln__lsp *L, td_ws *t, kiln__lsp_mat a, uint64_t n, kiln__lsp_mat d, kiln__lsp_mat e,
      kiln__lsp_mat tau)
{
  if (n == 0)
    return KILN_OK;
  uint64_t nb = t->nb, ld3 = 3 * nb;
  kiln__lsp_mat vw = kiln__lsp_tmat(t->vw, ld3);
  if (t->gpan) {
    KILN_TRY(kiln__linalg_zero(L->op, L->ctx, t->sync));
    t->sbase = 0;
  }
  for (uint64_t j0 = 0; j0 + 1 < n; j0 += nb) {
    uint64_t jb = n - 1 - j0 < nb ? n - 1 - j0 : nb;
    /* the trailing GEMM reads all 2 nb columns: those past jb must be zero */
    cl_int zero = 0;
    cl_int err =
        clEnqueueFillBuffer(L->ctx->queue, t->vw->mem, &zero, sizeof zero,
                            (vw.off + j0 * ld3) * L->ts, (n - j0) * ld3 * L->ts, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return kiln__fail_cl(L->op, err, "clEnqueueFillBuffer");
    KILN_TRY(t->gpan ? tr_panel(L, t, a, n, j0, jb, d, e, tau)
                     : tr_columns(L, t, a, n, j0, jb, d, e, tau));
    uint64_t r0 = j0 + jb, nt = n - r0;
    kiln__lsp_mat a22 = a, x = vw, y = vw;
    a22.off += r0 * n + r0;
    x.off += r0 * ld3;
    y.off += r0 * ld3 + nb;
    KILN_TRY(red_gemm(L, nt, nt, 2 * nb, x, y, a22, upper_update(L)));
  }
  cl_int err = clEnqueueCopyBuffer(L->ctx->queue, a.mem, d.mem, (a.off + (n - 1) * (n + 1)) * L->ts,
                                   (d.off + n - 1) * L->ts, L->ts, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(L->op, err, "clEnqueueCopyBuffer");
}

static kiln_status grid2(const kiln__lsp *L, kiln__args *args, uint64_t g0, uint64_t g1);
static kiln_status orth_err_dev(const kiln__lsp *L, kiln__lsp_mat x, uint64_t count, uint64_t n,
                                double *err);

/*
 * Whether eigh's tridiagonal stage of order n runs on the device (lib/ops/linalg_tridiag.c):
 * on GPUs from KILN__LSP_TDEV_MIN; KILN_DEBUG_LINALG_HOST=tdev forces it, notdev (or naming
 * a host routine) keeps the host's; the test hook overrides both.
 */
static int
use_tdev(const kiln__lsp *L, uint64_t n)
{
  int h = kiln__lsp_tdev_hook();
  if (h >= 0)
    return h;
  if (host_pick("tdev"))
    return 1;
  if (host_pick("notdev") || host_pick("stemr") || host_pick("stedc") || host_pick("larrv"))
    return 0;
  return L->ctx->info.is_gpu && n >= KILN__LSP_TDEV_MIN;
}

/* eigh's orthogonality check: its bound when the hook sets one (> 0), and the redone matrices. */
static _Atomic double hook_orth = -1.0;
static atomic_uint redone;

void
kiln__linalg_spectral_test_eigh_check(double bound)
{
  atomic_store(&hook_orth, bound);
}

unsigned
kiln__linalg_spectral_test_eigh_redone(void)
{
  return atomic_load(&redone);
}

/*
 * Matrix b's Z^T from the host (hz, LAPACK's column-major Z, f64) into the pinned slot pz
 * (f32 rounded into it; for f64 hz is the slot) and up to its device buffer, which the
 * back-transformation's GEMM takes transposed. Not waited for: the queue is in order.
 */
static kiln_status
z_upload(const kiln__lsp *L, kiln__lh_buf *pz, const double *hz, uint64_t b, uint64_t n)
{
  char *hp = (char *)pz->p + b * n * n * L->ts;
  if (L->dt == KILN_F32)
    kiln__lh_store(KILN_F32, hz + b * n * n, n * n, hp);
  cl_int err = clEnqueueWriteBuffer(L->ctx->queue, pz->dev, CL_FALSE, b * n * n * L->ts,
                                    n * n * L->ts, hp, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK
                           : kiln__fail_cl(L->op, err, "clEnqueueWriteBuffer (eigenvectors)");
}

kiln_status
kiln_linalg_eigh(kiln_context *ctx, const kiln_tensor *a, kiln_uplo uplo, kiln_tensor **w,
                 kiln_tensor **v)
{
  static const char op[] = "kiln_linalg_eigh";
  KILN_TRY(kiln__ctx_check(op, ctx));
  if (kiln__tensor_check(op, a, ctx) == KILN_OK && (a->dtype == KILN_C64 || a->dtype == KILN_C128))
    return kiln__lsp_eigh_complex(ctx, a, uplo, w, v);
  KILN_TRY(kiln__lsp_check_mat(op, ctx, a, "a"));
  KILN_TRY(kiln__lsp_check_square(op, a, "a"));
  KILN_RETURN_IF(uplo != KILN_UPPER && uplo != KILN_LOWER, KILN_ERR_INVALID_ARGUMENT, op,
                 "uplo is %d, not KILN_UPPER or KILN_LOWER", (int)uplo);
  KILN_RETURN_IF(!w, KILN_ERR_INVALID_ARGUMENT, op, "w is NULL");
  KILN_TRY(need_lapacke(op, "the tridiagonal eigenvalue stage of eigh"));
  size_t nd = a->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = kiln__lsp_batch(a);
  int64_t wt[1] = {(int64_t)n}, vt[2] = {(int64_t)n, (int64_t)n};
  kiln__shape ws_ = kiln__lsp_shape(a, wt, 1), vs = kiln__lsp_shape(a, vt, 2);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, a->dtype, &ws_, w);
  if (s == KILN_OK && v)
    s = kiln__lsp_out(&o, op, ctx, a->dtype, &vs, v);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  kiln_tensor *work = NULL, *dd = NULL, *ee = NULL, *tau = NULL, *qm = NULL;
  kiln__lsp_ws ws = {0};
  td_ws tw = {0};
  double t0 = 0;
  double *hd = NULL, *he = NULL, *hz = NULL, *wd = NULL, *hd0 = NULL;
  uint64_t cnt = batch * n, nhost = 0;
  unsigned char *onhost = NULL;
  kiln__lsp_tdev *tds = NULL;
  kiln__lh_buf *pz = NULL;
  if (s == KILN_OK && cnt) {
    s = kiln__ops_scratch(op, ctx, a->dtype, a->numel, &work);
    if (s == KILN_OK)
      s = kiln__ops_scratch(op, ctx, a->dtype, cnt, &dd);
    if (s == KILN_OK)
      s = kiln__ops_scratch(op, ctx, a->dtype, cnt, &ee);
    if (s == KILN_OK)
      s = kiln__ops_scratch(op, ctx, a->dtype, cnt, &tau);
    /* the reduction's panel: narrower than the back-transformation's blocks on GPUs */
    kiln__lsp Lr = L;
    if (L.nb_rule && ctx->info.is_gpu)
      Lr.nb = KILN__LSP_EIGH_NB_GPU;
    if (s == KILN_OK)
      s = td_ws_make(&Lr, n, &tw);
    if (s == KILN_OK && v)
      s = kiln__lsp_ws_make(&L, n, n, &ws);
    if (s == KILN_OK) {
      kiln_tensor *view = NULL;
      s = kiln__tensor_view(op, work, 0, &a->shape, &view);
      if (s == KILN_OK)
        s = kiln__ops_copy(op, ctx, a, view);
      kiln_tensor_release(view);
    }
    cl_kernel kf;
    if (s == KILN_OK)
      s = kern(&L, "sym_fill", &kf);
    phase(&L, "start", n, &t0);
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
      kiln__lsp_mat ab = kiln__lsp_tmat(work, n);
      ab.off += b * n * n;
      kiln__args args = kiln__args_begin(op, kf);
      args_mat(&args, ab);
      kiln__args_u32(&args, (uint32_t)n);
      kiln__args_u32(&args, uplo == KILN_UPPER);
      size_t g0 = (size_t)((n + 15) / 16 * 16), global[2] = {g0, g0}, local[2] = {16, 16};
      s = args.status;
      if (s == KILN_OK)
        s = kiln__args_enqueue(&args, ctx, 2, global, local);
      kiln__lsp_mat db = kiln__lsp_tmat(dd, 1), eb = kiln__lsp_tmat(ee, 1),
                    tb = kiln__lsp_tmat(tau, 1);
      db.off += b * n;
      eb.off += b * n;
      tb.off += b * n;
      if (s == KILN_OK)
        s = sytrd(&L, &tw, ab, n, db, eb, tb);
    }
    phase_host(&L, "tridiagonal reduction", n, &t0);
    phase(&L, "tridiagonal reduction", n, &t0);
    if (s == KILN_OK)
      s = kiln__lsp_download(&L, dd, &hd);
    if (s == KILN_OK)
      s = kiln__lsp_download(&L, ee, &he);
    if (s == KILN_OK)
      s = host_mem(op, (onhost = malloc(batch)) != NULL && (wd = malloc(n * sizeof *wd)) != NULL);
    /* the device stage first: its reads of the eigenvalues would otherwise wait for Q */
    int tdev = s == KILN_OK && use_tdev(&L, n);
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
      int done = 0;
      kiln__lsp_mat zb = {NULL, 0, n};
      if (v) {
        zb = kiln__lsp_tmat(*v, n);
        zb.off += b * n * n;
      }
      if (tdev)
        s = kiln__lsp_tridiag_device(&L, &tds, n, hd + b * n, he + b * n, wd, zb, &done);
      if (done)
        memcpy(hd + b * n, wd, n * sizeof *wd);
      onhost[b] = !done;
      nhost += !done;
    }
    if (tdev)
      phase(&L, "device tridiagonal stage", n, &t0);
    /* Z from the device stage is in V already: V = diag(1, Q') Z by the reflectors applied
     * to its rows 1 .. n-1 (the blocked compact-WY update, about 2 n^3 flops). For the host
     * route, Q = diag(1, Q') formed on the device while the host computes Z; then V = Q Z is
     * one GEMM. */
    for (uint64_t b = 0; s == KILN_OK && v && b < batch && n > 2; b++) {
      if (onhost[b])
        continue;
      kiln__lsp_mat ab = kiln__lsp_tmat(work, n), tb = kiln__lsp_tmat(tau, 1),
                    vb = kiln__lsp_tmat(*v, n);
      ab.off += b * n * n + n;
      tb.off += b * n;
      vb.off += b * n * n + n;
      s = kiln__lsp_ormqr(&L, ab, n - 1, n - 1, tb, 0, vb, n, &ws);
    }
    if (s == KILN_OK && v && nhost)
      s = kiln__ops_scratch(op, ctx, a->dtype, cnt * n, &qm);
    cl_kernel ke;
    if (s == KILN_OK && v && nhost)
      s = kern(&L, "eye_rect", &ke);
    if (s == KILN_OK && v && nhost) {
      kiln__args args = kiln__args_begin(op, ke);
      args_t(&args, qm);
      kiln__args_u64(&args, n * n);
      kiln__args_u32(&args, (uint32_t)n);
      kiln__args_u32(&args, (uint32_t)n);
      kiln__args_u64(&args, batch);
      s = grid2(&L, &args, n, n * batch);
    }
    for (uint64_t b = 0; s == KILN_OK && v && nhost && b < batch && n > 2; b++) {
      kiln__lsp_mat ab = kiln__lsp_tmat(work, n), tb = kiln__lsp_tmat(tau, 1),
                    qb = kiln__lsp_tmat(qm, n);
      ab.off += b * n * n + n;
      tb.off += b * n;
      qb.off += b * n * n + n;
      s = kiln__lsp_ormqr(&L, ab, n - 1, n - 1, tb, 0, qb, n, &ws);
    }
    if (s == KILN_OK && v) {
      cl_int err = clFlush(ctx->queue);
      if (err != CL_SUCCESS)
        s = kiln__fail_cl(op, err, "clFlush");
    }
    /* The host's Z^T goes up from pinned memory (the transfer at full speed: f64 straight
     * from LAPACK's output, f32 rounded into it). The slot is rewritten only after a later
     * call's blocking read, which the in-order queue puts after this call's upload. */
    if (s == KILN_OK && v && nhost)
      s = kiln__lh_slot(op, ctx, KILN__LH_SLOT_VECS, cnt * n * L.ts, &pz);
    if (s == KILN_OK && v && nhost && a->dtype == KILN_F64)
      hz = pz->p;
    else if (s == KILN_OK && v && nhost)
      s = host_mem(op, (hz = malloc(cnt * n * sizeof *hz)) != NULL);
    /* d and e as the reduction gave them, for the orthogonality check's redo */
    if (s == KILN_OK && v && nhost)
      s = host_mem(op, (hd0 = malloc(2 * cnt * sizeof *hd0)) != NULL);
    if (s == KILN_OK && v && nhost) {
      memcpy(hd0, hd, cnt * sizeof *hd0);
      memcpy(hd0 + cnt, he, cnt * sizeof *hd0);
    }
#if KILN_HAVE_LAPACKE
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++)
      if (onhost[b])
        s = tridiag_eig(op, b, n, hd + b * n, he + b * n, v ? hz + b * n * n : NULL, 0);
#endif
    if (nhost)
      phase(&L,
            v ? "host tridiagonal eigensolver (vectors; Q formed on the device meanwhile)"
              : "host tridiagonal eigenvalues",
            n, &t0);
    for (uint64_t b = 0; s == KILN_OK && v && b < batch; b++)
      if (onhost[b])
        s = z_upload(&L, pz, hz, b, n);
#if KILN_HAVE_LAPACKE
    /* MRRR does not bound the orthogonality of Z on clustered spectra (86 and 175 n eps on
     * the H200's host for a test matrix under 5 here), nor does dstedc promise LAPACK's test
     * threshold: Z^T Z on the device decides, and past that threshold the matrix is redone by
     * the next routine (dstedc, then dsteqr, whose rotations keep Z orthogonal) */
    double bound = atomic_load(&hook_orth), *oe = NULL;
    bound = bound > 0 ? bound : KILN__LSP_ORTH_REDO;
    if (s == KILN_OK && v && nhost && n > 1)
      s = host_mem(op, (oe = malloc(batch * sizeof *oe)) != NULL);
    /* an all-host batch at once; a mixed one matrix by matrix (the device route's slots hold
     * nothing) */
    if (oe && s == KILN_OK && nhost == batch)
      s = orth_err_dev(&L, (kiln__lsp_mat){pz->dev, 0, n}, batch, n, oe);
    for (uint64_t b = 0; oe && nhost < batch && s == KILN_OK && b < batch; b++)
      if (onhost[b])
        s = orth_err_dev(&L, (kiln__lsp_mat){pz->dev, b * n * n, n}, 1, n, oe + b);
    for (uint64_t b = 0; oe && s == KILN_OK && b < batch; b++) {
      for (int level = use_mrrr(n) ? 0 : 1; s == KILN_OK && onhost[b]; level++) {
        /* a NaN (non-finite input) is left as it is: no routine does better on it. level: 0
         * MRRR, 1 dstedc, 2 dsteqr */
        kiln__log(KILN__LOG_DEBUG,
                  "%s: eigenvectors of matrix %llu (n %llu, %s, level %d): ||Z^T Z - I|| %.1f n "
                  "eps%s",
                  op, (unsigned long long)b, (unsigned long long)n, kiln_dtype_name(L.dt), level,
                  oe[b], oe[b] > bound ? ": redone by the next host routine" : "");
        if (!(oe[b] > bound))
          break;
        memcpy(hd + b * n, hd0 + b * n, n * sizeof *hd);
        memcpy(he + b * n, hd0 + cnt + b * n, n * sizeof *he);
        s = tridiag_eig(op, b, n, hd + b * n, he + b * n, hz + b * n * n, level + 1);
        if (s == KILN_OK)
          s = z_upload(&L, pz, hz, b, n);
        atomic_fetch_add(&redone, 1u);
        if (level + 1 == 2) /* dsteqr: the last routine */
          break;
        if (s == KILN_OK)
          s = orth_err_dev(&L, (kiln__lsp_mat){pz->dev, b * n * n, n}, 1, n, oe + b);
      }
    }
    free(oe);
#endif
    if (s == KILN_OK)
      s = kiln__lsp_upload(&L, *w, hd);
    for (uint64_t b = 0; s == KILN_OK && v && b < batch; b++) {
      if (!onhost[b])
        continue;
      kiln__lsp_mat qb = kiln__lsp_tmat(qm, n), zb = {pz->dev, b * n * n, n},
                    vb = kiln__lsp_tmat(*v, n);
      qb.off += b * n * n;
      vb.off += b * n * n;
      s = kiln__lsp_gemm(&L, 0, 1, n, n, n, 1.0, qb, zb, 0.0, vb);
    }
    if (v)
      phase(&L, "back-transformation (V = Q Z)", n, &t0);
  }
  kiln__lsp_ws_release(&ws);
  kiln_tensor_release(work);
  kiln_tensor_release(dd);
  kiln_tensor_release(ee);
  kiln_tensor_release(tau);
  kiln_tensor_release(qm);
  td_ws_release(&tw);
  kiln__lsp_tdev_release(tds);
  free(hd);
  free(he);
  free(hd0);
  free(wd);
  free(onhost);
  if (a->dtype != KILN_F64)
    free(hz);
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- eig */

kiln_status
kiln_linalg_eig(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **wr, kiln_tensor **wi,
                kiln_tensor **vr, kiln_tensor **vi)
{
  static const char op[] = "kiln_linalg_eig";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__lsp_check_mat(op, ctx, a, "a"));
  KILN_TRY(kiln__lsp_check_square(op, a, "a"));
  KILN_RETURN_IF(!wr || !wi, KILN_ERR_INVALID_ARGUMENT, op, "%s is NULL", !wr ? "wr" : "wi");
  KILN_RETURN_IF(!vr != !vi, KILN_ERR_INVALID_ARGUMENT, op,
                 "vr and vi must both be given or both be NULL");
  KILN_TRY(need_lapacke(op, "eig"));
  size_t nd = a->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = kiln__lsp_batch(a);
  int64_t wt[1] = {(int64_t)n}, vt[2] = {(int64_t)n, (int64_t)n};
  kiln__shape wsh = kiln__lsp_shape(a, wt, 1), vsh = kiln__lsp_shape(a, vt, 2);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, a->dtype, &wsh, wr);
  if (s == KILN_OK)
    s = kiln__lsp_out(&o, op, ctx, a->dtype, &wsh, wi);
  if (s == KILN_OK && vr)
    s = kiln__lsp_out(&o, op, ctx, a->dtype, &vsh, vr);
  if (s == KILN_OK && vr)
    s = kiln__lsp_out(&o, op, ctx, a->dtype, &vsh, vi);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  double *h = NULL, *hwr = NULL, *hwi = NULL, *hvr = NULL, *hvi = NULL, *z = NULL;
  if (s == KILN_OK)
    s = kiln__lsp_download(&L, a, &h);
  uint64_t cnt = batch * n, c2 = cnt * n;
  if (s == KILN_OK) {
    hwr = malloc((cnt + 1) * sizeof *hwr);
    hwi = malloc((cnt + 1) * sizeof *hwi);
    if (vr) {
      hvr = malloc((c2 + 1) * sizeof *hvr);
      hvi = malloc((c2 + 1) * sizeof *hvi);
      z = malloc((n * n + 1) * sizeof *z);
    }
    s = host_mem(op, hwr && hwi && (!vr || (hvr && hvi && z)));
  }
#if KILN_HAVE_LAPACKE
  for (uint64_t b = 0; s == KILN_OK && b < batch && n; b++) {
    double dummy = 0;
    lapack_int info = LAPACKE_dgeev(LAPACK_ROW_MAJOR, 'N', vr ? 'V' : 'N', (lapack_int)n,
                                    h + b * n * n, (lapack_int)n, hwr + b * n, hwi + b * n, &dummy,
                                    1, vr ? z : &dummy, vr ? (lapack_int)n : 1);
    if (info > 0)
      s = no_conv(op, "dgeev", b, info);
    else if (info < 0)
      s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "LAPACK dgeev refused argument %d",
                     (int)-info);
    if (s != KILN_OK || !vr)
      continue;
    /* dgeev's real form: a complex pair j, j+1 has vectors z[:, j] +- i z[:, j+1]. */
    double *Re = hvr + b * n * n, *Im = hvi + b * n * n;
    const double *wim = hwi + b * n;
    for (uint64_t j = 0; j < n; j++) {
      int pair = wim[j] != 0.0 && j + 1 < n;
      for (uint64_t i = 0; i < n; i++) {
        if (!pair) {
          Re[i * n + j] = z[i * n + j];
          Im[i * n + j] = 0.0;
        } else {
          Re[i * n + j] = Re[i * n + j + 1] = z[i * n + j];
          Im[i * n + j] = z[i * n + j + 1];
          Im[i * n + j + 1] = -z[i * n + j + 1];
        }
      }
      if (pair)
        j++;
    }
  }
#endif
  if (s == KILN_OK)
    s = kiln__lsp_upload(&L, *wr, hwr);
  if (s == KILN_OK)
    s = kiln__lsp_upload(&L, *wi, hwi);
  if (s == KILN_OK && vr)
    s = kiln__lsp_upload(&L, *vr, hvr);
  if (s == KILN_OK && vr)
    s = kiln__lsp_upload(&L, *vi, hvi);
  free(h);
  free(hwr);
  free(hwi);
  free(hvr);
  free(hvi);
  free(z);
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- svd and friends */

/* Singular values of every matrix of a into *sv (batch x k, host), a's copy destroyed. */
static kiln_status
batch_svals(const kiln__lsp *L, const kiln_tensor *a, double **sv)
{
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  double *h = NULL;
  *sv = NULL;
  KILN_TRY(kiln__lsp_download(L, a, &h));
  double *s_ = malloc((batch * k + 1) * sizeof *s_);
  kiln_status s = host_mem(L->op, s_ != NULL);
#if KILN_HAVE_LAPACKE
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++)
    s = host_svd(L->op, b, h + b * m * n, m, n, s_ + b * k, NULL, NULL, 0);
#endif
  free(h);
  if (s != KILN_OK) {
    free(s_);
    return s;
  }
  *sv = s_;
  return KILN_OK;
}

/*
 * Householder bidiagonalisation of the M x N (M >= N) matrix a in place (LAPACK dgebrd with
 * dlabrd panels of nb columns, upper): A = Q B P^T, B upper bidiagonal d[N], e[N-1]. The left
 * reflectors go below a's diagonal (geqrf layout, tauq), the right ones below the diagonal
 * of p one row down (the layout eigh's back-transformation uses, taup). Per column four
 * launches (bd_ysum, bd_yfin, bd_xsum, bd_xfin; no host wait), per panel one GEMM
 * A22 -= [U X] [Y Vr^T]^T.
 */
typedef struct gb_bufs {
  kiln__lsp_mat a, p, d, e, tauq, taup;
  kiln_tensor *lf, *rt, *q, *part;
  uint64_t nb, nchunk;
  size_t lsum, lfin;
  cl_kernel ysum, yfin, xsum, xfin;
} gb_bufs;

static kiln__lsp_mat
el(kiln__lsp_mat x, uint64_t i)
{
  x.off += i;
  return x;
}

static kiln_status
grid2(const kiln__lsp *L, kiln__args *args, uint64_t g0, uint64_t g1)
{
  if (args->status != KILN_OK || g0 == 0 || g1 == 0)
    return args->status;
  size_t global[2] = {(size_t)((g0 + 15) / 16 * 16), (size_t)((g1 + 15) / 16 * 16)},
         local[2] = {16, 16};
  return kiln__args_enqueue(args, L->ctx, 2, global, local);
}

/* d (cols x rows) = s (rows x cols)^T. */
static kiln_status
transpose(const kiln__lsp *L, kiln__lsp_mat src, uint64_t rows, uint64_t cols, kiln__lsp_mat dst)
{
  cl_kernel k;
  KILN_TRY(kern(L, "transpose_m", &k));
  kiln__args args = kiln__args_begin(L->op, k);
  args_mat(&args, src);
  kiln__args_u32(&args, (uint32_t)rows);
  kiln__args_u32(&args, (uint32_t)cols);
  args_mat(&args, dst);
  return grid2(L, &args, cols, rows);
}

static void
gb_release(gb_bufs *g)
{
  kiln_tensor_release(g->lf);
  kiln_tensor_release(g->rt);
  kiln_tensor_release(g->q);
  kiln_tensor_release(g->part);
  g->lf = g->rt = g->q = g->part = NULL;
}

static kiln_status
gb_make(const kiln__lsp *L, uint64_t M, uint64_t N, gb_bufs *g)
{
  g->nb = L->nb;
  g->nchunk = L->ctx->info.is_gpu ? 64 : 4;
  if (debug_num("nchunk=", 1, 1024))
    g->nchunk = debug_num("nchunk=", 1, 1024);
  KILN_TRY(kern_eig(L, "bd_ysum", &g->ysum));
  KILN_TRY(kern_eig(L, "bd_yfin", &g->yfin));
  KILN_TRY(kern_eig(L, "bd_xsum", &g->xsum));
  KILN_TRY(kern_eig(L, "bd_xfin", &g->xfin));
  size_t ls = group_local(L, g->ysum, debug_pow2("lsym=", 128)),
         lx = group_local(L, g->xsum, debug_pow2("lsym=", 128));
  g->lsum = ls < lx ? ls : lx;
  /* TD_LPR lanes per row or column, as tr_fin */
  size_t cap = debug_pow2("lfin=", L->ctx->info.is_gpu ? 64 * TD_LPR : 64);
  size_t l1 = group_local(L, g->yfin, cap), l2 = group_local(L, g->xfin, cap);
  g->lfin = l1 < l2 ? l1 : l2;
  kiln_status s = kiln__ops_scratch(L->op, L->ctx, L->dt, M * 2 * g->nb, &g->lf);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, N * 2 * g->nb, &g->rt);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, M, &g->q);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, g->nchunk * (N + 2 + 2 * g->nb), &g->part);
  if (s != KILN_OK)
    gb_release(g);
  return s;
}

/* Chunks of a partial sum over len terms: at least 64 terms each, at most g->nchunk. */
static uint64_t
gb_chunks(const gb_bufs *g, uint64_t len)
{
  uint64_t k = (len + 63) / 64;
  return k < 1 ? 1 : k > g->nchunk ? g->nchunk : k;
}

static void
gb_args_head(kiln__args *args, const gb_bufs *g, uint64_t M, uint64_t N, uint64_t c, uint64_t i)
{
  args_mat(args, g->a);
  kiln__args_u32(args, (uint32_t)M);
  kiln__args_u32(args, (uint32_t)N);
  kiln__args_u32(args, (uint32_t)c);
  kiln__args_u32(args, (uint32_t)i);
}

static kiln_status
gb_fill0(const kiln__lsp *L, kiln_tensor *t, uint64_t from, uint64_t count)
{
  cl_int zero = 0;
  cl_int err =
      clEnqueueFillBuffer(L->ctx->queue, t->mem, &zero, sizeof zero,
                          (kiln__ops_elem_offset(t) + from) * L->ts, count * L->ts, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(L->op, err, "clEnqueueFillBuffer");
}

static kiln_status
gebrd(const kiln__lsp *L, const gb_bufs *g, uint64_t M, uint64_t N)
{
  uint64_t nb = g->nb, ld2 = 2 * nb;
  size_t lsum = g->lsum, lfin = g->lfin;
  for (uint64_t j0 = 0; j0 < N; j0 += nb) {
    uint64_t jb = N - j0 < nb ? N - j0 : nb;
    KILN_TRY(gb_fill0(L, g->lf, j0 * ld2, (M - j0) * ld2));
    KILN_TRY(gb_fill0(L, g->rt, j0 * ld2, (N - j0) * ld2));
    for (uint64_t i = 0; i < jb; i++) {
      uint64_t c = j0 + i, R = M - c - 1, C = N - c - 1;
      uint64_t nch = gb_chunks(g, R), ntile = (C + lsum - 1) / lsum;
      kiln__args args = kiln__args_begin(L->op, g->ysum);
      gb_args_head(&args, g, M, N, c, i);
      args_t(&args, g->lf);
      kiln__args_u32(&args, (uint32_t)nb);
      args_t(&args, g->part);
      kiln__args_u32(&args, (uint32_t)nch);
      kiln__args_u32(&args, (uint32_t)ntile);
      kiln__args_local(&args, lsum * L->ts);
      KILN_TRY(kiln__args_enqueue_1d(&args, L->ctx, (size_t)((ntile + 1) * nch) * lsum, lsum));
      uint64_t items = R > C ? R : C, lpr = lfin >= TD_LPR ? TD_LPR : lfin;
      items = items ? items : 1;
      size_t fin_groups = (size_t)((items * lpr + lfin - 1) / lfin);
      args = kiln__args_begin(L->op, g->yfin);
      gb_args_head(&args, g, M, N, c, i);
      args_t(&args, g->lf);
      args_t(&args, g->rt);
      kiln__args_u32(&args, (uint32_t)nb);
      args_t(&args, g->part);
      kiln__args_u32(&args, (uint32_t)nch);
      args_mat(&args, g->d);
      args_mat(&args, g->tauq);
      kiln__args_u32(&args, (uint32_t)lpr);
      kiln__args_local(&args, (2 * nb + 3 * lfin) * L->ts);
      KILN_TRY(kiln__args_enqueue_1d(&args, L->ctx, fin_groups * lfin, lfin));
      if (C == 0)
        break;
      nch = gb_chunks(g, C);
      args = kiln__args_begin(L->op, g->xsum);
      gb_args_head(&args, g, M, N, c, i);
      args_t(&args, g->rt);
      kiln__args_u32(&args, (uint32_t)nb);
      args_t(&args, g->q);
      args_t(&args, g->part);
      kiln__args_u32(&args, (uint32_t)nch);
      kiln__args_local(&args, lsum * L->ts);
      KILN_TRY(kiln__args_enqueue_1d(&args, L->ctx, (size_t)(R + nch) * lsum, lsum));
      args = kiln__args_begin(L->op, g->xfin);
      gb_args_head(&args, g, M, N, c, i);
      args_t(&args, g->lf);
      args_t(&args, g->rt);
      kiln__args_u32(&args, (uint32_t)nb);
      args_t(&args, g->q);
      args_t(&args, g->part);
      kiln__args_u32(&args, (uint32_t)nch);
      args_mat(&args, g->e);
      args_mat(&args, g->taup);
      args_mat(&args, g->p);
      kiln__args_u32(&args, i + 1 < jb);
      kiln__args_u32(&args, (uint32_t)lpr);
      kiln__args_local(&args, (2 * nb + 2 * lfin) * L->ts);
      KILN_TRY(kiln__args_enqueue_1d(&args, L->ctx, fin_groups * lfin, lfin));
    }
    uint64_t r0 = j0 + jb;
    if (r0 < N) {
      kiln__lsp_mat a22 = g->a, x = kiln__lsp_tmat(g->lf, ld2), y = kiln__lsp_tmat(g->rt, ld2);
      a22.off += r0 * N + r0;
      x.off += r0 * ld2;
      y.off += r0 * ld2;
      KILN_TRY(red_gemm(L, M - r0, N - r0, ld2, x, y, a22, 0));
    }
  }
  return KILN_OK;
}

#if KILN_HAVE_LAPACKE
/* One thread's share of the parallel dbdsvdx: the singular triplets il .. iu (1-based). */
typedef struct bsv_job {
  const double *d, *e;
  uint64_t n, il, iu;
  double *s, *u, *v; /* s[il-1 ..], u, v n x n row-major: the triplets' columns il-1 .. */
  lapack_int info;
} bsv_job;

static void *
bsv_run(void *arg)
{
  bsv_job *j = arg;
  uint64_t n = j->n, m = j->iu - j->il + 1;
  double *dc = malloc(n * sizeof *dc), *ec = malloc(n * sizeof *ec);
  double *zt = malloc(2 * n * (m + 1) * sizeof *zt), *st = malloc(2 * n * sizeof *st);
  lapack_int *iw = malloc(12 * n * sizeof *iw), ns = 0;
  j->info = -1;
  if (dc && ec && zt && st && iw) {
    memcpy(dc, j->d, n * sizeof *dc);
    memcpy(ec, j->e, n * sizeof *ec);
    j->info =
        LAPACKE_dbdsvdx(LAPACK_COL_MAJOR, 'U', 'V', 'I', (lapack_int)n, dc, ec, 0.0, 0.0,
                        (lapack_int)j->il, (lapack_int)j->iu, &ns, st, zt, (lapack_int)(2 * n), iw);
    if (j->info == 0 && (uint64_t)ns != m)
      j->info = 1;
  }
  if (j->info == 0)
    for (uint64_t c = 0; c < m; c++) {
      uint64_t col = j->il - 1 + c;
      j->s[col] = st[c];
      for (uint64_t i = 0; i < n; i++) {
        j->u[i * n + col] = zt[c * 2 * n + i];
        j->v[i * n + col] = zt[c * 2 * n + n + i];
      }
    }
  free(dc);
  free(ec);
  free(zt);
  free(st);
  free(iw);
  return NULL;
}

/* Singular values il .. iu by bisection (dbdsvdx without vectors), in index order. */
static lapack_int
bsv_values(const double *d, const double *e, uint64_t n, uint64_t il, uint64_t iu, double *w)
{
  /* dbdsvdx's dstevx writes eigenvalues of the 2n x 2n Golub-Kahan matrix: 2n long */
  double *dc = malloc(n * sizeof *dc), *ec = malloc(n * sizeof *ec), zz = 0;
  double *ws = malloc(2 * n * sizeof *ws);
  lapack_int *iw = malloc(12 * n * sizeof *iw), ns = 0, info = -1;
  if (dc && ec && iw && ws) {
    memcpy(dc, d, n * sizeof *dc);
    memcpy(ec, e, n * sizeof *ec);
    info = LAPACKE_dbdsvdx(LAPACK_COL_MAJOR, 'U', 'N', 'I', (lapack_int)n, dc, ec, 0.0, 0.0,
                           (lapack_int)il, (lapack_int)iu, &ns, ws, &zz, 1, iw);
    if (info == 0 && (uint64_t)ns != iu - il + 1)
      info = 1;
    if (info == 0)
      memcpy(w, ws, (iu - il + 1) * sizeof *w);
  }
  free(ws);
  free(dc);
  free(ec);
  free(iw);
  return info;
}

typedef struct bgap_job {
  const double *d, *e;
  uint64_t n, il, iu, best;
  int desc;   /* index 1 is the largest singular value */
  double gap; /* the absolute gap at best (0: none found) */
} bgap_job;

static void *
bgap_run(void *arg)
{
  bgap_job *j = arg;
  uint64_t m0 = j->iu - j->il + 1;
  double w[32];
  j->best = (j->il + j->iu) / 2;
  if (m0 < 2 || m0 > 8 || bsv_values(j->d, j->e, j->n, j->il, j->iu, w) != 0)
    return NULL;
  /* into index order, then the widest relative gap between neighbours */
  for (uint64_t a = 1; a < m0; a++)
    for (uint64_t b = a; b > 0 && (j->desc ? w[b] > w[b - 1] : w[b] < w[b - 1]); b--) {
      double t = w[b];
      w[b] = w[b - 1];
      w[b - 1] = t;
    }
  double bg = -1;
  for (uint64_t k = 1; k < m0; k++) {
    double g = fabs(w[k] - w[k - 1]) / (fabs(w[k]) + fabs(w[k - 1]) + DBL_MIN);
    if (g > bg) {
      bg = g;
      j->best = j->il - 1 + k;
      j->gap = fabs(w[k] - w[k - 1]);
    }
  }
  return NULL;
}

/*
 * The bidiagonal SVD with vectors by dbdsvdx (bisection and inverse iteration on the
 * Golub-Kahan tridiagonal) on several host threads, one index range each, the ranges cut at
 * the widest relative gap among the 8 singular values around each even split (inverse
 * iteration orthogonalises only the close pairs within one call). Values into s, vectors into
 * u and v (n x n row-major, columns) in dbdsvdx's index order; nonzero: failed.
 */
static lapack_int
bdsvdx_parallel(uint64_t n, const double *d, const double *e, double *s, double *u, double *v,
                uint64_t threads)
{
  if (threads > 64)
    threads = 64;
  if (threads > n / 2)
    threads = n / 2 ? n / 2 : 1;
  double w1 = 0, wn = 0;
  if (bsv_values(d, e, n, 1, 1, &w1) != 0 || bsv_values(d, e, n, n, n, &wn) != 0)
    return 1;
  bgap_job gap[64];
  for (uint64_t t = 1; t < threads; t++) {
    uint64_t target = t * n / threads;
    uint64_t il = target > 3 ? target - 3 : 1, iu = target + 4 < n ? target + 4 : n;
    gap[t - 1] = (bgap_job){.d = d, .e = e, .n = n, .il = il, .iu = iu, .desc = w1 > wn, .gap = 0};
  }
  if (threads > 1)
    run_jobs(bgap_run, gap, sizeof gap[0], threads - 1);
  /* dbdsvdx turns an index range into an interval widened by 2 n ulp s_max, and takes every
   * value inside: a split must lie in a wider gap, or a call would return more vectors than
   * its range holds (a cluster of 8 or more equal values): the caller then runs one call */
  double smax = fmax(fabs(w1), fabs(wn));
  for (uint64_t t = 0; t + 1 < threads; t++)
    if (!(gap[t].gap > 1e3 * (double)n * DBL_EPSILON * smax))
      return 1;
  bsv_job job[64];
  uint64_t start = 0, nj = 0;
  for (uint64_t t = 0; t < threads && start < n; t++) {
    uint64_t end = t + 1 < threads ? gap[t].best : n;
    if (end <= start)
      continue;
    job[nj++] =
        (bsv_job){.d = d, .e = e, .n = n, .il = start + 1, .iu = end, .s = s, .u = u, .v = v};
    start = end;
  }
  run_jobs(bsv_run, job, sizeof job[0], nj);
  for (uint64_t t = 0; t < nj; t++)
    if (job[t].info != 0)
      return job[t].info;
  return 0;
}
#endif

#if KILN_HAVE_LAPACKE
/* Whether svd's bidiagonal stage tries gk_mrrr first: from the order eigh takes MRRR at. */
static int
gk_default(uint64_t n)
{
  /* svd of 4096 f64 on the H200: 1.30 s with it (its host stage 0.92 s), 3.98 s with the
   * threaded dbdsvdx (3.4 s) of the reference LAPACK; 1024: 124 against 170 ms */
  int h = kiln__lsp_mrrr_min();
  return n >= (h >= 0 ? (uint64_t)h : KILN__LSP_MRRR_MIN);
}

/* One thread's share of gk_mrrr's read-out: columns c0 .. c1 - 1 of U, V and s. */
typedef struct gk_job {
  const double *zt, *w;
  uint64_t n, c0, c1;
  double *s, *u, *v, dev; /* dev: the largest | ||half||^2 - 1/2 | seen */
} gk_job;

static void *
gk_run(void *arg)
{
  gk_job *j = arg;
  uint64_t n = j->n, nc = j->c1 - j->c0;
  double *f = malloc(2 * (nc ? nc : 1) * sizeof *f);
  j->dev = INFINITY;
  if (!f)
    return NULL;
  j->dev = 0;
  /* column c (descending) is the Golub-Kahan pair n - 1 - c (ascending among the positive
   * half): z = [v_1, u_1, v_2, u_2, ...] / sqrt(2); each half normalised on its own */
  for (uint64_t c = j->c0; c < j->c1; c++) {
    const double *z = j->zt + (n - 1 - c) * 2 * n;
    double nu = 0, nv = 0;
    for (uint64_t i = 0; i < n; i++) {
      nv += z[2 * i] * z[2 * i];
      nu += z[2 * i + 1] * z[2 * i + 1];
    }
    j->dev = fmax(j->dev, fmax(fabs(nu - 0.5), fabs(nv - 0.5)));
    f[2 * (c - j->c0)] = nu > 0 ? 1 / sqrt(nu) : 0;
    f[2 * (c - j->c0) + 1] = nv > 0 ? 1 / sqrt(nv) : 0;
    j->s[c] = j->w[n - 1 - c];
  }
  /* row by row: each row's writes contiguous, the columns' lines reused over 4 rows */
  for (uint64_t i = 0; i < n; i++)
    for (uint64_t c = j->c0; c < j->c1; c++) {
      const double *z = j->zt + (n - 1 - c) * 2 * n;
      j->u[i * n + c] = z[2 * i + 1] * f[2 * (c - j->c0)];
      j->v[i * n + c] = z[2 * i] * f[2 * (c - j->c0) + 1];
    }
  free(f);
  return NULL;
}

/*
 * The SVD of the upper bidiagonal (d[n], e[n-1]) through MRRR on its Golub-Kahan matrix
 * (zero diagonal, off-diagonal d_1, e_1, d_2, ..., d_n; eigenvalues +-s_i, the vector of s_i
 * [v_1, u_1, v_2, u_2, ...] / sqrt(2)): mrrr_parallel's positive half (one dstemr call per
 * thread), O(n^2), where dbdsvdx's bisection and inverse iteration (with Gram-Schmidt over
 * clusters that for 4096 random values span the spectrum) took seconds. MRRR's vectors are
 * orthogonal as 2n-vectors, but the halves stay orthogonal only while each s_i is apart from
 * -s_i, i.e. not tiny: numerically zero values (<= n eps s_max, as dbdsvdx's route) and any
 * pair whose halves' norms^2 stray from 1/2 by more than 3 (2n) eps decline (nonzero; for
 * graded values the orthogonality error measured about 11 times that deviation, so 3 keeps it
 * within LAPACK's MRRR test threshold of 50 n eps; random matrices measured 0.1-1.1); the caller
 * then takes dbdsvdx or dbdsqr.
 * s descending, vectors in the columns of u and v (n x n row-major).
 */
static lapack_int
gk_mrrr(uint64_t n, const double *d, const double *e, double *s, double *u, double *v,
        uint64_t threads, double *dev)
{
  uint64_t N = 2 * n;
  double *td = calloc(N, sizeof *td), *te = malloc(N * sizeof *te), *w = malloc(n * sizeof *w);
  double *zt = malloc(n * N * sizeof *zt);
  lapack_int info = -1;
  *dev = INFINITY;
  if (td && te && w && zt) {
    for (uint64_t k = 0; k < n; k++) {
      te[2 * k] = d[k];
      te[2 * k + 1] = k + 1 < n ? e[k] : 0.0;
    }
    info = mrrr_parallel(N, td, te, n, N, w, zt, threads);
  }
  if (info == 0 && !(w[0] > (double)n * DBL_EPSILON * w[n - 1]))
    info = 1;
  if (info == 0) {
    gk_job job[64];
    uint64_t nj = threads < 64 ? threads : 64;
    nj = nj < n ? nj : n;
    for (uint64_t t = 0; t < nj; t++)
      job[t] = (gk_job){.zt = zt,
                        .w = w,
                        .n = n,
                        .c0 = t * n / nj,
                        .c1 = (t + 1) * n / nj,
                        .s = s,
                        .u = u,
                        .v = v};
    run_jobs(gk_run, job, sizeof job[0], nj);
    *dev = 0;
    for (uint64_t t = 0; t < nj; t++)
      *dev = fmax(*dev, job[t].dev);
    if (!(*dev <= 3.0 * (double)N * DBL_EPSILON))
      info = 1;
  }
  free(td);
  free(te);
  free(w);
  free(zt);
  return info;
}
#endif

#if KILN_HAVE_LAPACKE
/*
 * SVD of the upper bidiagonal (d[n], e[n-1]) into s (descending) and, when ub is given,
 * ub and vb (n x n, vectors in columns): dbdsdc (divide and conquer, O(n^3) in BLAS 3)
 * when the host BLAS is threaded (host_fast_blas), else dbdsvdx (the Golub-Kahan
 * tridiagonal's bisection and inverse iteration, about O(n^2), one core); dbdsqr when those
 * fail or for values only. KILN_DEBUG_LINALG_HOST forces one (bdsdc, bdsvdx, bdsqr). level 1
 * leaves out the Golub-Kahan MRRR, level 2 takes dbdsqr alone; *checked says where the vectors
 * came from: 2 the Golub-Kahan MRRR, 1 dbdsdc or dbdsvdx (both checked by the caller), 0
 * dbdsqr.
 */
static kiln_status
bidiag_svd(const char *op, uint64_t b, uint64_t n, double *d, double *e, double *s, double *ub,
           double *vb, int level, int *checked)
{
  *checked = 0;
  if (n == 0)
    return KILN_OK;
  double *d0 = malloc(n * sizeof *d0), *e0 = malloc(n * sizeof *e0);
  double *z = ub ? malloc(2 * n * (n + 1) * sizeof *z) : NULL;
  lapack_int *sup = ub ? malloc(12 * n * sizeof *sup) : NULL;
  uint64_t *ord = malloc(n * sizeof *ord);
  /* dbdsvdx's dstevx writes eigenvalues of the 2n x 2n Golub-Kahan matrix into s: 2n long */
  double *sw = ub ? malloc(2 * n * sizeof *sw) : NULL;
  kiln_status st = host_mem(op, d0 && e0 && ord && (!ub || (z && sup && sw)));
  lapack_int info = 1, ns = 0;
  const char *route = NULL; /* the routine that gave the vectors, for the debug log */
  if (st == KILN_OK) {
    memcpy(d0, d, n * sizeof *d0);
    memcpy(e0, e, (n - 1) * sizeof *e0);
    e0[n - 1] = 0.0;
  }
  /* MRRR on the Golub-Kahan matrix; else dbdsdc (divide and conquer) with a threaded host
   * BLAS, else dbdsvdx; dbdsqr last */
  int pick = level >= 2 || host_pick("bdsdc") || host_pick("bdsvdx") || host_pick("bdsqr");
  int gk = ub && n >= 2 && level == 0 && (host_pick("gkmrrr") || (!pick && gk_default(n)));
  if (st == KILN_OK && gk) {
    double dev = 0;
    info = gk_mrrr(n, d0, e0, s, ub, vb, mrrr_threads(n), &dev);
    kiln__log(KILN__LOG_DEBUG,
              "%s: Golub-Kahan MRRR on matrix %llu: info %d, halves' norms^2 "
              "off 1/2 by %.3g (2n eps units)",
              op, (unsigned long long)b, (int)info, dev / (2.0 * (double)n * DBL_EPSILON));
    gk = info == 0;
    route = gk ? "MRRR on the Golub-Kahan matrix" : NULL;
  }
  int dc =
      ub && !gk && level < 2 &&
      (host_pick("bdsdc") || (!host_pick("bdsvdx") && !host_pick("bdsqr") && host_fast_blas()));
  if (st == KILN_OK && dc) {
    double *vt = z, dq = 0;
    lapack_int di = 0;
    info = LAPACKE_dbdsdc(LAPACK_ROW_MAJOR, 'U', 'I', (lapack_int)n, d, e, ub, (lapack_int)n, vt,
                          (lapack_int)n, &dq, &di);
    if (info == 0) {
      route = "dbdsdc";
      memcpy(s, d, n * sizeof *s);
      for (uint64_t i = 0; i < n; i++) /* V = (V^T)^T */
        for (uint64_t j = 0; j < n; j++)
          vb[i * n + j] = vt[j * n + i];
    } else {
      memcpy(d, d0, n * sizeof *d);
      memcpy(e, e0, (n - 1) * sizeof *e);
    }
  }
  uint64_t th = mrrr_threads(n);
  if (st == KILN_OK && ub && !gk && !dc && level < 2 && !host_pick("bdsqr") && th > 1) {
    /* threaded: vectors straight into ub, vb (index order), then sorted descending */
    double *u2 = malloc(n * n * sizeof *u2), *v2 = malloc(n * n * sizeof *v2);
    sv_ord *o = malloc(n * sizeof *o);
    info = u2 && v2 && o ? bdsvdx_parallel(n, d0, e0, sw, u2, v2, th) : 1;
    double smax = 0, smin = INFINITY;
    for (uint64_t i = 0; info == 0 && i < n; i++) {
      smax = fmax(smax, fabs(sw[i]));
      smin = fmin(smin, fabs(sw[i]));
    }
    if (info == 0 && smin <= (double)n * DBL_EPSILON * smax) /* as below: dbdsqr takes those */
      info = 1;
    if (info == 0) {
      route = "dbdsvdx over host threads";
      for (uint64_t i = 0; i < n; i++)
        o[i] = (sv_ord){sw[i], i};
      qsort(o, n, sizeof *o, sv_desc);
      for (uint64_t c = 0; c < n; c++) {
        s[c] = o[c].s;
        for (uint64_t i = 0; i < n; i++) {
          ub[i * n + c] = u2[i * n + o[c].i];
          vb[i * n + c] = v2[i * n + o[c].i];
        }
      }
    }
    free(u2);
    free(v2);
    free(o);
    if (info != 0) { /* declined or failed: one call below */
      memcpy(d, d0, n * sizeof *d);
      memcpy(e, e0, (n - 1) * sizeof *e);
      th = 1;
    }
  }
  if (st == KILN_OK && ub && !gk && !dc && level < 2 && !host_pick("bdsqr") && th <= 1) {
    info = LAPACKE_dbdsvdx(LAPACK_ROW_MAJOR, 'U', 'V', 'A', (lapack_int)n, d, e, 0.0, 0.0, 0, 0,
                           &ns, sw, z, (lapack_int)(n + 1), sup);
    /* A (numerically) zero singular value is a +-0 pair of the Golub-Kahan matrix's
     * eigenvalues, and the eigenvector dbdsvdx takes for it may put all its weight in the u or
     * the v half: U and V lose orthonormality while U S V^T stays right (seen on the H200 for a
     * rank-2 5 x 8 matrix). dbdsqr handles those. */
    double smax = 0, smin = INFINITY;
    for (uint64_t i = 0; info == 0 && i < (uint64_t)ns; i++) {
      smax = fmax(smax, fabs(sw[i]));
      smin = fmin(smin, fabs(sw[i]));
    }
    if (info == 0 && smin <= (double)n * DBL_EPSILON * smax)
      info = 1;
    if (info == 0 && (uint64_t)ns == n) {
      route = "dbdsvdx";
      for (uint64_t i = 0; i < n; i++)
        ord[i] = i;
      /* descending, as torch and LAPACK's gesdd (insertion sort: dbdsvdx's order is sorted
       * already, one way or the other) */
      for (uint64_t i = 1; i < n; i++)
        for (uint64_t j = i; j > 0 && sw[ord[j]] > sw[ord[j - 1]]; j--) {
          uint64_t t = ord[j];
          ord[j] = ord[j - 1];
          ord[j - 1] = t;
        }
      for (uint64_t c = 0; c < n; c++) {
        s[c] = sw[ord[c]];
        for (uint64_t i = 0; i < n; i++) {
          ub[i * n + c] = z[i * (n + 1) + ord[c]];
          vb[i * n + c] = z[(n + i) * (n + 1) + ord[c]];
        }
      }
    } else {
      info = 1;
    }
  }
  if (st == KILN_OK && info != 0) {
    /* dbdsqr: B = Q S P^T with Q into ub and P^T into vb, starting from identities */
    memcpy(d, d0, n * sizeof *d);
    if (ub)
      for (uint64_t i = 0; i < n * n; i++)
        ub[i] = vb[i] = i / n == i % n ? 1.0 : 0.0;
    double dummy = 0;
    info = LAPACKE_dbdsqr(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, ub ? (lapack_int)n : 0,
                          ub ? (lapack_int)n : 0, 0, d, e0, ub ? vb : &dummy, (lapack_int)n,
                          ub ? ub : &dummy, (lapack_int)n, &dummy, 1);
    if (info != 0)
      st = no_conv(op, "dbdsqr", b, info);
    route = "dbdsqr";
    if (st == KILN_OK) {
      memcpy(s, d, n * sizeof *s);
      for (uint64_t i = 0; ub && i < n; i++) /* vb holds P^T: transpose to P */
        for (uint64_t j = i + 1; j < n; j++) {
          double t = vb[i * n + j];
          vb[i * n + j] = vb[j * n + i];
          vb[j * n + i] = t;
        }
    }
  }
  if (st == KILN_OK && ub)
    kiln__log(KILN__LOG_DEBUG, "%s: bidiagonal svd of matrix %llu (order %llu) by %s", op,
              (unsigned long long)b, (unsigned long long)n, route);
  if (st == KILN_OK && ub && route && strcmp(route, "dbdsqr") != 0)
    *checked = gk ? 2 : 1;
  free(d0);
  free(e0);
  free(z);
  free(sup);
  free(ord);
  free(sw);
  return st;
}
#endif

/* Reads count elements at element offset off of t into out (double). */
static kiln_status
read_vec(const kiln__lsp *L, const kiln_tensor *t, uint64_t off, uint64_t count, double *out)
{
  if (count == 0)
    return KILN_OK;
  KILN_TRY(kiln__ops_read(L->op, L->ctx, t, off * L->ts, out, count * L->ts));
  if (L->dt == KILN_F32)
    for (uint64_t i = count; i-- > 0;)
      out[i] = (double)((float *)out)[i];
  return KILN_OK;
}

/* Writes count doubles to element offset off of t (blocking; f32 rounded). */
static kiln_status
write_vec(const kiln__lsp *L, kiln_tensor *t, uint64_t off, uint64_t count, const double *v)
{
  if (count == 0)
    return KILN_OK;
  const void *src = v;
  float *f = NULL;
  if (L->dt == KILN_F32) {
    f = malloc(count * sizeof *f);
    KILN_TRY(host_mem(L->op, f != NULL));
    for (uint64_t i = 0; i < count; i++)
      f[i] = (float)v[i];
    src = f;
  }
  cl_int err = clEnqueueWriteBuffer(L->ctx->queue, t->mem, CL_TRUE, t->offset + off * L->ts,
                                    count * L->ts, src, 0, NULL, NULL);
  free(f);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(L->op, err, "clEnqueueWriteBuffer");
}

/* Copies count elements between tensors at element offsets (enqueued). */
static kiln_status
copy_elems(const kiln__lsp *L, const kiln_tensor *src, uint64_t soff, kiln_tensor *dst,
           uint64_t doff, uint64_t count)
{
  if (count == 0)
    return KILN_OK;
  cl_int err = clEnqueueCopyBuffer(L->ctx->queue, src->mem, dst->mem, src->offset + soff * L->ts,
                                   dst->offset + doff * L->ts, count * L->ts, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(L->op, err, "clEnqueueCopyBuffer");
}

/* Sets the rows x cols matrix at x (row stride cols) to the identity's first rows x cols. */
static kiln_status
eye_mat(const kiln__lsp *L, kiln__lsp_mat x, uint64_t rows, uint64_t cols)
{
  cl_kernel k;
  KILN_TRY(kern(L, "eye_rect", &k));
  kiln__args args = kiln__args_begin(L->op, k);
  args_mat(&args, x);
  kiln__args_u64(&args, rows * cols);
  kiln__args_u32(&args, (uint32_t)rows);
  kiln__args_u32(&args, (uint32_t)cols);
  kiln__args_u64(&args, 1);
  return grid2(L, &args, cols, rows);
}

/*
 * The device route of kiln_linalg_svd for batch m x n matrices with k = min(m, n) > 0:
 * bidiagonalisation of A (or of A^T when wide) on the device, the bidiagonal SVD on the host,
 * U = Q [Ub 0; 0 I], V = P Vb on the device. For a wide A the roles swap: A^T = U' S V'^T
 * gives U = V' and V^T = U'^T. Q (its first ucM columns) and P are formed on the device
 * (identities through the blocked reflector updates) while the host works; then
 * U = Q[:, :N] Ub (and Q's other columns as they are) and V = P Vb are GEMMs.
 */
/*
 * ||X^T X - I||_F / (n eps) on the device, into err[m], of the count n x n matrices X_m that
 * lie n^2 elements apart from x (row stride n): for a few (svd's U and V) one GEMM each on the
 * linalg route, for more (eigh's batches) one batched gemm_tile; then one launch of the column
 * sums and one read-back for all.
 */
static kiln_status
orth_err_dev(const kiln__lsp *L, kiln__lsp_mat x, uint64_t count, uint64_t n, double *err)
{
  kiln_tensor *g = NULL, *cs = NULL;
  uint64_t nn = n * n;
  double *h = malloc(count * n * sizeof *h);
  kiln_status s = host_mem(L->op, h != NULL);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, count * nn, &g);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, count * n, &cs);
  cl_kernel k;
  if (s == KILN_OK)
    s = kern_eig(L, "orth_dev", &k);
  if (s == KILN_OK && count > 2)
    s = kiln__linalg_tile_gemm(L->op, L->ctx, L->dt, n, n, n, 1.0, x.mem, x.off, 1, n, x.mem,
                               x.off, n, 1, 1, g->mem, kiln__ops_elem_offset(g), n, 1, 0, count,
                               nn, nn, nn);
  for (uint64_t m = 0; m < count && count <= 2 && s == KILN_OK; m++) {
    kiln__lsp_mat xm = x, gm = kiln__lsp_tmat(g, n);
    xm.off += m * nn;
    gm.off += m * nn;
    s = kiln__lsp_gemm(L, 1, 0, n, n, n, 1.0, xm, xm, 0.0, gm);
  }
  if (s == KILN_OK) {
    kiln__args args = kiln__args_begin(L->op, k);
    args_t(&args, g);
    kiln__args_u32(&args, (uint32_t)n);
    kiln__args_u32(&args, (uint32_t)count);
    kiln__args_mem(&args, cs->mem); /* a scratch tensor: its own buffer, element 0 */
    s = kiln__args_launch_1d(&args, L->ctx, count * n, 0);
  }
  if (s == KILN_OK)
    s = read_vec(L, cs, 0, count * n, h);
  for (uint64_t m = 0; s == KILN_OK && m < count; m++) {
    double t = 0;
    for (uint64_t i = 0; i < n; i++)
      t += h[m * n + i];
    err[m] = sqrt(t) / ((double)n * eps_of(L->dt));
  }
  free(h);
  kiln_tensor_release(g);
  kiln_tensor_release(cs);
  return s;
}

#if KILN_HAVE_LAPACKE
static atomic_uint gk_dev_taken;

unsigned
kiln__linalg_spectral_test_gk_device(void)
{
  return atomic_load(&gk_dev_taken);
}

/*
 * Whether svd's bidiagonal SVD of order n (with vectors) tries the device: where eigh's
 * tridiagonal stage of order 2n would (use_tdev: GPUs with fp64, its hook, `tdev` / `notdev`),
 * unless KILN_DEBUG_LINALG_HOST names one of svd's host routines.
 */
static int
gk_on_device(const kiln__lsp *L, uint64_t n)
{
  if (host_pick("gkmrrr") || host_pick("bdsdc") || host_pick("bdsvdx") || host_pick("bdsqr"))
    return 0;
  return n >= 2 && use_tdev(L, 2 * n);
}

/*
 * One thread's share of the read-out of the device's Golub-Kahan eigenvectors (gk_run's for
 * the host's): columns c0 .. c1 - 1 of U, V and s. r is the positive half of Z component-major
 * (2n rows of n; column k the vector of the k-th positive eigenvalue w[k], ascending; z = [v_1,
 * u_1, v_2, u_2, ...] / sqrt(2)), each half normalised on its own; a thread walks its own
 * stretch of every row of r. dev: the largest | ||half||^2 - 1/2 | of its columns.
 */
typedef struct gk_rows_job {
  const double *r, *w;
  uint64_t n, c0, c1;
  double *s, *u, *v, dev;
  double *nu; /* 2 (c1 - c0) zeroed doubles: the columns' sums of squares, then 1 / norms */
} gk_rows_job;

static void *
gk_rows_run(void *arg)
{
  gk_rows_job *j = arg;
  const uint64_t n = j->n, nc = j->c1 - j->c0, k0 = n - j->c1; /* its k: k0 .. k0 + nc - 1 */
  double *nu = j->nu, *nv = nu + nc;
  for (uint64_t i = 0; i < n; i++)
    for (uint64_t q = 0; q < nc; q++) {
      const double a = j->r[2 * i * n + k0 + q], b = j->r[(2 * i + 1) * n + k0 + q];
      nv[q] += a * a;
      nu[q] += b * b;
    }
  j->dev = 0;
  for (uint64_t q = 0; q < nc; q++) {
    j->dev = fmax(j->dev, fmax(fabs(nu[q] - 0.5), fabs(nv[q] - 0.5)));
    nu[q] = nu[q] > 0 ? 1 / sqrt(nu[q]) : 0;
    nv[q] = nv[q] > 0 ? 1 / sqrt(nv[q]) : 0;
  }
  for (uint64_t c = j->c0; c < j->c1; c++)
    j->s[c] = j->w[n - 1 - c];
  for (uint64_t i = 0; i < n; i++)
    for (uint64_t c = j->c0; c < j->c1; c++) {
      const uint64_t q = n - 1 - c - k0;
      j->u[i * n + c] = j->r[(2 * i + 1) * n + k0 + q] * nu[q];
      j->v[i * n + c] = j->r[2 * i * n + k0 + q] * nv[q];
    }
  return NULL;
}

/* gk_rows_run over the host threads; *dev the largest deviation. nu: 2n zeroed doubles. */
static void
gk_rows(uint64_t n, const double *r, const double *w, double *s, double *u, double *v, double *nu,
        double *dev)
{
  gk_rows_job job[64];
  uint64_t nj = mrrr_threads(n);
  nj = nj < 64 ? nj : 64;
  nj = nj < n ? nj : n;
  for (uint64_t t = 0; t < nj; t++) {
    const uint64_t c0 = t * n / nj;
    job[t] = (gk_rows_job){.r = r,
                           .w = w,
                           .n = n,
                           .c0 = c0,
                           .c1 = (t + 1) * n / nj,
                           .s = s,
                           .u = u,
                           .v = v,
                           .nu = nu + 2 * c0};
  }
  run_jobs(gk_rows_run, job, sizeof job[0], nj);
  *dev = 0;
  for (uint64_t t = 0; t < nj; t++)
    *dev = fmax(*dev, job[t].dev);
}

/*
 * svd's bidiagonal SVD of order n (d[n], e[n-1]; host f64) on the device: eigh's tridiagonal
 * stage (in f64) on the 2n Golub-Kahan matrix (zero diagonal, off-diagonal d_1, e_1, d_2, ...,
 * d_n: eigenvalues +-s_i), its positive half read back (*z: the 2n x 2n f64 Z, made on first
 * use) and split into U and V as the host's Golub-Kahan MRRR does. *ok = 0 (the stage declined,
 * a numerically zero singular value, or a half's norm^2 off 1/2 by more than 3 (2n) eps, as
 * gk_mrrr) leaves the host routines to the caller; the caller's check of U^T U and V^T V
 * decides the rest, as for gk_mrrr's vectors.
 */
static kiln_status
gk_device(const kiln__lsp *L, kiln__lsp_tdev **tds, kiln_tensor **z, uint64_t b, uint64_t n,
          const double *d, const double *e, double *s, double *u, double *v, int *ok)
{
  *ok = 0;
  const uint64_t N = 2 * n;
  kiln__lsp L64 = *L;
  L64.dt = KILN_F64;
  L64.ts = 8;
  if (!*z)
    KILN_TRY(kiln__ops_scratch(L->op, L->ctx, KILN_F64, N * N, z));
  double *td = calloc(N, sizeof *td), *te = malloc(N * sizeof *te), *w = malloc(N * sizeof *w);
  double *r = malloc(N * n * sizeof *r), *nu = calloc(2 * n, sizeof *nu);
  kiln_status st = host_mem(L->op, td && te && w && r && nu);
  int done = 0;
  double tm[4] = {mono_s(), 0, 0, 0}; /* for the debug line: the stage, the read, the split */
  if (st == KILN_OK) {
    for (uint64_t k = 0; k < n; k++) {
      te[2 * k] = d[k];
      te[2 * k + 1] = k + 1 < n ? e[k] : 0.0;
    }
    st = kiln__lsp_tridiag_device(&L64, tds, N, td, te, w, kiln__lsp_tmat(*z, N), &done);
  }
  tm[1] = tm[2] = tm[3] = mono_s();
  /* a numerically zero s: the +-s pair's vectors may put their weight in one half */
  int zero = done && !(w[n] > (double)n * DBL_EPSILON * w[N - 1]);
  double dev = INFINITY;
  if (st == KILN_OK && done && !zero) {
    size_t org[3] = {(size_t)(n * 8), 0, 0}, hor[3] = {0, 0, 0}, reg[3] = {(size_t)(n * 8), N, 1};
    cl_int err = clEnqueueReadBufferRect(L->ctx->queue, (*z)->mem, CL_TRUE, org, hor, reg,
                                         (size_t)(N * 8), 0, (size_t)(n * 8), 0, r, 0, NULL, NULL);
    tm[2] = tm[3] = mono_s();
    if (err != CL_SUCCESS)
      st = kiln__fail_cl(L->op, err, "clEnqueueReadBufferRect (Golub-Kahan vectors)");
    else
      gk_rows(n, r, w + n, s, u, v, nu, &dev);
    tm[3] = mono_s();
    *ok = st == KILN_OK && dev <= 3.0 * (double)N * DBL_EPSILON;
  }
  if (st == KILN_OK)
    kiln__log(KILN__LOG_DEBUG,
              "%s: Golub-Kahan stage on the device, matrix %llu: %s%.3g (2n eps units)%s; "
              "stage %.1f ms (the queue's earlier work included), read %.1f, split %.1f",
              L->op, (unsigned long long)b,
              !done  ? "the device stage declined: "
              : zero ? "a numerically zero singular value: "
                     : "halves' norms^2 off 1/2 by ",
              done && !zero ? dev / ((double)N * DBL_EPSILON) : 0.0,
              *ok ? "" : "; the host routines instead", (tm[1] - tm[0]) * 1e3,
              (tm[2] - tm[1]) * 1e3, (tm[3] - tm[2]) * 1e3);
  free(td);
  free(te);
  free(w);
  free(r);
  free(nu);
  return st;
}
#endif

static kiln_status
svd_device(const kiln__lsp *L, const kiln_tensor *a, uint64_t m, uint64_t n, uint64_t batch,
           int full, kiln_tensor *uo, kiln_tensor *so, kiln_tensor *vto)
{
  uint64_t M = m > n ? m : n, N = m < n ? m : n, ucM = full ? M : N, vec = uo != NULL;
  uint64_t uc = full ? m : N, vr = full ? n : N;
  kiln_tensor *t[9] = {NULL};
  enum { A_, P_, D_, E_, TQ, TP, X_, QM, PM };
  uint64_t sizes[9] = {
      M * N,          N * N, N, N, N, N, vec ? (m >= n ? N * N : M * ucM) : 1, vec ? M * ucM : 1,
      vec ? N * N : 1};
  kiln_status s = KILN_OK;
  for (int i = 0; s == KILN_OK && i < 9; i++)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, sizes[i], &t[i]);
  kiln__lsp_ws ws = {0};
  if (s == KILN_OK && vec)
    s = kiln__lsp_ws_make(L, M, ucM > N ? ucM : N, &ws);
  /* Ub and Vb go up from pinned memory, [Ub | Vb] (N^2 each): f64 straight from the host
   * stage, f32 rounded into it. The slot is rewritten only after the next matrix's blocking
   * read of d and e, which the in-order queue puts after this one's upload. */
  kiln__lh_buf *pv = NULL;
  if (s == KILN_OK && vec)
    s = kiln__lh_slot(L->op, L->ctx, KILN__LH_SLOT_VECS, 2 * N * N * L->ts, &pv);
  double *hd = malloc(N * sizeof *hd), *he = malloc(N * sizeof *he), *hs = malloc(N * sizeof *hs);
  double *hd0 = malloc(N * sizeof *hd0), *he0 = malloc(N * sizeof *he0);
  int own = vec && L->dt != KILN_F64;
  double *ub = !vec ? NULL : own ? malloc(2 * N * N * sizeof *ub) : s == KILN_OK ? pv->p : NULL;
  double *hv = ub ? ub + N * N : NULL;
  if (s == KILN_OK)
    s = host_mem(L->op, hd && he && hs && hd0 && he0 && (!vec || ub));
  gb_bufs g;
  memset(&g, 0, sizeof g);
  if (s == KILN_OK) {
    g.a = kiln__lsp_tmat(t[A_], N);
    g.p = kiln__lsp_tmat(t[P_], N);
    g.d = kiln__lsp_tmat(t[D_], 1);
    g.e = kiln__lsp_tmat(t[E_], 1);
    g.tauq = kiln__lsp_tmat(t[TQ], 1);
    g.taup = kiln__lsp_tmat(t[TP], 1);
    s = gb_make(L, M, N, &g);
  }
  double t0 = 0;
  kiln__lsp_tdev *tds = NULL;
  kiln_tensor *gz = NULL; /* the device Golub-Kahan stage's Z */
  phase(L, "start", N, &t0);
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    kiln__lsp_mat ab = kiln__lsp_tmat(a, n);
    ab.off += b * m * n;
    s = m >= n ? copy_elems(L, a, b * m * n, t[A_], 0, m * n) : transpose(L, ab, m, n, g.a);
    if (s == KILN_OK)
      s = gebrd(L, &g, M, N);
    phase(L, "bidiagonal reduction", N, &t0);
    if (s == KILN_OK)
      s = read_vec(L, t[D_], 0, N, hd);
    if (s == KILN_OK)
      s = read_vec(L, t[E_], 0, N, he);
    kiln__lsp_mat qm = kiln__lsp_tmat(t[QM], ucM), pm = kiln__lsp_tmat(t[PM], N);
    if (vec) { /* Q and P on the device while the host works */
      if (s == KILN_OK)
        s = eye_mat(L, qm, M, ucM);
      if (s == KILN_OK)
        s = kiln__lsp_ormqr(L, g.a, M, N, g.tauq, 0, qm, ucM, &ws);
      if (s == KILN_OK)
        s = eye_mat(L, pm, N, N);
      if (s == KILN_OK && N > 2)
        s = kiln__lsp_ormqr(L, el(g.p, N), N - 1, N - 1, g.taup, 0, el(pm, N), N, &ws);
      cl_int err = s == KILN_OK ? clFlush(L->ctx->queue) : CL_SUCCESS;
      if (err != CL_SUCCESS)
        s = kiln__fail_cl(L->op, err, "clFlush");
    }
    int chk = 0, level, gkd = 0;
    memcpy(hd0, hd, N * sizeof *hd0);
    memcpy(he0, he, N * sizeof *he0);
#if KILN_HAVE_LAPACKE
    if (s == KILN_OK && vec && gk_on_device(L, N)) {
      s = gk_device(L, &tds, &gz, b, N, hd, he, hs, ub, hv, &gkd);
      if (s == KILN_ERR_DEVICE_MEMORY) { /* its 2N x 2N buffers: the host's routines need none */
        kiln__log(KILN__LOG_DEBUG, "%s: no device memory for the Golub-Kahan stage of order %llu",
                  L->op, (unsigned long long)(2 * N));
        s = KILN_OK;
        gkd = 0;
      }
      if (gkd) { /* checked below as gk_mrrr's: a redo leaves the Golub-Kahan route out */
        chk = 2;
        atomic_fetch_add(&gk_dev_taken, 1);
      }
    }
    if (s == KILN_OK && !gkd)
      s = bidiag_svd(L->op, b, N, hd, he, hs, vec ? ub : NULL, hv, 0, &chk);
#endif
    phase(L,
          gkd   ? "device bidiagonal svd (the Golub-Kahan matrix's eigenvectors)"
          : vec ? "host bidiagonal svd (vectors; Q, P formed on the device meanwhile)"
                : "host bidiagonal values",
          N, &t0);
    if (s == KILN_OK)
      s = write_vec(L, so, b * N, N, hs);
    if (s != KILN_OK || !vec)
      continue;
    /* which output U and V land in depends on the shape */
    kiln_tensor *ut = m >= n ? uo : t[X_], *vt = m >= n ? t[X_] : uo;
    uint64_t uoff = m >= n ? b * m * uc : 0, voff = m >= n ? 0 : b * m * uc;
    kiln__lsp_mat ubm = {pv->dev, 0, N}, vbm = {pv->dev, N * N, N};
    for (int again = 1; s == KILN_OK && again;) {
      again = 0;
      if (own)
        kiln__lh_store(L->dt, ub, 2 * N * N, pv->p);
      cl_int werr = clEnqueueWriteBuffer(L->ctx->queue, pv->dev, CL_FALSE, 0, 2 * N * N * L->ts,
                                         pv->p, 0, NULL, NULL);
      if (werr != CL_SUCCESS)
        s = kiln__fail_cl(L->op, werr, "clEnqueueWriteBuffer (singular vectors)");
      /* Neither the Golub-Kahan route's acceptance (the halves' norms) nor dbdsvdx bounds the
       * orthogonality of U and V on graded singular values (docs/linalg.md): Ub^T Ub and
       * Vb^T Vb on the device decide. Past LAPACK's MRRR threshold (50 n eps) the matrix is
       * redone without the Golub-Kahan route, then by dbdsqr. */
      double oe[2] = {0, 0}, ou, ov;
      if (s == KILN_OK && chk) /* Ub and Vb, N^2 elements apart */
        s = orth_err_dev(L, ubm, 2, N, oe);
      ou = oe[0];
      ov = oe[1];
      if (s == KILN_OK && chk)
        kiln__log(KILN__LOG_DEBUG,
                  "%s: singular vectors of matrix %llu: ||U^T U - I|| %.1f, ||V^T V - I|| "
                  "%.1f n eps%s",
                  L->op, (unsigned long long)b, ou, ov,
                  fmax(ou, ov) <= KILN__LSP_ORTH_REDO ? "" : ": redone by the next host routine");
      if (s == KILN_OK && chk && !(fmax(ou, ov) <= KILN__LSP_ORTH_REDO)) {
        memcpy(hd, hd0, N * sizeof *hd);
        memcpy(he, he0, N * sizeof *he);
#if KILN_HAVE_LAPACKE
        level = chk == 2 ? 1 : 2;
        s = bidiag_svd(L->op, b, N, hd, he, hs, ub, hv, level, &chk);
#endif
        if (s == KILN_OK)
          s = write_vec(L, so, b * N, N, hs);
        again = 1;
      }
    }
    kiln__lsp_mat um = kiln__lsp_tmat(ut, ucM), vm = kiln__lsp_tmat(vt, N);
    um.off += uoff;
    vm.off += voff;
    if (s == KILN_OK)
      s = kiln__lsp_gemm(L, 0, 0, M, N, N, 1.0, qm, ubm, 0.0, um);
    if (s == KILN_OK && ucM > N) { /* full: U's last columns are Q's */
      size_t so_[3] = {(size_t)((qm.off % ucM + N) * L->ts), (size_t)(qm.off / ucM), 0},
             dso[3] = {(size_t)((um.off % ucM + N) * L->ts), (size_t)(um.off / ucM), 0};
      size_t reg[3] = {(size_t)((ucM - N) * L->ts), (size_t)M, 1};
      cl_int err = clEnqueueCopyBufferRect(L->ctx->queue, qm.mem, um.mem, so_, dso, reg,
                                           (size_t)(ucM * L->ts), 0, (size_t)(ucM * L->ts), 0, 0,
                                           NULL, NULL);
      if (err != CL_SUCCESS)
        s = kiln__fail_cl(L->op, err, "clEnqueueCopyBufferRect");
    }
    if (s == KILN_OK)
      s = kiln__lsp_gemm(L, 0, 0, N, N, N, 1.0, pm, vbm, 0.0, vm);
    /* V^T: the transpose of V (m >= n), or of U' (wide) */
    kiln__lsp_mat dst = kiln__lsp_tmat(vto, n);
    dst.off += b * vr * n;
    if (s == KILN_OK)
      s = m >= n ? transpose(L, vm, N, N, dst) : transpose(L, um, M, ucM, dst);
    phase(L, "back-transformation (the uploads of Ub, Vb; U = Q Ub, V = P Vb)", N, &t0);
  }
  kiln__lsp_ws_release(&ws);
  gb_release(&g);
  for (int i = 0; i < 9; i++)
    kiln_tensor_release(t[i]);
#if KILN_HAVE_LAPACKE
  kiln__lsp_tdev_release(tds);
#endif
  kiln_tensor_release(gz);
  free(hd);
  free(he);
  free(hs);
  free(hd0);
  free(he0);
  if (own)
    free(ub);
  return s;
}

kiln_status
kiln_linalg_svd(kiln_context *ctx, const kiln_tensor *a, int full_matrices, kiln_tensor **u,
                kiln_tensor **s, kiln_tensor **vt)
{
  static const char op[] = "kiln_linalg_svd";
  KILN_TRY(kiln__ctx_check(op, ctx));
  if (kiln__tensor_check(op, a, ctx) == KILN_OK && (a->dtype == KILN_C64 || a->dtype == KILN_C128))
    return kiln__lsp_svd_complex(ctx, a, full_matrices, u, s, vt);
  KILN_TRY(kiln__lsp_check_mat(op, ctx, a, "a"));
  KILN_RETURN_IF(!s, KILN_ERR_INVALID_ARGUMENT, op, "s is NULL");
  KILN_RETURN_IF(!u != !vt, KILN_ERR_INVALID_ARGUMENT, op,
                 "u and vt must both be given or both be NULL");
  KILN_TRY(need_lapacke(op, "the bidiagonal stage of svd"));
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  uint64_t uc = full_matrices ? m : k, vr = full_matrices ? n : k;
  int64_t st[1] = {(int64_t)k}, ut[2] = {(int64_t)m, (int64_t)uc},
          vtt[2] = {(int64_t)vr, (int64_t)n};
  kiln__shape ss = kiln__lsp_shape(a, st, 1), us = kiln__lsp_shape(a, ut, 2),
              vs = kiln__lsp_shape(a, vtt, 2);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status st_ = kiln__lsp_out(&o, op, ctx, a->dtype, &ss, s);
  if (st_ == KILN_OK && u)
    st_ = kiln__lsp_out(&o, op, ctx, a->dtype, &us, u);
  if (st_ == KILN_OK && u)
    st_ = kiln__lsp_out(&o, op, ctx, a->dtype, &vs, vt);
  if (st_ == KILN_OK)
    st_ = kiln__lsp_outs_check(&o, op, a, NULL);
  if (st_ == KILN_OK && k > 0 && batch > 0)
    st_ = svd_device(&L, a, m, n, batch, full_matrices, u ? *u : NULL, *s, u ? *vt : NULL);
  if (st_ == KILN_OK && k == 0 && u && batch > 0) {
    /* no singular values: U and V^T are identities */
    double *hu = malloc((batch * m * uc + 1) * sizeof *hu),
           *hv = malloc((batch * vr * n + 1) * sizeof *hv);
    st_ = host_mem(op, hu && hv);
    for (uint64_t i = 0; st_ == KILN_OK && i < batch * m * uc; i++)
      hu[i] = (i % (m * uc)) / uc == (i % (m * uc)) % uc ? 1.0 : 0.0;
    for (uint64_t i = 0; st_ == KILN_OK && i < batch * vr * n; i++)
      hv[i] = (i % (vr * n)) / n == (i % (vr * n)) % n ? 1.0 : 0.0;
    if (st_ == KILN_OK)
      st_ = kiln__lsp_upload(&L, *u, hu);
    if (st_ == KILN_OK)
      st_ = kiln__lsp_upload(&L, *vt, hv);
    free(hu);
    free(hv);
  }
  st_ = kiln__lsp_outs_end(&o, st_);
  kiln__ctx_unlock(ctx);
  return st_;
}

kiln_status
kiln_linalg_pinv(kiln_context *ctx, const kiln_tensor *a, double rcond, kiln_tensor **out)
{
  static const char op[] = "kiln_linalg_pinv";
  KILN_TRY(kiln__ctx_check(op, ctx));
  if (kiln__tensor_check(op, a, ctx) == KILN_OK && (a->dtype == KILN_C64 || a->dtype == KILN_C128))
    return kiln__lsp_pinv_complex(ctx, a, rcond, out);
  KILN_TRY(kiln__lsp_check_mat(op, ctx, a, "a"));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_RETURN_IF(isnan(rcond), KILN_ERR_INVALID_ARGUMENT, op, "rcond is NaN");
  KILN_TRY(need_lapacke(op, "pinv"));
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  int64_t pt[2] = {(int64_t)n, (int64_t)m};
  kiln__shape ps = kiln__lsp_shape(a, pt, 2);
  if (rcond < 0)
    rcond = eps_of(a->dtype) * (double)(m > n ? m : n);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, a->dtype, &ps, out);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  double *h = NULL, *hs = NULL, *hu = NULL, *hv = NULL, *hp = NULL;
  if (s == KILN_OK)
    s = kiln__lsp_download(&L, a, &h);
  if (s == KILN_OK) {
    hs = malloc((k + 1) * sizeof *hs);
    hu = malloc((m * k + 1) * sizeof *hu);
    hv = malloc((k * n + 1) * sizeof *hv);
    hp = calloc(batch * n * m + 1, sizeof *hp);
    s = host_mem(op, hs && hu && hv && hp);
  }
#if KILN_HAVE_LAPACKE
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    s = host_svd(op, b, h + b * m * n, m, n, hs, hu, hv, 0);
    double cut = k ? rcond * hs[0] : 0.0, *P = hp + b * n * m;
    /* pinv = V diag(1/s) U^T over the singular values above the cutoff. */
    for (uint64_t l = 0; s == KILN_OK && l < k; l++) {
      if (!(hs[l] > cut))
        break;
      double r = 1.0 / hs[l];
      for (uint64_t i = 0; i < n; i++) {
        double vi = hv[l * n + i] * r;
        for (uint64_t j = 0; j < m; j++)
          P[i * m + j] += vi * hu[j * k + l];
      }
    }
  }
#endif
  if (s == KILN_OK)
    s = kiln__lsp_upload(&L, *out, hp);
  free(h);
  free(hs);
  free(hu);
  free(hv);
  free(hp);
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_linalg_matrix_rank(kiln_context *ctx, const kiln_tensor *a, double tol, kiln_tensor **out)
{
  static const char op[] = "kiln_linalg_matrix_rank";
  KILN_TRY(kiln__ctx_check(op, ctx));
  if (kiln__tensor_check(op, a, ctx) == KILN_OK && (a->dtype == KILN_C64 || a->dtype == KILN_C128))
    return kiln__lsp_rank_complex(ctx, a, tol, out);
  KILN_TRY(kiln__lsp_check_mat(op, ctx, a, "a"));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_RETURN_IF(isnan(tol), KILN_ERR_INVALID_ARGUMENT, op, "tol is NaN");
  KILN_TRY(need_lapacke(op, "matrix_rank"));
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  kiln__shape rs = kiln__lsp_shape(a, NULL, 0);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, KILN_I64, &rs, out);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  double *sv = NULL;
  int64_t *r = NULL;
  if (s == KILN_OK)
    s = batch_svals(&L, a, &sv);
  if (s == KILN_OK)
    s = host_mem(op, (r = malloc((batch + 1) * sizeof *r)) != NULL);
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    double t = tol >= 0 ? tol : (k ? sv[b * k] : 0.0) * (double)(m > n ? m : n) * eps_of(L.dt);
    r[b] = 0;
    for (uint64_t l = 0; l < k; l++)
      r[b] += sv[b * k + l] > t;
  }
  if (s == KILN_OK && batch) {
    cl_int err = clEnqueueWriteBuffer(ctx->queue, (*out)->mem, CL_TRUE, (*out)->offset,
                                      batch * sizeof *r, r, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(op, err, "clEnqueueWriteBuffer");
  }
  free(sv);
  free(r);
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

static int
mnorm_valid(kiln_mnorm p)
{
  return p >= KILN_MNORM_FRO && p <= KILN_MNORM_NEG_INF;
}

static int
mnorm_svd(kiln_mnorm p)
{
  return p == KILN_MNORM_NUC || p == KILN_MNORM_2 || p == KILN_MNORM_NEG2;
}

/* A norm of the m x n row-major x that needs no singular values. */
static double
norm_direct(const double *x, uint64_t m, uint64_t n, kiln_mnorm p)
{
  if (p == KILN_MNORM_FRO) {
    double scale = 0.0, ss = 1.0; /* LAPACK dlassq: no overflow for large entries */
    for (uint64_t i = 0; i < m * n; i++) {
      double v = fabs(x[i]);
      if (isnan(v))
        return v;
      if (v > scale) {
        ss = 1.0 + ss * (scale / v) * (scale / v);
        scale = v;
      } else if (v > 0) {
        ss += (v / scale) * (v / scale);
      }
    }
    return scale * sqrt(ss);
  }
  int cols = p == KILN_MNORM_1 || p == KILN_MNORM_NEG1,
      mx = p == KILN_MNORM_1 || p == KILN_MNORM_INF;
  uint64_t outer = cols ? n : m, inner = cols ? m : n;
  double best = outer ? (mx ? 0.0 : INFINITY) : 0.0;
  for (uint64_t o = 0; o < outer; o++) {
    double t = 0.0;
    for (uint64_t i = 0; i < inner; i++)
      t += fabs(cols ? x[i * n + o] : x[o * n + i]);
    if (isnan(t))
      return t;
    best = mx ? fmax(best, t) : fmin(best, t);
  }
  return best;
}

/* A norm from descending singular values s[k]. */
static double
norm_svals(const double *s, uint64_t k, kiln_mnorm p)
{
  if (k == 0)
    return 0.0;
  if (p == KILN_MNORM_2)
    return s[0];
  if (p == KILN_MNORM_NEG2)
    return s[k - 1];
  double t = 0.0;
  for (uint64_t i = 0; i < k; i++)
    t += s[i];
  return t;
}

static kiln_status
norm_common(const char *op, kiln_context *ctx, const kiln_tensor *a, kiln_mnorm p, int cond,
            kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  if (kiln__tensor_check(op, a, ctx) == KILN_OK && (a->dtype == KILN_C64 || a->dtype == KILN_C128))
    return kiln__lsp_norm_complex(op, ctx, a, p, cond, out);
  KILN_TRY(kiln__lsp_check_mat(op, ctx, a, "a"));
  KILN_RETURN_IF(!mnorm_valid(p), KILN_ERR_INVALID_ARGUMENT, op, "%s is %d, not a kiln_mnorm",
                 cond ? "p" : "ord", (int)p);
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  int svd = mnorm_svd(p) && !(cond && p == KILN_MNORM_NUC);
  if (cond && !svd)
    KILN_TRY(kiln__lsp_check_square(op, a, "a (cond with a norm other than 2 and -2)"));
  if (svd || cond)
    KILN_TRY(need_lapacke(op, cond ? "cond" : "the 2-norm and nuclear norms"));
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  kiln__shape rs = kiln__lsp_shape(a, NULL, 0);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, a->dtype, &rs, out);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  double *h = NULL, *r = NULL, *sv = NULL, *inv = NULL;
  if (s == KILN_OK)
    s = host_mem(op, (r = malloc((batch + 1) * sizeof *r)) != NULL);
  if (s == KILN_OK && svd)
    s = batch_svals(&L, a, &sv);
  else if (s == KILN_OK)
    s = kiln__lsp_download(&L, a, &h);
  if (s == KILN_OK && cond && !svd)
    s = host_mem(op, (inv = malloc((n * n + 1) * sizeof *inv)) != NULL);
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    if (svd && !cond) {
      r[b] = norm_svals(sv + b * k, k, p);
    } else if (svd) {
      const double *sb = sv + b * k;
      double big = k ? sb[0] : 0.0, small = k ? sb[k - 1] : 0.0;
      r[b] = k == 0 ? 0.0 : p == KILN_MNORM_2 ? big / small : small / big;
    } else if (!cond) {
      r[b] = norm_direct(h + b * m * n, m, n, p);
    } else {
#if KILN_HAVE_LAPACKE
      const double *x = h + b * n * n;
      memcpy(inv, x, n * n * sizeof *inv);
      lapack_int *ip = malloc((n + 1) * sizeof *ip);
      s = host_mem(op, ip != NULL);
      if (s != KILN_OK)
        break;
      lapack_int info =
          n ? LAPACKE_dgetrf(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, inv, (lapack_int)n, ip)
            : 0;
      if (info > 0) {
        r[b] = INFINITY;
      } else {
        if (n)
          info = LAPACKE_dgetri(LAPACK_ROW_MAJOR, (lapack_int)n, inv, (lapack_int)n, ip);
        if (p == KILN_MNORM_NUC) {
          /* cond in the nuclear norm needs the singular values of A and A^-1: sum s * sum 1/s */
          double *c1 = malloc((n * n + 1) * sizeof *c1), *s1 = malloc((n + 1) * sizeof *s1);
          s = host_mem(op, c1 && s1);
          double t1 = 0, t2 = 0;
          if (s == KILN_OK) {
            memcpy(c1, x, n * n * sizeof *c1);
            s = host_svd(op, b, c1, n, n, s1, NULL, NULL, 0);
          }
          for (uint64_t i = 0; s == KILN_OK && i < n; i++) {
            t1 += s1[i];
            t2 += 1.0 / s1[i];
          }
          r[b] = t1 * t2;
          free(c1);
          free(s1);
        } else {
          r[b] = info > 0 ? INFINITY : norm_direct(x, n, n, p) * norm_direct(inv, n, n, p);
        }
      }
      free(ip);
#endif
    }
  }
  if (s == KILN_OK)
    s = kiln__lsp_upload(&L, *out, r);
  free(h);
  free(r);
  free(sv);
  free(inv);
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_linalg_matrix_norm(kiln_context *ctx, const kiln_tensor *a, kiln_mnorm ord, kiln_tensor **out)
{
  return norm_common("kiln_linalg_matrix_norm", ctx, a, ord, 0, out);
}

kiln_status
kiln_linalg_cond(kiln_context *ctx, const kiln_tensor *a, kiln_mnorm p, kiln_tensor **out)
{
  return norm_common("kiln_linalg_cond", ctx, a, p, 1, out);
}

/* ---------------------------------------------------------------- lstsq */

#define LSQ_FN lstsq_real
#define LSQ_T double
#define LSQ_CHECK_MAT kiln__lsp_check_mat
#define LSQ_ABS(x) fabs(x)
#define LSQ_ABS2(x) ((x) * (x))
#define LSQ_DOWNLOAD(L, t, out) kiln__lsp_download((L), (t), (out))
#define LSQ_UPLOAD(L, t, v) kiln__lsp_upload((L), (t), (v))
#define LSQ_UPLOAD_REAL(L, t, v) kiln__lsp_upload((L), (t), (v))
#define LSQ_GELSD LAPACKE_dgelsd
#define LSQ_GELSD_NAME "dgelsd"
#define LSQ_SVALS(op, b, r, n, s) host_svd((op), (b), (r), (n), (n), (s), NULL, NULL, 0)
#include "ops/linalg_lstsq_body.h"

kiln_status
kiln_linalg_lstsq(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, double rcond,
                  kiln_tensor **x, kiln_tensor **residuals, kiln_tensor **rank, kiln_tensor **sv)
{
  static const char op[] = "kiln_linalg_lstsq";
  KILN_TRY(kiln__ctx_check(op, ctx));
  if (kiln__tensor_check(op, a, ctx) == KILN_OK && (a->dtype == KILN_C64 || a->dtype == KILN_C128))
    return kiln__lsp_lstsq_complex(ctx, a, b, rcond, x, residuals, rank, sv);
  return lstsq_real(ctx, a, b, rcond, x, residuals, rank, sv);
}

/* norm_direct and norm_svals for the complex norms (lib/ops/linalg_spectral_complex.c), which
 * apply them to the moduli of the entries and to the complex singular values. */
double
kiln__lsp_norm_direct(const double *x, uint64_t m, uint64_t n, kiln_mnorm p)
{
  return norm_direct(x, m, n, p);
}

double
kiln__lsp_norm_svals(const double *s, uint64_t k, kiln_mnorm p)
{
  return norm_svals(s, k, p);
}
