#!/usr/bin/env python3
"""Measures kiln's GEMM and FFT next to NumPy in the same run, plus first-call costs.

Usage (NumPy comes from the distribution: python3-numpy, BLAS from the
libblas.so.3 alternative, OpenBLAS when libopenblas0-pthread is installed):

    /usr/bin/python3 bench/blas_fft_compare.py --build build [--quick]

Prints Markdown tables (the ones in docs/blas_fft.md):
  1. SGEMM/DGEMM GFLOP/s, kiln (CLBlast route) vs NumPy's BLAS, square sizes.
  2. c2c FFT ms per transform, kiln with clFFT and with VkFFT vs numpy.fft.
  3. First-call costs in new processes: FFT plan creation and CLBlast's first
     GEMM with cold caches (fresh kiln and PoCL cache directories), warm
     caches, and kiln's caches warm with PoCL's kernel cache off.
Device figures are medians from `kiln bench` (OpenCL profiling events); wall
figures include launch and wait. Nothing here passes or fails: it reports.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def blas_library():
    """The BLAS this NumPy process loaded, from its memory map."""
    try:
        with open('/proc/self/maps') as f:
            libs = {line.split()[-1] for line in f if 'blas' in line.lower() and '/' in line}
    except OSError:
        return 'unknown'
    for lib in sorted(libs):
        if 'openblas' in lib:
            return 'OpenBLAS (' + lib + ')'
    return ', '.join(sorted(libs)) or 'unknown'


def time_median(fn, min_reps=5, budget_s=1.0):
    fn()
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or (time.perf_counter() - start < budget_s and len(times) < 50):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def kiln_bench(build, filt, sizes, dtypes, env=None):
    cmd = [os.path.join(build, 'tools', 'kiln'), 'bench', '--filter', filt, '--sizes',
           ','.join(str(s) for s in sizes), '--dtype', ','.join(dtypes), '--json', '--no-startup']
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def gemm_table(build, dims, dtypes):
    import numpy as np
    # blas.gemm (the default route) and blas.gemm_clblast (CLBlast forced) in one run
    res = kiln_bench(build, 'blas.gemm', [d * d for d in dims], dtypes)
    rows = {(r['case'], r['dtype'], r['n']): r for r in res['results']}
    print(f"\n### GEMM on {res['device']['name']} ({res['device']['platform']}), "
          f"NumPy {np.__version__} with {blas_library()}\n")
    print('| op | n | kiln device ms | kiln GFLOP/s (device) | kiln GFLOP/s (wall) '
          '| CLBlast GFLOP/s (device) | NumPy ms | NumPy GFLOP/s | kiln / NumPy |')
    print('|---|---|---|---|---|---|---|---|---|')
    rng = np.random.default_rng(1)
    for dt in dtypes:
        npdt = np.float32 if dt == 'f32' else np.float64
        for d in dims:
            r = rows.get(('blas.gemm', dt, d * d))
            a = rng.standard_normal((d, d)).astype(npdt)
            b = rng.standard_normal((d, d)).astype(npdt)
            t = time_median(lambda: a @ b)
            flops = 2.0 * d ** 3
            np_gf = flops / t * 1e-9
            name = 'SGEMM' if dt == 'f32' else 'DGEMM'
            cb = rows.get(('blas.gemm_clblast', dt, d * d))
            cb_gf = f"{cb['gflops']:.1f}" if cb else '-'
            if r is None:
                print(f'| {name} | {d} | - | - | - | {cb_gf} | {t * 1e3:.3f} | {np_gf:.1f} | - |')
                continue
            wall_gf = flops / (r['wall_ms'] * 1e-3) * 1e-9
            print(f"| {name} | {d} | {r['device_ms']:.3f} | {r['gflops']:.1f} | {wall_gf:.1f} "
                  f"| {cb_gf} | {t * 1e3:.3f} | {np_gf:.1f} | {r['gflops'] / np_gf:.2f} |")


def fft_table(build, exps, dtypes):
    import numpy as np
    sizes = [1 << e for e in exps]
    res = kiln_bench(build, 'fft.c2c_', sizes, dtypes)
    rows = {(r['case'], r['dtype'], r['n']): r for r in res['results']}
    print(f"\n### c2c FFT, one transform, on {res['device']['name']}; numpy.fft (pocketfft, "
          "computes in double)\n")
    print('| dtype | n | clFFT ms | VkFFT ms | numpy.fft ms | clFFT GFLOP/s | VkFFT GFLOP/s |')
    print('|---|---|---|---|---|---|---|')
    rng = np.random.default_rng(2)
    for dt in dtypes:
        cdt = np.complex64 if dt == 'f32' else np.complex128
        for n, e in zip(sizes, exps):
            cl = rows.get(('fft.c2c_clfft', dt, n))
            vk = rows.get(('fft.c2c_vkfft', dt, n))
            x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(cdt)
            t = time_median(lambda: np.fft.fft(x), budget_s=0.5)

            def f(r, key, fmt):
                return fmt.format(r[key]) if r else '-'
            print(f"| {dt} | 2^{e} | {f(cl, 'device_ms', '{:.3f}')} | "
                  f"{f(vk, 'device_ms', '{:.3f}')} | {t * 1e3:.3f} | "
                  f"{f(cl, 'gflops', '{:.2f}')} | {f(vk, 'gflops', '{:.2f}')} |")


def run_first_call(build, args, kiln_dir, pocl_dir, pocl_cache=True):
    env = dict(os.environ)
    env.pop('CLFFT_CACHE_PATH', None)
    env['KILN_CACHE_DIR'] = kiln_dir
    env['POCL_CACHE_DIR'] = pocl_dir
    env['POCL_KERNEL_CACHE'] = '1' if pocl_cache else '0'
    env.setdefault('KILN_LOG', 'error')
    out = subprocess.run([os.path.join(build, 'bench', 'first_call')] + args, check=True,
                         capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def first_call_table(build, fft_sizes, blas_dtypes):
    tmp = tempfile.mkdtemp(prefix='kiln-first-call-')
    try:
        print('\n### First-call costs, each in a new process (ms)\n')
        print('cold: fresh kiln and PoCL cache directories; warm: both filled by an earlier '
              'process; kiln only: kiln\'s caches (clFFT binaries, VkFFT binaries where '
              'reloadable) filled, PoCL\'s kernel cache off.\n')
        print('| what | cold | warm | kiln only (PoCL cache off) | same process, second time |')
        print('|---|---|---|---|---|')
        k = 0
        cases = [['fft', be, str(n), 'f32'] for n in fft_sizes for be in ('clfft', 'vkfft')]
        cases += [['blas', dt] for dt in blas_dtypes]
        for args in cases:
            k += 1
            cold = run_first_call(build, args, f'{tmp}/k{k}c', f'{tmp}/p{k}c')
            kd, pd = f'{tmp}/k{k}w', f'{tmp}/p{k}w'
            run_first_call(build, args, kd, pd)
            warm = run_first_call(build, args, kd, pd)
            konly = run_first_call(build, args, kd, f'{tmp}/p{k}o', pocl_cache=False)
            if args[0] == 'fft':
                key, again = 'plan_create_ms', 'cached_plan_create_ms'
                what = f'FFT plan {args[1]} c2c 2^{int(args[2]).bit_length() - 1} {args[3]}'
                extra = (f" + first run {cold['first_execute_ms']:.0f} / "
                         f"{warm['first_execute_ms']:.0f} / {konly['first_execute_ms']:.0f}")
            else:
                for r in ('gemm', 'gemm_batched', 'gemv', 'syrk', 'dot', 'axpy', 'scal'):
                    key = f'first_{r}_ms'
                    again = f" (second GEMM {cold['second_gemm_ms']:.2f})" if r == 'gemm' else ''
                    print(f'| CLBlast first {r} {args[1]} | {cold[key]:.0f} | {warm[key]:.0f} '
                          f'| {konly[key]:.0f} | -{again} |')
                continue
            print(f'| {what} | {cold[key]:.0f} | {warm[key]:.0f} | {konly[key]:.0f} '
                  f'| {cold[again]:.3f}{extra} |')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default='build', help='meson build directory')
    ap.add_argument('--gemm-sizes', default='256,512,1024')
    ap.add_argument('--fft-exps', default='16,17,18,19,20')
    ap.add_argument('--dtypes', default='f32,f64')
    ap.add_argument('--quick', action='store_true', help='GEMM 256 and FFT 2^16 only')
    ap.add_argument('--skip', default='', help='comma list of gemm,fft,first')
    a = ap.parse_args()
    dims = [int(x) for x in a.gemm_sizes.split(',')]
    exps = [int(x) for x in a.fft_exps.split(',')]
    if a.quick:
        dims, exps = dims[:1], exps[:1]
    dtypes = a.dtypes.split(',')
    skip = set(a.skip.split(',')) - {''}
    print(f'# kiln BLAS/FFT comparison, {time.strftime("%Y-%m-%d %H:%M")}, '
          f'{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}')
    if 'gemm' not in skip:
        gemm_table(a.build, dims, dtypes)
    if 'fft' not in skip:
        fft_table(a.build, exps, dtypes)
    if 'first' not in skip:
        first_call_table(a.build, [1 << exps[0], 1 << exps[-1]], dtypes)
    sys.stdout.flush()


if __name__ == '__main__':
    main()
