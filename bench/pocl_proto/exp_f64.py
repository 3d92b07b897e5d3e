#!/usr/bin/env python3
"""f64 exp on PoCL through PyOpenCL: kiln's k_exp64 (cl_kernels/elementwise.cl), a table-driven
form (2^(j/64) from a 64-entry table, degree-6 polynomial, Tang's method) and the same with the
table's trailing parts as a second table; a negation beside them for the memory traffic. 2^N
doubles (argv[1], default 20), 25 alternating rounds (medians, minima, ms), NumPy's exp, then
each form's distance in ulps from Python's math.exp over 2^N arguments.
    /usr/bin/python3 bench/pocl_proto/exp_f64.py 20
docs/performance.md, "Flat kernels without a tail loop on PoCL", quotes it."""
import math
import os
import sys
import time
from decimal import Decimal, getcontext

import numpy as np
import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kexp import k_exp64_source  # noqa: E402

getcontext().prec = 60
HI = [float(Decimal(2) ** (Decimal(j) / 64)) for j in range(64)]
LO = [float(Decimal(2) ** (Decimal(j) / 64) - Decimal(HI[j])) for j in range(64)]
REDUCE = """
  const double xc = x < -746.0 ? -746.0 : x > 710.0 ? 710.0 : x;
  const double kd = (xc * 92.332482616893656877 + 0x1.8p52) - 0x1.8p52;
  const double r = (xc - kd * (6.93147180369123816490e-01 / 64)) -
                   kd * (1.90821492927058770002e-10 / 64);
  const long ki = as_long(kd + 0x1.8p52) - as_long(0x1.8p52);
  double p = 1.0 / 720;
  p = p * r + 1.0 / 120;
  p = p * r + 1.0 / 24;
  p = p * r + 1.0 / 6;
  p = p * r + 0.5;
  p = p * r + 1.0;
  const double q = p * r;
  const long m = ki >> 6, m1 = m >> 1, m2 = m - m1;
  const double s1 = as_double((m1 + 1023) << 52), s2 = as_double((m2 + 1023) << 52);
"""
TABLES = ("constant double exp_hi[64] = {%s};\nconstant double exp_lo[64] = {%s};\n" %
          (",".join(v.hex() for v in HI), ",".join(v.hex() for v in LO)))
ONE = ("inline double k_exp64t(double x)\n{" + REDUCE +
       "  const double t = exp_hi[ki & 63];\n  return x != x ? x : (t * q + t) * s1 * s2;\n}\n")
TWO = ("inline double k_exp64u(double x)\n{" + REDUCE +
       "  const double t = exp_hi[ki & 63], tl = exp_lo[ki & 63];\n"
       "  return x != x ? x : (t + (t * q + tl)) * s1 * s2;\n}\n")
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
src = k_exp64_source() + TABLES + ONE + TWO
names = ['neg', 'cur', 'tab', 'tab2']
fn = {'neg': '-', 'cur': 'k_exp64', 'tab': 'k_exp64t', 'tab2': 'k_exp64u'}
for nm in names:
    src += "kernel void e_%s(global const double *x, global double *y) { size_t i = get_global_id(0); y[i] = %s(x[i]); }\n" % (nm, fn[nm])
prg = cl.Program(ctx, src).build()
n = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 20)
rng = np.random.default_rng(1)
x = rng.uniform(-700, 700, n)
mf = cl.mem_flags
xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
yb = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
ts = {nm: [] for nm in names}
for r in range(25):
    for nm in names:
        ev = getattr(prg, 'e_' + nm)(q, (n,), (256,), xb, yb); ev.wait()
        ts[nm].append((ev.profile.end - ev.profile.start) * 1e-6)
for nm in names:
    print(nm, 'median ms %.3f  min %.3f' % (np.median(ts[nm]), min(ts[nm])))
y = np.empty_like(x)
tt=[]
for r in range(9):
    t0=time.perf_counter(); np.exp(x, out=y); tt.append(time.perf_counter()-t0)
print('numpy median ms %.3f' % (np.median(tt)*1e3))
xs = np.concatenate([rng.uniform(-745.13, 709.78, n - 64), rng.uniform(-1, 1, 64)])
xb2 = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=xs)
want = np.array([math.exp(v) for v in xs])
for nm in names[1:]:
    getattr(prg, 'e_' + nm)(q, (n,), (256,), xb2, yb).wait()
    got = np.empty_like(xs); cl.enqueue_copy(q, got, yb)
    ulp = np.abs(got.view(np.int64) - want.view(np.int64))
    print(nm, 'max ulp', ulp.max(), 'frac>0 %.4f' % ((ulp > 0).mean()))
