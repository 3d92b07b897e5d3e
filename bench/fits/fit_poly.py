"""The polynomial fits of kiln's own math functions (docs/layout.md, docs/nn.md):
   /usr/bin/python3 bench/fits/fit_poly.py   (NumPy and mpmath, Debian python3-numpy,
   python3-mpmath). Iteratively reweighted least squares towards the minimax fit:
 - log: P of degree 7 with ln(1 + f) = f + f^2 P(f), f in [sqrt(2)/2 - 1, sqrt(2) - 1], rounded to
   float (random.cl's det_m2log_f32 takes these scaled by -(1/2)(-1/2)^i, exactly);
 - exp: Q of degree 9 with e^r = 1 + r + r^2 Q(r), |r| <= ln(2)/2 (exp64.clh), in 60 digits.
bench/fits/check_math.c measures the functions built from them."""
import mpmath as mp
import numpy as np


def fit_log(deg=7, n=4000):
    lo, hi = float(np.float32(0.70710677)) - 1, float(np.float32(1.4142135)) - 1
    xs = np.cos(np.linspace(np.pi, 0, n)) * (hi - lo) / 2 + (hi + lo) / 2
    xs = xs[np.abs(xs) > 1e-9]
    mp.mp.dps = 40
    g = np.array([float((mp.log1p(x) - x) / (x * x)) for x in xs])
    w = np.abs(xs * xs / np.array([float(mp.log1p(x)) for x in xs]))
    a = np.vander(xs, deg + 1, increasing=True)
    wt = np.ones_like(xs)
    for _ in range(60):
        c, *_ = np.linalg.lstsq(a * (w * wt)[:, None], g * w * wt, rcond=None)
        err = np.abs((a @ c - g) * w)
        wt *= 1 + 4 * err / err.max()
        wt /= wt.mean()
    c32 = [np.float32(v) for v in c]
    scaled = [np.float32(-0.5 * (-0.5) ** i * float(v)) for i, v in enumerate(c32)]
    return err.max(), c32, scaled


def fit_exp(nq=10, n=160):
    mp.mp.dps = 60
    h = mp.log(2) / 2 * mp.mpf("1.0002")
    xs = [h * mp.cos(mp.pi * (i + mp.mpf(1) / 2) / n) for i in range(n)]
    g = [(mp.exp(x) - 1 - x) / (x * x) for x in xs]
    w = [x * x / mp.exp(x) for x in xs]
    wt = [mp.mpf(1)] * n
    for _ in range(30):
        a, b = mp.matrix(n, nq), mp.matrix(n, 1)
        for i, x in enumerate(xs):
            for j in range(nq):
                a[i, j] = x**j * w[i] * wt[i]
            b[i] = g[i] * w[i] * wt[i]
        c = mp.lu_solve(a.T * a, a.T * b)
        err = [abs((sum(c[j] * x**j for j in range(nq)) - g[i]) * w[i]) for i, x in enumerate(xs)]
        m = max(err)
        wt = [wt[i] * (1 + 4 * err[i] / m) for i in range(n)]
    return m, [float(c[j]) for j in reversed(range(nq))]


if __name__ == "__main__":
    e, c, s = fit_log()
    print("log1p: rel err %.3g before rounding" % e)
    print("  P (f^0 first):", ", ".join(np.format_float_scientific(v, unique=True) for v in c))
    print("  det_m2log_f32's (g^0 first):", ", ".join(np.format_float_scientific(v, unique=True) for v in s))
    e, c = fit_exp()
    print("exp: rel err %s before rounding" % mp.nstr(e, 3))
    print("  Q (highest first):", ", ".join(repr(v) for v in c))
