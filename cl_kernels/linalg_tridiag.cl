/*
 * linalg_spectral family, eigh's tridiagonal stage on the device (lib/ops/linalg_tridiag.c):
 * the eigenpairs of one symmetric tridiagonal T = (d, e). Built for f64 only (T = double):
 * the vectors need more precision than f32 carries, so f32 matrices send d and e widened.
 *
 * t: [d (n) | e (n, e[n-1] = 0) | e^2 (n)]. Eigenvalue k is the k-th smallest (0-based).
 *
 *   td_bisect(t, n, lo, hi, atol, pivmin, rounds, w)   TD_MS lanes per eigenvalue, groups of
 *     TD_MSG: w[k] by multisection on Sturm counts from the Gershgorin interval [lo, hi]
 *     (rounds rounds), then bisection to atol or 2 ulp of its size.
 *   td_rrr(t, n, pivmin, cand, nslots, rep, growth)   one work-item per candidate shift c
 *     (2 g and 2 g + 1: the gaps left and right of group g): L D L^T = T - cand[c] I into
 *     rep + 4 n c as [D | L | L D | L L D], its largest pivot into growth[c]; td_slot picks a
 *     group's representation.
 *   td_refine(rep, n, grp, cand, growth, w0, atol, pivmin, rounds, w)   as td_bisect: eigenvalue k
 *     of its group's representation (group grp[k]) to relative accuracy, by multisection on
 *     the stationary qd counts (LAPACK's dlaneg) from a bracket around w0[k] - sigma; w[k] is
 *     that eigenvalue (the shift not added: td_vec needs it as is).
 *   td_vec(rep, n, grp, cand, growth, w, pivmin, z)   n work-items: vector k by the twisted
 *     factorization of L D L^T - w[k] I (LAPACK's dlar1v) into column k of z (row-major
 *     n x n), normalised; w[k] += sigma.
 *   td_cholqr(G, n, gs, z)   one group of TD_QR lanes per eigenvalue group (columns gs[g] ..
 *     gs[g+1] - 1, at most TD_QM): those columns of z orthonormalised through G = Z^T Z's
 *     diagonal block.
 *   td_resid(t, n, w, z, res)   n work-items: res[k] = ||T z_k - w[k] z_k||^2.
 *   td_gram_dev(g, n, grp, out)   n work-items: out[j] = twice the sum of g[i][j]^2 over the
 *     i > j of other groups than j's (g symmetric, its lower triangle read: the blocks
 *     td_cholqr leaves as they were).
 *   td_store(z, count, o64, o32, ooff, to32)   count work-items: z into the output at element
 *     ooff (f32 when to32).
 */
#include "common.cl"

/* Pivots below pivmin in magnitude become -pivmin (LAPACK's guard), so no step divides by 0. */
inline double td_guard(double x, double pivmin) { return fabs(x) < pivmin ? -pivmin : x; }

/* Eigenvalues of T below x: the signs of the Sturm sequence's pivots. Four steps' operands
 * are loaded ahead of the chain of divisions (one work-item per eigenvalue leaves one warp per
 * compute unit at 4096: nothing else hides a load's latency). */
inline uint td_count(global const double *d, global const double *e2, uint n, double x,
                     double pivmin)
{
  double q = td_guard(d[0] - x, pivmin);
  uint c = q < 0.0, i = 1;
  for (; i + 4 <= n; i += 4) {
    double a0 = d[i] - x, a1 = d[i + 1] - x, a2 = d[i + 2] - x, a3 = d[i + 3] - x;
    double b0 = e2[i - 1], b1 = e2[i], b2 = e2[i + 1], b3 = e2[i + 2];
    q = td_guard(a0 - b0 / q, pivmin);
    c += q < 0.0;
    q = td_guard(a1 - b1 / q, pivmin);
    c += q < 0.0;
    q = td_guard(a2 - b2 / q, pivmin);
    c += q < 0.0;
    q = td_guard(a3 - b3 / q, pivmin);
    c += q < 0.0;
  }
  for (; i < n; i++) {
    q = td_guard((d[i] - x) - e2[i - 1] / q, pivmin);
    c += q < 0.0;
  }
  return c;
}

/*
 * Multisection: TD_MS lanes per eigenvalue count at TD_MS points of its interval at once, so
 * that a round narrows it ninefold (three bisection steps and more) and eight times as many
 * lanes hide each other's latency. TD_MSG lanes a work-group. td_narrow keeps the part
 * holding eigenvalue k from the counts cnt[0 .. TD_MS) at lo + (j + 1) h, h = (hi - lo) /
 * (TD_MS + 1): the points are computed the same way by the lanes that counted them.
 */
#define TD_MS 8
#define TD_MSG 64
inline double td_point(double lo, double h, uint j) { return lo + (double)(j + 1) * h; }

inline void td_narrow(local const uint *cnt, uint k, double *lo, double *hi)
{
  double a = *lo, h = (*hi - a) / (double)(TD_MS + 1);
  uint j = 0;
  while (j < TD_MS && cnt[j] <= k)
    j++;
  *lo = j ? td_point(a, h, j - 1) : a;
  if (j < TD_MS)
    *hi = td_point(a, h, j);
}

kernel void td_rrr(global const double *t, uint n, double pivmin, global const double *cand,
                   uint nslots, global double *rep, global double *growth)
{
  uint c = get_global_id(0);
  if (c >= nslots)
    return;
  global const double *d = t, *e = t + n;
  global double *D = rep + 4 * (ulong)n * c, *L = D + n, *LD = L + n, *LLD = LD + n;
  double s = cand[c], dp = d[0] - s, big = 0.0;
  for (uint i = 0; i + 1 < n; i++) {
    dp = td_guard(dp, pivmin);
    big = fmax(big, fabs(dp));
    double l = e[i] / dp;
    D[i] = dp;
    L[i] = l;
    LD[i] = l * dp;
    LLD[i] = l * l * dp;
    dp = (d[i + 1] - s) - l * e[i];
  }
  D[n - 1] = dp;
  L[n - 1] = LD[n - 1] = LLD[n - 1] = 0.0;
  big = fmax(big, fabs(dp));
  growth[c] = isnan(big) ? INFINITY : big;
}

/* Group g's representation: of its two candidates, the one whose pivots grow less (as LAPACK's
 * dlarrf chooses between a cluster's two ends). */
inline uint td_slot(global const double *growth, uint g)
{
  return 2 * g + (growth[2 * g + 1] < growth[2 * g]);
}

/* Eigenvalues of L D L^T below x: dlaneg's stationary transform, twist at n (operands four
 * steps ahead, as td_count). */
inline uint td_negc(global const double *D, global const double *LLD, uint n, double x,
                    double pivmin)
{
  uint c = 0, i = 0;
  double s = -x;
  for (; i + 5 <= n; i += 4) {
    double d0 = D[i], d1 = D[i + 1], d2 = D[i + 2], d3 = D[i + 3];
    double l0 = LLD[i], l1 = LLD[i + 1], l2 = LLD[i + 2], l3 = LLD[i + 3];
    double dp = td_guard(d0 + s, pivmin);
    c += dp < 0.0;
    s = (s / dp) * l0 - x;
    dp = td_guard(d1 + s, pivmin);
    c += dp < 0.0;
    s = (s / dp) * l1 - x;
    dp = td_guard(d2 + s, pivmin);
    c += dp < 0.0;
    s = (s / dp) * l2 - x;
    dp = td_guard(d3 + s, pivmin);
    c += dp < 0.0;
    s = (s / dp) * l3 - x;
  }
  for (; i + 1 < n; i++) {
    double dp = td_guard(D[i] + s, pivmin);
    c += dp < 0.0;
    s = (s / dp) * LLD[i] - x;
  }
  return c + (D[n - 1] + s < 0.0);
}

/* Eigenvalues below x of T (rep 0: a = d, b = e^2) or of L D L^T (rep 1: a = D, b = LLD). */
inline uint td_below(int rep, global const double *a, global const double *b, uint n, double x,
                     double pivmin)
{
  return rep ? td_negc(a, b, n, x, pivmin) : td_count(a, b, n, x, pivmin);
}

/*
 * The search of td_bisect and td_refine for eigenvalue k (lanes j of it, e its place in the
 * group; every lane of the group calls it, live or not): rounds of multisection, then lane 0
 * of a live eigenvalue bisects on to atol or 2 ulp of the value. Returns the bracket's
 * midpoint.
 */
inline double td_search(int rep, global const double *a, global const double *b, uint n, uint k,
                        int live, local uint *cnt, double lo, double hi, double atol,
                        double pivmin, uint rounds)
{
  uint lid = get_local_id(0), e = lid / TD_MS, j = lid % TD_MS;
  for (uint r = 0; r < rounds; r++) {
    double h = (hi - lo) / (double)(TD_MS + 1);
    cnt[lid] = live ? td_below(rep, a, b, n, td_point(lo, h, j), pivmin) : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    td_narrow(cnt + e * TD_MS, k, &lo, &hi);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int it = 0; live && j == 0 && it < 128; it++) {
    double mid = 0.5 * (lo + hi);
    if (hi - lo <= fmax(atol, 2.0 * DBL_EPSILON * fmax(fabs(lo), fabs(hi))) || mid <= lo ||
        mid >= hi)
      break;
    if (td_below(rep, a, b, n, mid, pivmin) > k)
      hi = mid;
    else
      lo = mid;
  }
  return 0.5 * (lo + hi);
}

kernel void td_bisect(global const double *t, uint n, double lo0, double hi0, double atol,
                      double pivmin, uint rounds, global double *w)
{
  local uint cnt[TD_MSG];
  uint lid = get_local_id(0);
  uint k = get_group_id(0) * (TD_MSG / TD_MS) + lid / TD_MS;
  /* count(lo) <= k < count(hi) throughout; the host's round count is its bound from the
   * Gershgorin width to atol */
  double x = td_search(0, t, t + 2 * (ulong)n, n, k, k < n, cnt, lo0, hi0, atol, pivmin, rounds);
  if (k < n && lid % TD_MS == 0)
    w[k] = x;
}

/* Multisection as td_bisect, from a bracket of 16 atol around w0[k] - sigma that lane 0 checks
 * (and widens), to 2 ulp of the value. */
kernel void td_refine(global const double *rep, uint n, global const uint *grp,
                      global const double *cand, global const double *growth,
                      global const double *w0, double atol, double pivmin, uint rounds,
                      global double *w)
{
  local uint cnt[TD_MSG];
  local double br[2 * TD_MSG / TD_MS];
  uint lid = get_local_id(0), e = lid / TD_MS, j = lid % TD_MS;
  uint k = get_group_id(0) * (TD_MSG / TD_MS) + e, live = k < n;
  uint c = live ? td_slot(growth, grp[k]) : 0;
  global const double *D = rep + 4 * (ulong)n * c, *LLD = D + 3 * (ulong)n;
  double mu = live ? w0[k] - cand[c] : 0.0;
  /* lane 0 checks (and widens) the bracket's low end, lane 1 its high end */
  if (j < 2) {
    double step = 16.0 * atol, x = j ? mu + step : mu - step;
    for (int it = 0; live && it < 64; it++) {
      uint c = td_negc(D, LLD, n, x, pivmin);
      if (j ? c > k : c <= k)
        break;
      step *= 2.0;
      x += j ? step : -step;
    }
    br[2 * e + j] = x;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  double x = td_search(1, D, LLD, n, k, live, cnt, br[2 * e], br[2 * e + 1], 0.0, pivmin, rounds);
  if (live && j == 0)
    w[k] = x;
}

#define TD_PF 8
kernel void td_vec(global const double *rep, uint n, global const uint *grp,
                   global const double *cand, global const double *growth, global double *w,
                   double pivmin, global double *z)
{
  uint k = get_global_id(0);
  if (k >= n)
    return;
  uint c = td_slot(growth, grp[k]);
  global const double *D = rep + 4 * (ulong)n * c, *L = D + n, *LD = L + n, *LLD = LD + n;
  double lam = w[k];
  global double *zc = z + k; /* element i at zc[i * n]: a warp's lanes store side by side */
  ulong ld = n;
  /* progressive transform from the bottom: P_i into zc */
  double p = D[n - 1] - lam;
  zc[(n - 1) * ld] = p;
  for (uint i = n - 1; i-- > 0;) {
    double dminus = td_guard(LLD[i] + p, pivmin);
    p = p * (D[i] / dminus) - lam;
    zc[i * ld] = p;
  }
  /* stationary transform from the top; the twist r minimises |gamma_i| = |S_{i-1} + P_i|.
   * The passes that read zc load TD_PF elements ahead of their chains (DRAM latency, one
   * warp per compute unit: see td_count). */
  double s = -lam, sprev = 0.0, gmin = INFINITY, pf[TD_PF];
  uint r = 0;
  for (uint i0 = 0; i0 < n; i0 += TD_PF) {
#pragma unroll
    for (uint u = 0; u < TD_PF; u++)
      pf[u] = i0 + u < n ? zc[(i0 + u) * ld] : 0.0;
#pragma unroll
    for (uint u = 0; u < TD_PF; u++) {
      uint i = i0 + u;
      if (i < n) {
        double gam = sprev + pf[u];
        if (fabs(gam) <= gmin) {
          gmin = fabs(gam);
          r = i;
        }
        double dplus = td_guard(D[i] + s, pivmin);
        sprev = s * (LD[i] / dplus) * L[i];
        s = sprev - lam;
      }
    }
  }
  /* below r: z_{i+1} = -U-_i z_i with U-_i = L_i D_i / (LLD_i + P_{i+1}) */
  double zz = 1.0, nrm = 1.0;
  for (uint i0 = r; i0 + 1 < n; i0 += TD_PF) {
#pragma unroll
    for (uint u = 0; u < TD_PF; u++)
      pf[u] = i0 + u + 1 < n ? zc[(i0 + u + 1) * ld] : 0.0;
#pragma unroll
    for (uint u = 0; u < TD_PF; u++) {
      uint i = i0 + u;
      if (i + 1 < n) {
        double dminus = td_guard(LLD[i] + pf[u], pivmin);
        zz = -(L[i] * (D[i] / dminus)) * zz;
        zc[(i + 1) * ld] = zz;
        nrm += zz * zz;
      }
    }
  }
  zc[r * ld] = 1.0;
  /* L+_i for i < r into zc, then above r: z_i = -L+_i z_{i+1} */
  s = -lam;
  for (uint i = 0; i < r; i++) {
    double dplus = td_guard(D[i] + s, pivmin), lp = LD[i] / dplus;
    zc[i * ld] = lp;
    s = s * lp * L[i] - lam;
  }
  zz = 1.0;
  /* (a signed index: the unsigned form became a saturating subtraction, which oclgrind
   * cannot run) */
  for (int i0 = (int)r; i0 > 0; i0 -= TD_PF) {
#pragma unroll
    for (int u = 0; u < TD_PF; u++)
      pf[u] = u < i0 ? zc[(ulong)(i0 - 1 - u) * ld] : 0.0;
#pragma unroll
    for (int u = 0; u < TD_PF; u++)
      if (u < i0) {
        zz = -pf[u] * zz;
        zc[(ulong)(i0 - 1 - u) * ld] = zz;
        nrm += zz * zz;
      }
  }
  /* normalise */
  double sc = 1.0 / sqrt(nrm);
  for (uint i0 = 0; i0 < n; i0 += TD_PF) {
#pragma unroll
    for (uint u = 0; u < TD_PF; u++)
      pf[u] = i0 + u < n ? zc[(i0 + u) * ld] : 0.0;
#pragma unroll
    for (uint u = 0; u < TD_PF; u++)
      if (i0 + u < n)
        zc[(i0 + u) * ld] = pf[u] * sc;
  }
  w[k] = cand[c] + lam;
}

/*
 * Per group (one work-group of TD_QR lanes each, m = gs[g+1] - gs[g] <= TD_QM columns): the
 * Cholesky factor R^T R of its diagonal block of G = Z^T Z, then its columns of Z times
 * R^-1 (a triangular solve per row, TD_QR rows at a time staged in local memory). The twisted
 * vectors of close eigenvalues in one group can lean towards each other by eps |lambda -
 * sigma| / gap (more where the pivots grow); this makes them orthonormal again without moving
 * them out of the group's span (their residuals grow by about eps |lambda - sigma|).
 */
#define TD_QR 32
#define TD_QM 48
kernel void td_cholqr(global const double *G, uint n, global const uint *gs, global double *z)
{
  /* 31 KB of local memory (the host checks the device has it) */
  local double r[TD_QM * TD_QM], xs[TD_QR * (TD_QM + 1)];
  uint g = get_group_id(0), lid = get_local_id(0), a = gs[g], m = gs[g + 1] - a;
  /* the lower triangle (all the factorization reads, and all the check's GEMM writes) */
  for (uint i = lid; i < m * m; i += TD_QR)
    if (i % m <= i / m)
      r[i] = G[(ulong)(a + i / m) * n + a + i % m];
  barrier(CLK_LOCAL_MEM_FENCE);
  /* lower Cholesky factor in place (row-major m x m): column j by the lanes of its rows */
  for (uint j = 0; j < m; j++) {
    double piv = sqrt(r[j * m + j]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint row = j + 1 + lid; row < m; row += TD_QR)
      r[row * m + j] /= piv;
    if (lid == 0)
      r[j * m + j] = piv;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint row = j + 1 + lid; row < m; row += TD_QR)
      for (uint c = j + 1; c <= row; c++)
        r[row * m + c] -= r[row * m + j] * r[c * m + j];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  /* row x of Z's block: x R^-1 = y with y L^T = x, i.e. L y^T = x^T (forward substitution) */
  for (uint r0 = 0; r0 < n; r0 += TD_QR) {
    uint rows = n - r0 < TD_QR ? n - r0 : TD_QR;
    for (uint i = lid; i < rows * m; i += TD_QR)
      xs[(i / m) * (TD_QM + 1) + i % m] = z[(ulong)(r0 + i / m) * n + a + i % m];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < rows) {
      local double *x = xs + lid * (TD_QM + 1);
      for (uint j = 0; j < m; j++) {
        double v = x[j];
        for (uint c = 0; c < j; c++)
          v -= r[j * m + c] * x[c];
        x[j] = v / r[j * m + j];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < rows * m; i += TD_QR)
      z[(ulong)(r0 + i / m) * n + a + i % m] = xs[(i / m) * (TD_QM + 1) + i % m];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* res[k] = ||T z_k - w[k] z_k||^2 (column k of z). */
kernel void td_resid(global const double *t, uint n, global const double *w,
                     global const double *z, global double *res)
{
  uint k = get_global_id(0);
  if (k >= n)
    return;
  global const double *d = t, *e = t + n;
  double lam = w[k], rr = 0.0, prev = 0.0, cur = z[k];
  for (uint i = 0; i < n; i++) {
    double next = i + 1 < n ? z[(ulong)(i + 1) * n + k] : 0.0;
    double ri = (i ? e[i - 1] * prev : 0.0) + (d[i] - lam) * cur + e[i] * next;
    rr += ri * ri;
    prev = cur;
    cur = next;
  }
  res[k] = isfinite(rr) ? rr : INFINITY;
}

kernel void td_gram_dev(global const double *g, uint n, global const uint *grp,
                        global double *out)
{
  uint j = get_global_id(0);
  if (j >= n)
    return;
  uint gj = grp[j];
  double s = 0.0;
  for (uint i = j + 1; i < n; i++) {
    double x = grp[i] == gj ? 0.0 : g[(ulong)i * n + j];
    s += x * x;
  }
  out[j] = 2.0 * s;
}

kernel void td_store(global const double *z, ulong count, global double *o64, global float *o32,
                     ulong ooff, uint to32)
{
  ulong i = get_global_id(0);
  if (i >= count)
    return;
  if (to32)
    o32[ooff + i] = (float)z[i];
  else
    o64[ooff + i] = z[i];
}
