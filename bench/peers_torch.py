#!/usr/bin/env python3
"""PyTorch on the same GPU as `kiln bench`: the same cases, sizes and byte counts.

Usage: python3 bench/peers_torch.py [--out FILE.json] [--sizes 2^10,2^14,...] [--dtype f32,f64]
                                    [--filter SUBSTR] [--reps N] [--device cuda|cpu]
                                    [--no-startup] [--first-result] [--compile] [--list]

Measures with PyTorch (cuBLAS for blas.gemm, cuFFT for fft.c2c) every `kiln bench` case
that has a PyTorch equivalent, under kiln's case name, with kiln's shapes for each size
and kiln's byte and flop counts (tools/bench_cases.c), so that GB/s, GFLOP/s and times
compare one to one. bench/report.py puts the result (saved as
docs/perf-data/<machine>-torch.json) next to docs/perf-data/<machine>-bench.json.

Timing (mirrors tools/cmd_bench.c): two untimed runs, then at least 5 timed runs and more
while their wall time adds up to under 0.5 s (at most 50; --reps N fixes the count);
medians. Device time: CUDA events around the op, recorded behind a GPU sleep kernel
(torch.cuda._sleep) so that the op's launches are already queued when the start event
fires: the events measure the GPU's work, not the CPU's launch latency, as OpenCL
profiling events do for kiln. Wall time: the host clock around one call plus
torch.cuda.synchronize(). With --device cpu there are no events and device_ms is the wall
time (a smoke test of the script, not a peer figure).

--compile times the expr.* and user.* cases under torch.compile (dynamic=False; the first
calls compile and are not timed) instead of eagerly, under the same case names: their op
text ends in "(torch.compile)" and settings.mode says so. If torch.compile cannot compile a
small probe function on the device (no triton, no C compiler...), the script says why on
stderr and in "compile_error", measures nothing and exits 1; a case that fails to compile is
a skipped point with its error, and the others go on.

Also: the dispatch overhead (a chain of 500 adds of one-element tensors, wall clock, us per
op, as `kiln bench` measures it) and, with --first-result, the wall time of a new Python
process that imports torch and gets one exp and one cast back (median of 5).

Output JSON (--out FILE; '-' writes it to stdout instead of the table):
  format              "kiln-peers-torch/1"
  tool, created, argv what made it and when (UTC)
  torch_version, cuda_version, python_version
  device              {name, type, capability, multiprocessors, memory_bytes, driver}
  settings            matmul TF32 and precision settings in force, timing method, sleep
  results             one object per (case, dtype, n) measured:
    case, dtype, n    as in `kiln bench --json` (n: elements; blas.*: elements of each
                      square matrix, 2^20 = 1024 x 1024; fft.*: complex points)
    shape             the shape of the main operand; op: the PyTorch call timed
    reps, device_ms, wall_ms, spread_pct   as in `kiln bench --json` (medians; spread is
                      (p90 - p10) / median of the device times)
    enqueue_ms        median host time to issue the call (records and launches, no wait)
    launch_hidden_pct share of timed runs whose launches finished before the GPU sleep did
                      (100 means the device times exclude all launch latency)
    gbps, gflops      as kiln counts them; null where kiln has null
    copy_gbps         PyTorch's own copy (out.copy_(x)) of the same n and dtype, this run
    ratio_to_copy     gbps / copy_gbps
  skipped             [{case, dtype, n, error}] points that failed (e.g. out of memory)
  dispatch_us_per_op  (absent with --no-startup)
  first_result_ms     (only with --first-result) {mode: median ms}

Exit status: 0 all measured, 1 some points failed, 2 no PyTorch, no CUDA device or bad
arguments.
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time

FORMAT = "kiln-peers-torch/1"
DEFAULT_SIZES = "2^10,2^14,2^18,2^22,2^26"  # kiln bench's default list
DTYPES = ("f32", "f64", "f16", "bf16", "c64", "c128", "i32", "i64")
DTYPE_SIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "c64": 8, "c128": 16, "i32": 4, "i64": 8}
# Integer dtypes run only the sort rows (and the copy reference), as kiln bench does.
INT_DTYPES = ("i32", "i64")
MAX_REPS = 50
MIN_REPS = 5
BUDGET_S = 0.5
WARMUP = 2
MIN_SLEEP_MS = 0.2


# --- sizes and dtypes, parsed as kiln's tools/util.c parses them -------------------------

def parse_count(s):
    """'2^N', 'N', 'Nk' (x1024) or 'NM' (x1024^2), as tool_parse_count; None if bad."""
    s = s.strip()
    if s.startswith("2^"):
        try:
            e = int(s[2:])
        except ValueError:
            return None
        return 1 << e if 0 <= e <= 40 else None
    mul = 1
    if s[-1:] in ("k", "K"):
        mul, s = 1024, s[:-1]
    elif s[-1:] in ("m", "M"):
        mul, s = 1024 * 1024, s[:-1]
    try:
        v = float(s)
    except ValueError:
        return None
    if not v >= 1 or v * mul > 1e12:
        return None
    return int(v * mul)


def parse_sizes(text):
    out = []
    for t in text.split(","):
        if not t:
            continue
        n = parse_count(t)
        if n is None:
            raise ValueError(f"bad size '{t}' (N, Nk, NM or 2^N)")
        out.append(n)
    if not out:
        raise ValueError("no sizes")
    return out


def parse_dtypes(text):
    out = [t for t in text.split(",") if t]
    for t in out:
        if t not in DTYPES:
            raise ValueError(f"bad dtype '{t}' (this peer measures {', '.join(DTYPES)})")
    if not out:
        raise ValueError("no dtypes")
    return out


def size_label(n):
    e = n.bit_length() - 1
    return f"2^{e}" if n == 1 << e else str(n)


# --- kiln's byte and flop counts (tools/bench_cases.c) ------------------------------------

def bytes_1in_1out(n, esz):
    return 2.0 * n * esz


def bytes_2in_1out(n, esz):
    return 3.0 * n * esz


def bytes_bcast(n, esz):  # the broadcast row is read once from cache
    return 2.0 * n * esz


def bytes_where(n, esz):  # two operands, the output, and a one-byte condition
    return n * (3.0 * esz + 1.0)


def bytes_cast(n, esz):  # esz in, 4 bytes (i32) out
    return n * (esz + 4.0)


def bytes_read(n, esz):  # reductions: the input once
    return float(n) * esz


def bytes_fft(n, esz):  # complex data read once and written once
    return 4.0 * n * esz


def bytes_gather(n, esz):  # rows read and written, plus an 8-byte index per 64 elements
    return 2.0 * n * esz + n / 64.0 * 8.0


def bytes_write(n, esz):
    return float(n) * esz


def square_dim(n):
    """The side of the largest square with at most n elements (kiln's square_dim)."""
    return max(math.isqrt(n), 1)


def flops_gemm(n):
    d = square_dim(n)
    return 2.0 * d * d * d


def flops_fft(n):
    return 5.0 * n * math.log2(n) if n > 1 else 0.0


# --- the cases ----------------------------------------------------------------------------

class Env:
    """What a case's setup needs: torch, the device, the dtype, and a seeded generator."""

    def __init__(self, torch, device, dtype_name):
        self.torch = torch
        self.device = device
        self.dtype_name = dtype_name
        self.dtype = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
                      "bf16": torch.bfloat16, "c64": torch.complex64,
                      "c128": torch.complex128, "i32": torch.int32,
                      "i64": torch.int64}[dtype_name]
        self.cdtype = torch.complex128 if dtype_name in ("f64", "c128") else torch.complex64
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(12345)
        self.compile = False

    def uniform(self, *shape):
        """Values in [-2, 2), like kiln's bench_random_tensor (integers: [0, 2^28))."""
        if self.dtype_name in INT_DTYPES:
            return self.torch.randint(0, 1 << 28, shape, generator=self.gen, device=self.device,
                                      dtype=self.dtype)
        if self.dtype.is_complex:  # both parts in [-2, 2), as kiln's bench fills complex
            real = self.torch.float64 if self.dtype == self.torch.complex128 else self.torch.float32
            t = self.torch.rand(*shape, 2, generator=self.gen, device=self.device, dtype=real)
            return self.torch.view_as_complex(t.mul_(4.0).sub_(2.0))
        t = self.torch.rand(*shape, generator=self.gen, device=self.device, dtype=self.dtype)
        return t.mul_(4.0).sub_(2.0)

    def empty(self, *shape, dtype=None):
        return self.torch.empty(*shape, device=self.device, dtype=dtype or self.dtype)


def setup_copy(e, n):
    a, out = e.uniform(n), e.empty(n)
    return (lambda: out.copy_(a)), [n], "out.copy_(x)"


def setup_neg(e, n):
    a, out = e.uniform(n), e.empty(n)
    return (lambda: e.torch.neg(a, out=out)), [n], "torch.neg(x, out=out)"


def setup_exp(e, n):
    a, out = e.uniform(n), e.empty(n)
    return (lambda: e.torch.exp(a, out=out)), [n], "torch.exp(x, out=out)"


def setup_add(e, n):
    a, b, out = e.uniform(n), e.uniform(n), e.empty(n)
    return (lambda: e.torch.add(a, b, out=out)), [n], "torch.add(x, y, out=out)"


def setup_add_row_bcast(e, n):
    # kiln: [n/cols, cols] + [cols] with cols = min(n, 1024), the bias-add broadcast
    cols = min(n, 1024)
    shape = [n // cols, cols]
    a, row, out = e.uniform(*shape), e.uniform(cols), e.empty(*shape)
    return (lambda: e.torch.add(a, row, out=out)), shape, "torch.add(x[N,1024], row[1024], out=out)"


def setup_add_col_bcast(e, n):
    # kiln: [n/cols, cols] + [n/cols, 1] with cols = min(n, 1024), a value per row
    cols = min(n, 1024)
    shape = [n // cols, cols]
    a, col, out = e.uniform(*shape), e.uniform(n // cols, 1), e.empty(*shape)
    return (lambda: e.torch.add(a, col, out=out)), shape, "torch.add(x[N,1024], col[N,1], out=out)"


def setup_mul(e, n):
    a, b, out = e.uniform(n), e.uniform(n), e.empty(n)
    return (lambda: e.torch.mul(a, b, out=out)), [n], "torch.mul(a, b, out=out)"


def setup_mul_scalar(e, n):
    a, out = e.uniform(n), e.empty(n)
    return (lambda: e.torch.mul(a, 3.0, out=out)), [n], "torch.mul(x, 3.0, out=out)"


def setup_where(e, n):
    a, b, out = e.uniform(n), e.uniform(n), e.empty(n)
    cond = e.torch.rand(n, generator=e.gen, device=e.device) < 0.5
    return (lambda: e.torch.where(cond, a, b, out=out)), [n], "torch.where(c, x, y, out=out)"


def setup_cast(e, n):
    a, out = e.uniform(n), e.empty(n, dtype=e.torch.int32)
    return (lambda: out.copy_(a)), [n], "out_i32.copy_(x)"


def matrix_shape(n, cols_first):
    # kiln's setup_matrix: [n/inner, inner] (rows) or [inner, n/inner] (columns),
    # inner = min(n, 1024)
    inner = min(n, 1024)
    return [inner, n // inner] if cols_first else [n // inner, inner]


def setup_sum_all(e, n):
    a, out = e.uniform(n), e.empty(())
    return (lambda: e.torch.sum(a, dim=0, out=out)), [n], "torch.sum(x, dim=0, out=out) (x 1-D)"


def setup_reduce(e, n, cols_first):
    shape = matrix_shape(n, cols_first)
    dim = 0 if cols_first else 1
    a, out = e.uniform(*shape), e.empty(shape[1 - dim])
    return (lambda: e.torch.sum(a, dim=dim, out=out)), shape, f"torch.sum(x, dim={dim}, out=out)"


def setup_scan(e, n, cols_first):
    shape = matrix_shape(n, cols_first)
    dim = 0 if cols_first else 1
    a, out = e.uniform(*shape), e.empty(*shape)
    return ((lambda: e.torch.cumsum(a, dim=dim, out=out)), shape,
            f"torch.cumsum(x, dim={dim}, out=out)")


def setup_scan_all(e, n):
    a, out = e.uniform(n), e.empty(n)
    return (lambda: e.torch.cumsum(a, dim=0, out=out)), [n], "torch.cumsum(x, dim=0, out=out) (x 1-D)"


def setup_gemm(e, n):
    d = square_dim(n)
    a, b, out = e.uniform(d, d), e.uniform(d, d), e.empty(d, d)
    return (lambda: e.torch.mm(a, b, out=out)), [d, d], "torch.mm(a, b, out=c) (cuBLAS, TF32 off)"


def setup_fft(e, n):
    # n complex points, batch 1, out of place, forward, no scaling (norm="backward")
    x = e.torch.view_as_complex(e.uniform(n, 2))
    out = e.torch.empty(n, device=e.device, dtype=e.cdtype)
    return (lambda: e.torch.fft.fft(x, out=out)), [n], "torch.fft.fft(x, out=out) (cuFFT, c2c)"


def setup_transpose(e, n):
    # kiln's setup_square: d the largest power of two with d*d <= n; [d, n/d] -> [n/d, d]
    d = 1
    while (d * 2) * (d * 2) <= n:
        d *= 2
    a, out = e.uniform(d, n // d), e.empty(n // d, d)
    return (lambda: out.copy_(a.t())), [d, n // d], "out.copy_(x.t())"


_gather_index_cache = {}


def gather_indices(rows):
    """kiln's row indices: xorshift64 (13, 7, 17) from 88172645463325252, modulo rows."""
    idx = _gather_index_cache.get(rows)
    if idx is None:
        mask = (1 << 64) - 1
        x = 88172645463325252
        idx = [0] * rows
        for i in range(rows):
            x ^= (x << 13) & mask
            x ^= x >> 7
            x ^= (x << 17) & mask
            idx[i] = x % rows
        _gather_index_cache[rows] = idx
    return idx


def setup_gather_rows(e, n):
    # kiln: index_select of n/64 pseudo-random rows of a [n/64, 64] table (an embedding lookup)
    cols = min(n, 64)
    rows = n // cols
    table, out = e.uniform(rows, cols), e.empty(rows, cols)
    idx = e.torch.tensor(gather_indices(rows), dtype=e.torch.int64, device=e.device)
    return ((lambda: e.torch.index_select(table, 0, idx, out=out)), [rows, cols],
            "torch.index_select(table, 0, idx, out=out)")


def setup_normal(e, n):
    out = e.empty(n)
    return (lambda: out.normal_(0.0, 1.0)), [n], "out.normal_(0, 1)"


def nn_rows_shape(n):
    # kiln's setup_nn_rows: [n/inner, inner], inner = min(n, 4096) (16384 x 4096 at 2^26)
    inner = min(n, 4096)
    return [n // inner, inner]


def setup_softmax(e, n):
    shape = nn_rows_shape(n)
    a, out = e.uniform(*shape), e.empty(*shape)
    return (lambda: e.torch.softmax(a, -1, out=out)), shape, "torch.softmax(x, -1, out=out)"


def setup_layer_norm(e, n):
    shape = nn_rows_shape(n)
    a = e.uniform(*shape)
    w = e.torch.ones(shape[1], device=e.device, dtype=e.dtype)
    b = e.torch.zeros(shape[1], device=e.device, dtype=e.dtype)
    f = e.torch.nn.functional
    return ((lambda: f.layer_norm(a, shape[1:], w, b, 1e-5)), shape,
            "F.layer_norm(x, [4096], w, b, 1e-5)")


def setup_gelu(e, n):
    a = e.uniform(n)
    f = e.torch.nn.functional
    return (lambda: f.gelu(a)), [n], "F.gelu(x)"


def setup_cross_entropy(e, n):
    shape = nn_rows_shape(n)
    a = e.uniform(*shape)
    t = e.torch.randint(0, shape[1], (shape[0],), generator=e.gen, device=e.device)
    f = e.torch.nn.functional
    return (lambda: f.cross_entropy(a, t)), shape, "F.cross_entropy(x, t) (mean)"


def bytes_ce(n, esz):  # the logits read once
    return n * esz


def setup_log_softmax(e, n):
    shape = nn_rows_shape(n)
    a, out = e.uniform(*shape), e.empty(*shape)
    return (lambda: e.torch.log_softmax(a, -1, out=out)), shape, "torch.log_softmax(x, -1, out=out)"


def setup_softmax_bwd(e, n):
    shape = nn_rows_shape(n)
    g, y = e.uniform(*shape), e.torch.softmax(e.uniform(*shape), -1)
    aten = e.torch.ops.aten
    return ((lambda: aten._softmax_backward_data(g, y, -1, e.dtype)), shape,
            "aten._softmax_backward_data(g, y, -1)")


def setup_rms_norm(e, n):
    shape = nn_rows_shape(n)
    a = e.uniform(*shape)
    w = e.torch.ones(shape[1], device=e.device, dtype=e.dtype)
    f = e.torch.nn.functional
    return (lambda: f.rms_norm(a, shape[1:], w, 1e-5)), shape, "F.rms_norm(x, [4096], w, 1e-5)"


def setup_act(name):
    def setup(e, n):
        a = e.uniform(n)
        f = e.torch.nn.functional
        call = {"gelu_tanh": lambda: f.gelu(a, approximate="tanh"), "silu": lambda: f.silu(a),
                "relu": lambda: e.torch.relu(a)}[name]
        return call, [n], "F.%s(x)" % name
    return setup


def setup_mse(e, n):
    a, b = e.uniform(n), e.uniform(n)
    f = e.torch.nn.functional
    return (lambda: f.mse_loss(a, b)), [n], "F.mse_loss(x, y)"


def bytes_2in(n, esz):  # both operands read once
    return 2 * n * esz


def setup_gelu_bwd(e, n):
    x, g = e.uniform(n), e.uniform(n)
    aten = e.torch.ops.aten
    return (lambda: aten.gelu_backward(g, x)), [n], "aten.gelu_backward(g, x)"


def setup_ce_bwd(e, n):
    shape = nn_rows_shape(n)
    a = e.uniform(*shape).requires_grad_(True)
    t = e.torch.randint(0, shape[1], (shape[0],), generator=e.gen, device=e.device)
    loss = e.torch.nn.functional.cross_entropy(a, t)
    one = e.torch.ones((), device=e.device, dtype=e.dtype)
    return ((lambda: e.torch.autograd.grad(loss, a, one, retain_graph=True)), shape,
            "autograd.grad(F.cross_entropy(x, t), x) (log_softmax_backward + nll_loss_backward)")


def setup_layer_norm_bwd(e, n):
    # kiln's nn.layer_norm_bwd: grad_x, grad_weight and grad_bias from the forward's mean, rstd
    shape = nn_rows_shape(n)
    x, g = e.uniform(*shape), e.uniform(*shape)
    w = e.torch.ones(shape[1], device=e.device, dtype=e.dtype)
    b = e.torch.zeros(shape[1], device=e.device, dtype=e.dtype)
    aten = e.torch.ops.aten
    _, mean, rstd = aten.native_layer_norm(x, shape[1:], w, b, 1e-5)
    return ((lambda: aten.native_layer_norm_backward(g, x, shape[1:], mean, rstd, w, b,
                                                     [True, True, True])), shape,
            "aten.native_layer_norm_backward(g, x, [4096], mean, rstd, w, b)")


def setup_histc(e, n):
    a = e.uniform(n)
    return (lambda: e.torch.histc(a, 1000, -2, 2)), [n], "torch.histc(x, 1000, -2, 2)"


def setup_bincount(e, n):
    # kiln's setup_bincount: n i32 values in [0, 4096)
    a = e.torch.randint(0, 4096, (n,), generator=e.gen, device=e.device, dtype=e.torch.int32)
    return ((lambda: e.torch.bincount(a, minlength=4096)), [n],
            "torch.bincount(x, minlength=4096) (i32)")


def bytes_bincount(n, esz):
    return 4.0 * n


def quantile_shape(n):
    # kiln's setup_quantile: rows of 1024 of min(n, 2^24) elements (torch.quantile's limit)
    m = min(n, 1 << 24)
    length = min(m, 1024)
    return [m // length, length]


def setup_quantile(e, n):
    shape = quantile_shape(n)
    a = e.uniform(*shape)
    q = e.torch.tensor([0.25, 0.5, 0.75], device=e.device, dtype=e.dtype)
    return (lambda: e.torch.quantile(a, q, dim=-1)), shape, "torch.quantile(x, [.25,.5,.75], -1)"


def bytes_quantile(n, esz):
    return float(min(n, 1 << 24)) * esz


def setup_cov(e, n):
    v = min(n, 256)
    a = e.uniform(v, n // v)
    return (lambda: e.torch.cov(a)), [v, n // v], "torch.cov(x) (rows = variables)"


def flops_cov(n):
    v = min(n, 256)
    return float(v) * v * (n // v)
# linalg: n is the square matrix's element count (kiln's square_dim), as blas.gemm; the
# batched row is n / 1024 matrices of 32 x 32. Flops as kiln's rows: LU 2/3 d^3, Cholesky
# 1/3 d^3, solve LU + 64 d^2 (16 right-hand sides), inverse 2 d^3.
def flops_lu(n):
    d = square_dim(n)
    return 2.0 / 3.0 * d ** 3


def setup_lu(e, n):
    d = square_dim(n)
    a = e.uniform(d, d)
    return (lambda: e.torch.linalg.lu_factor(a)), [d, d], "torch.linalg.lu_factor(a)"


def setup_cholesky(e, n):
    d = square_dim(n)
    a = e.uniform(d, d)
    a = (a + a.T) * 0.5 + (2.0 * d + 1.0) * e.torch.eye(d, device=e.device, dtype=e.dtype)
    return (lambda: e.torch.linalg.cholesky(a)), [d, d], "torch.linalg.cholesky(a)"


def setup_solve(e, n):
    d = square_dim(n)
    a, b = e.uniform(d, d), e.uniform(d, 16)
    return (lambda: e.torch.linalg.solve(a, b)), [d, d], "torch.linalg.solve(a, b) (16 rhs)"


def setup_inv(e, n):
    d = square_dim(n)
    a = e.uniform(d, d)
    return (lambda: e.torch.linalg.inv(a)), [d, d], "torch.linalg.inv(a)"


def setup_lu_batched(e, n):
    b = max(n // 1024, 1)
    a = e.uniform(b, 32, 32)
    return (lambda: e.torch.linalg.lu_factor(a)), [b, 32, 32], "torch.linalg.lu_factor(a) (batched)"


# complex linalg rows (kiln's linalg.clu, ccholesky, csolve, cinv): the real setups on c64/c128
# data; ccholesky a Hermitian matrix. Flops 4 times the real counts.
def setup_ccholesky(e, n):
    d = square_dim(n)
    a = e.uniform(d, d)
    a = (a + a.mH) * 0.5 + (2.0 * d + 1.0) * e.torch.eye(d, device=e.device, dtype=e.dtype)
    return (lambda: e.torch.linalg.cholesky(a)), [d, d], "torch.linalg.cholesky(a) (Hermitian)"


# sort family (tools/bench_sort.c): rows of 8192, k = 100 of n, k = 16 per row, unique of n
# i32 in [0, 10^5) with counts, n queries into n / 16 values (their sort included).
def sort_rows_shape(n):
    length = min(n, 8192)
    return [n // length, length]


def setup_sort(e, n):
    a = e.uniform(n)
    return (lambda: e.torch.sort(a)), [n], "torch.sort(x)"


def setup_argsort(e, n):
    a = e.uniform(n)
    return (lambda: e.torch.argsort(a, stable=True)), [n], "torch.argsort(x, stable=True)"


def setup_sort_rows(e, n):
    shape = sort_rows_shape(n)
    a = e.uniform(*shape)
    return (lambda: e.torch.sort(a, dim=-1)), shape, "torch.sort(x, dim=-1)"


def setup_topk(e, n):
    a = e.uniform(n)
    k = min(n, 100)
    return (lambda: e.torch.topk(a, k)), [n], "torch.topk(x, 100)"


def setup_topk_rows(e, n):
    shape = sort_rows_shape(n)
    a = e.uniform(*shape)
    k = min(shape[1], 16)
    return (lambda: e.torch.topk(a, k, dim=-1)), shape, "torch.topk(x, 16, dim=-1)"


def setup_unique(e, n):
    a = e.torch.randint(0, 100000, (n,), generator=e.gen, device=e.device, dtype=e.torch.int32)
    return ((lambda: e.torch.unique(a, return_counts=True)), [n],
            "torch.unique(x, return_counts=True) (i32)")


def setup_searchsorted(e, n):
    s, q = e.uniform(max(n // 16, 1)), e.uniform(n)
    return ((lambda: e.torch.searchsorted(e.torch.sort(s).values, q)), [n],
            "torch.searchsorted(torch.sort(s).values, q)")


# linalg_spectral: reduced QR (flops 8/3 d^3 as kiln's row), eigh with vectors of a symmetric
# matrix, reduced SVD with vectors (times only, as kiln's rows).
def setup_qr(e, n):
    d = square_dim(n)
    a = e.uniform(d, d)
    return (lambda: e.torch.linalg.qr(a)), [d, d], "torch.linalg.qr(a) (reduced)"


def setup_eigh(e, n):
    d = square_dim(n)
    a = e.uniform(d, d)
    a = (a + a.T) * 0.5
    return (lambda: e.torch.linalg.eigh(a)), [d, d], "torch.linalg.eigh(a)"


def setup_svd(e, n):
    d = square_dim(n)
    a = e.uniform(d, d)
    return (lambda: e.torch.linalg.svd(a, full_matrices=False)), [d, d], \
        "torch.linalg.svd(a, full_matrices=False)"


def conv_batch(n):
    # kiln's conv_batch: x [B, 64, 56, 56] with B = max(1, n / 2^20) (64 at 2^26)
    return max(n >> 20, 1)


def setup_conv2d(e, n):
    b = conv_batch(n)
    x, w = e.uniform(b, 64, 56, 56), e.uniform(64, 64, 3, 3)
    f = e.torch.nn.functional
    return ((lambda: f.conv2d(x, w, padding=1)), [b, 64, 56, 56],
            "F.conv2d(x, w, padding=1) (cuDNN, TF32 off)")


def flops_conv2d(n):
    return 2.0 * conv_batch(n) * 64 * 64 * 9 * 56 * 56


def setup_conv2d_bwd(e, n):
    # kiln's nn.conv2d_bwd: grad_x and grad_w of conv2d(x, w, padding=1) from a given grad
    b = conv_batch(n)
    x, w, g = e.uniform(b, 64, 56, 56), e.uniform(64, 64, 3, 3), e.uniform(b, 64, 56, 56)
    ops = e.torch.ops.aten

    def run():
        return ops.convolution_backward(g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                        [True, True, False])
    return run, [b, 64, 56, 56], "aten.convolution_backward (grad_x, grad_w; cuDNN, TF32 off)"


def flops_conv2d_bwd(n):
    return 2.0 * flops_conv2d(n)


def setup_max_pool2d(e, n):
    b = conv_batch(n)
    x = e.uniform(b, 64, 56, 56)
    f = e.torch.nn.functional
    return (lambda: f.max_pool2d(x, 2)), [b, 64, 56, 56], "F.max_pool2d(x, 2)"


def setup_max_pool2d_bwd(e, n):
    # kiln's nn.max_pool2d_bwd: the gradient through the indices of one forward
    b = conv_batch(n)
    x = e.uniform(b, 64, 56, 56)
    t = e.torch
    y, idx = t.nn.functional.max_pool2d(x, 2, return_indices=True)
    g = e.uniform(b, 64, 28, 28)
    return ((lambda: t.ops.aten.max_pool2d_with_indices_backward(g, x, [2, 2], [2, 2], [0, 0],
                                                                 [1, 1], False, idx)),
            [b, 64, 56, 56], "aten.max_pool2d_with_indices_backward(g, x, 2, ...)")


def bytes_max_pool2d_bwd(n, esz):  # g and the i64 indices read, the input gradient written
    v = conv_batch(n) * 64 * 56 * 56
    return v * esz + v / 4 * (esz + 8)


def bytes_max_pool2d(n, esz):  # the input read once, a quarter of it written
    return conv_batch(n) * 64 * 56 * 56 * 1.25 * esz


def setup_adam(e, n):
    # torch.optim.Adam(fused=True)'s kernel on one tensor of n parameters (step 10)
    p, g = e.uniform(n), e.uniform(n)
    m, v = e.torch.zeros_like(p), e.torch.zeros_like(p)
    step = e.torch.tensor(10.0, device=e.device, dtype=e.torch.float32)
    def run():
        e.torch._fused_adam_([p], [g], [m], [v], [], [step], lr=1e-3, beta1=0.9, beta2=0.999,
                             weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    try:
        run()
        return run, [n], "torch._fused_adam_ (Adam(fused=True)), one tensor"
    except (AttributeError, RuntimeError, NotImplementedError):
        # A build or device without the fused kernel: the foreach optimizer's step.
        p.grad = g
        opt = e.torch.optim.Adam([p], lr=1e-3, foreach=True)
        return opt.step, [n], "torch.optim.Adam(foreach=True).step() (no fused kernel here)"


def bytes_adam(n, esz):  # p, g, m, v read; p, m, v written
    return 7.0 * n * esz


def setup_dropout(e, n):
    a = e.uniform(n)
    f = e.torch.nn.functional
    return (lambda: f.dropout(a, 0.1, training=True)), [n], "F.dropout(x, 0.1) (also writes a mask)"


def batch_norm_shape(n):
    # kiln's setup_batch_norm: [N, 64, S], S = 3136 (56 x 56) once n allows
    c = 64
    s = min(max(n // c, 1), 3136)
    return [max(n // (c * s), 1), c, s]


def setup_batch_norm(e, n):
    shape = batch_norm_shape(n)
    a = e.uniform(*shape)
    w = e.torch.ones(64, device=e.device, dtype=e.dtype)
    b = e.torch.zeros(64, device=e.device, dtype=e.dtype)
    rm = e.torch.zeros(64, device=e.device, dtype=e.dtype)
    rv = e.torch.ones(64, device=e.device, dtype=e.dtype)
    f = e.torch.nn.functional
    return ((lambda: f.batch_norm(a, rm, rv, w, b, True, 0.1, 1e-5)), shape,
            "F.batch_norm(x, rm, rv, w, b, training=True)")


def attention_tokens(n):
    # kiln's setup_attention: batch 8, 16 heads, head 128, n / 16384 tokens (4096 at 2^26)
    return max(n // 16384, 1)


def setup_attention(e, n):
    shape = [8, 16, attention_tokens(n), 128]
    q, k, v = e.uniform(*shape), e.uniform(*shape), e.uniform(*shape)
    f = e.torch.nn.functional
    return ((lambda: f.scaled_dot_product_attention(q, k, v)), shape,
            "F.scaled_dot_product_attention(q, k, v) (TF32 off)")


def setup_attention_causal(e, n):
    shape = [8, 16, attention_tokens(n), 128]
    q, k, v = e.uniform(*shape), e.uniform(*shape), e.uniform(*shape)
    f = e.torch.nn.functional
    return ((lambda: f.scaled_dot_product_attention(q, k, v, is_causal=True)), shape,
            "F.scaled_dot_product_attention(q, k, v, is_causal=True) (TF32 off)")


def flops_attention(n):
    t = attention_tokens(n)
    return 4.0 * 8 * 16 * t * t * 128


def setup_attention_backward(e, n):
    # kiln's nn.attn_backward: the backward pass alone, from a forward made once
    shape = [8, 16, attention_tokens(n), 128]
    t = e.torch
    q, k, v = (e.uniform(*shape).requires_grad_() for _ in range(3))
    g = e.uniform(*shape)
    out = t.nn.functional.scaled_dot_product_attention(q, k, v)
    return ((lambda: t.autograd.grad(out, (q, k, v), g, retain_graph=True)), shape,
            "autograd.grad(F.scaled_dot_product_attention(q, k, v), (q, k, v), g) (TF32 off)")


def setup_attention_backward_causal(e, n):
    # kiln's nn.attn_backward_causal: the same from a causal forward
    shape = [8, 16, attention_tokens(n), 128]
    t = e.torch
    q, k, v = (e.uniform(*shape).requires_grad_() for _ in range(3))
    g = e.uniform(*shape)
    out = t.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return ((lambda: t.autograd.grad(out, (q, k, v), g, retain_graph=True)), shape,
            "autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True), ...) "
            "(TF32 off)")


def flops_attention_backward(n):
    return 2.5 * flops_attention(n)



def bytes_4in(n, esz):  # expr.sum8: four inputs read once (tools/bench_expr.c)
    return 4.0 * n * esz


def compiled(e, fn, args, text):
    """fn(*args) eager, or under torch.compile with --compile (the first call compiles, untimed:
    measure() warms up twice). Errors of torch.compile surface at that first call."""
    if not e.compile:
        return (lambda: fn(*args)), text + " (eager)"
    cf = e.torch.compile(fn, dynamic=False)
    return (lambda: cf(*args)), text + " (torch.compile)"


def setup_demo_chain(e, n):
    # kiln's expr.demo_chain: the demo's chain with its f64 round trip, f32 only
    if e.dtype_name != "f32":
        raise ValueError("expr.demo_chain is f32 only, as kiln's row")
    t = e.torch
    x = e.uniform(n)

    def chain(x):
        y = t.sigmoid(2 * x + 1) * t.cos(x) - t.relu(x)
        return y.double().float()
    call, text = compiled(e, chain, (x,), "(sigmoid(2x+1)*cos(x)-relu(x)).double().float()")
    return call, [n], text


def setup_sum8(e, n):
    t = e.torch
    a, b, c, d = e.uniform(n), e.uniform(n), e.uniform(n), e.uniform(n)

    def sum8(a, b, c, d):
        return t.sum(a * b + c * d - (a - c) * 0.5 + t.maximum(b, d))
    call, text = compiled(e, sum8, (a, b, c, d), "sum(a*b + c*d - (a-c)*0.5 + maximum(b, d))")
    return call, [n], text


# kiln's user.* rows (tools/bench_cases.c): caller-written kernels through kiln's elementwise,
# reduction and scan machinery; the peer is the PyTorch op that computes the same.
def setup_user_axpy(e, n):
    t = e.torch
    x, y = e.uniform(n), e.uniform(n)

    def axpy(x, y):
        return t.add(y, x, alpha=0.5, out=y) if not e.compile else y.add_(x, alpha=0.5)
    call, text = compiled(e, axpy, (x, y), "y = 0.5*x + y in place")
    return call, [n], text


def setup_user_sum(e, n):
    t = e.torch
    x = e.uniform(n)
    call, text = compiled(e, lambda x: t.sum(x), (x,), "torch.sum(x) (x 1-D)")
    return call, [n], text


def setup_user_cumsum(e, n):
    t = e.torch
    x = e.uniform(n)
    call, text = compiled(e, lambda x: t.cumsum(x, dim=0), (x,), "torch.cumsum(x, dim=0) (x 1-D)")
    return call, [n], text


# (kiln case name, setup(env, n) -> (call, shape, op text), bytes(n, esz) or None, flops(n) or None)
CASES = [
    ("copy.kiln_copy", setup_copy, bytes_1in_1out, None),
    ("unary.neg", setup_neg, bytes_1in_1out, None),
    ("unary.exp", setup_exp, bytes_1in_1out, None),
    ("binary.add", setup_add, bytes_2in_1out, None),
    ("binary.mul", setup_mul, bytes_2in_1out, None),
    ("binary.add_row_bcast", setup_add_row_bcast, bytes_bcast, None),
    ("binary.add_col_bcast", setup_add_col_bcast, bytes_bcast, None),
    ("binary.mul_scalar", setup_mul_scalar, bytes_1in_1out, None),
    ("where", setup_where, bytes_where, None),
    ("cast.to_i32", setup_cast, bytes_cast, None),
    ("reduce.sum_all", setup_sum_all, bytes_read, None),
    ("reduce.sum_rows", lambda e, n: setup_reduce(e, n, False), bytes_read, None),
    ("reduce.sum_cols", lambda e, n: setup_reduce(e, n, True), bytes_read, None),
    ("scan.cumsum_rows", lambda e, n: setup_scan(e, n, False), bytes_1in_1out, None),
    ("scan.cumsum_cols", lambda e, n: setup_scan(e, n, True), bytes_1in_1out, None),
    ("scan.cumsum_all", setup_scan_all, bytes_1in_1out, None),
    ("blas.gemm", setup_gemm, None, flops_gemm),
    ("blas.hgemm", setup_gemm, None, flops_gemm),
    ("blas.cgemm", setup_gemm, None, lambda n: 4.0 * flops_gemm(n)),
    ("fft.c2c", setup_fft, bytes_fft, flops_fft),
    ("layout.transpose", setup_transpose, bytes_1in_1out, None),
    ("index.gather_rows", setup_gather_rows, bytes_gather, None),
    ("random.normal", setup_normal, bytes_write, None),
    ("nn.softmax", setup_softmax, bytes_1in_1out, None),
    ("nn.layer_norm", setup_layer_norm, bytes_1in_1out, None),
    ("nn.gelu", setup_gelu, bytes_1in_1out, None),
    ("nn.mse", setup_mse, bytes_2in, None),
    ("nn.cross_entropy", setup_cross_entropy, bytes_ce, None),
    ("nn.log_softmax", setup_log_softmax, bytes_1in_1out, None),
    ("nn.softmax_bwd", setup_softmax_bwd, bytes_2in_1out, None),
    ("nn.rms_norm", setup_rms_norm, bytes_1in_1out, None),
    ("nn.gelu_tanh", setup_act("gelu_tanh"), bytes_1in_1out, None),
    ("nn.silu", setup_act("silu"), bytes_1in_1out, None),
    ("nn.relu", setup_act("relu"), bytes_1in_1out, None),
    ("nn.gelu_bwd", setup_gelu_bwd, bytes_2in_1out, None),
    ("nn.ce_bwd", setup_ce_bwd, bytes_1in_1out, None),
    ("nn.layer_norm_bwd", setup_layer_norm_bwd, bytes_2in_1out, None),
    ("stats.histc", setup_histc, bytes_read, None),
    ("stats.bincount", setup_bincount, bytes_bincount, None),
    ("stats.quantile", setup_quantile, bytes_quantile, None),
    ("stats.cov", setup_cov, None, flops_cov),
    ("linalg.lu", setup_lu, None, flops_lu),
    ("linalg.cholesky", setup_cholesky, None, lambda n: 0.5 * flops_lu(n)),
    ("linalg.solve", setup_solve, None, lambda n: flops_lu(n) + 64.0 * square_dim(n) ** 2),
    ("linalg.inv", setup_inv, None, lambda n: 3.0 * flops_lu(n)),
    ("linalg.lu_batched", setup_lu_batched, None, lambda n: max(n // 1024, 1) * 2.0 / 3.0 * 32 ** 3),
    ("linalg.clu", setup_lu, None, lambda n: 4.0 * flops_lu(n)),
    ("linalg.ccholesky", setup_ccholesky, None, lambda n: 2.0 * flops_lu(n)),
    ("linalg.csolve", setup_solve, None, lambda n: 4.0 * (flops_lu(n) + 64.0 * square_dim(n) ** 2)),
    ("linalg.cinv", setup_inv, None, lambda n: 12.0 * flops_lu(n)),
    ("sort.sort", setup_sort, lambda n, esz: 2.0 * n * esz, None),
    ("sort.argsort", setup_argsort, lambda n, esz: n * (esz + 8.0), None),
    ("sort.sort_rows", setup_sort_rows, lambda n, esz: 2.0 * n * esz, None),
    ("sort.topk", setup_topk, bytes_read, None),
    ("sort.topk_rows", setup_topk_rows, bytes_read, None),
    ("sort.unique", setup_unique, lambda n, esz: 4.0 * n, None),
    ("sort.searchsorted", setup_searchsorted, lambda n, esz: n * (esz + 8.0), None),
    ("linalg.qr", setup_qr, None, lambda n: 8.0 / 3.0 * square_dim(n) ** 3),
    ("linalg.cqr", setup_qr, None, lambda n: 32.0 / 3.0 * square_dim(n) ** 3),
    ("linalg.eigh", setup_eigh, None, None),
    ("linalg.svd", setup_svd, None, None),
    ("nn.conv2d", setup_conv2d, None, flops_conv2d),
    ("nn.conv2d_bwd", setup_conv2d_bwd, None, flops_conv2d_bwd),
    ("nn.max_pool2d", setup_max_pool2d, bytes_max_pool2d, None),
    ("nn.max_pool2d_bwd", setup_max_pool2d_bwd, bytes_max_pool2d_bwd, None),
    ("nn.adam", setup_adam, bytes_adam, None),
    ("nn.dropout", setup_dropout, bytes_1in_1out, None),
    ("nn.batch_norm", setup_batch_norm, bytes_1in_1out, None),
    ("nn.attention", setup_attention, None, flops_attention),
    ("nn.attention_causal", setup_attention_causal, None, flops_attention),
    ("nn.attn_backward", setup_attention_backward, None, flops_attention_backward),
    ("nn.attn_backward_causal", setup_attention_backward_causal, None, flops_attention_backward),
    ("expr.demo_chain", setup_demo_chain, bytes_1in_1out, None),
    ("expr.sum8", setup_sum8, bytes_4in, None),
    ("user.axpy", setup_user_axpy, bytes_2in_1out, None),
    ("user.sum", setup_user_sum, bytes_read, None),
    ("user.cumsum", setup_user_cumsum, bytes_1in_1out, None),
]
# The cases --compile runs (their setups build a function torch.compile can take).
COMPILE_CASES = ("expr.", "user.")
COPY_CASE = "copy.kiln_copy"


# --- timing -------------------------------------------------------------------------------

class Timer:
    """Device and wall times of one call; CUDA events behind a GPU sleep, or the wall clock."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.startswith("cuda")
        self.sleep = self.cuda and hasattr(torch.cuda, "_sleep")
        self.cycles_per_ms = None
        if self.sleep:
            self.cycles_per_ms = self._calibrate()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def _calibrate(self):
        torch = self.torch
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
        best = None
        for _ in range(3):
            s.record()
            torch.cuda._sleep(1_000_000)
            e.record()
            e.synchronize()
            ms = s.elapsed_time(e)
            best = ms if best is None else min(best, ms)
        return 1_000_000 / best if best and best > 0 else 1.0e6

    def wall_ms(self, fn):
        self.sync()
        t0 = time.perf_counter()
        fn()
        self.sync()
        return (time.perf_counter() - t0) * 1e3

    def enqueue_ms(self, fn):
        """Host time to issue fn without waiting for it (then waits, untimed)."""
        self.sync()
        t0 = time.perf_counter()
        fn()
        t = (time.perf_counter() - t0) * 1e3
        self.sync()
        return t

    def device_ms(self, fn, sleep_ms):
        """(device ms, host ms spent issuing the events and fn, whether the sleep hid it)."""
        if not self.cuda:
            t = self.wall_ms(fn)
            return t, t, False
        torch = self.torch
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.sync()
        if self.sleep:
            torch.cuda._sleep(int(sleep_ms * self.cycles_per_ms))
        t0 = time.perf_counter()
        s.record()
        fn()
        e.record()
        enq = (time.perf_counter() - t0) * 1e3
        e.synchronize()
        return s.elapsed_time(e), enq, self.sleep and enq < sleep_ms


def spread_pct(sorted_vals):
    """(p90 - p10) / median, with kiln's indices (tools/cmd_bench.c)."""
    n = len(sorted_vals)
    med = sorted_vals[n // 2]
    hi = sorted_vals[min((n * 9) // 10, n - 1)]
    return (hi - sorted_vals[n // 10]) / med * 100.0 if med > 0 else 0.0


def measure(timer, fn, fixed_reps):
    for _ in range(WARMUP):
        fn()
    timer.sync()
    # Long enough that the launches are queued behind the sleep; four times the issue time.
    enq0 = min(timer.enqueue_ms(fn) for _ in range(3))
    sleep_ms = max(MIN_SLEEP_MS, 4.0 * enq0)
    dev, wall, enq, hidden = [], [], [], 0
    cap = fixed_reps or MAX_REPS
    spent = 0.0
    while len(wall) < cap and (fixed_reps or len(wall) < MIN_REPS or spent < BUDGET_S):
        w = timer.wall_ms(fn)
        d, q, h = timer.device_ms(fn, sleep_ms)
        wall.append(w)
        dev.append(d)
        enq.append(q)
        hidden += bool(h)
        spent += w * 1e-3
    dev.sort()
    wall.sort()
    enq.sort()
    n = len(dev)
    return {"reps": n, "device_ms": dev[n // 2], "wall_ms": wall[n // 2],
            "spread_pct": spread_pct(dev), "enqueue_ms": enq[n // 2],
            "launch_hidden_pct": 100.0 * hidden / n if timer.sleep else None}


def dispatch_overhead(torch, device, timer):
    """us per op of 500 chained adds of one-element tensors, median of 5 (kiln's method)."""
    a = torch.zeros(1, device=device)
    b = torch.zeros(1, device=device)
    chain = 500

    def run():
        for _ in range(chain):
            torch.add(a, b, out=b)

    run()
    times = []
    for _ in range(5):
        timer.sync()
        t0 = time.perf_counter()
        run()
        timer.sync()
        times.append((time.perf_counter() - t0) / chain * 1e6)
    times.sort()
    return times[2]


# --- time to first result in a new process ------------------------------------------------

def first_result_child(device):
    t0 = time.perf_counter()
    import torch  # noqa: E402 (timed on purpose)
    t1 = time.perf_counter()
    x = torch.full((1024,), 1.5, device=device)
    y = torch.exp(x).to(torch.int32).cpu()
    t2 = time.perf_counter()
    if int(y[0]) != 4:
        print("first-result child: wrong result", file=sys.stderr)
        return 1
    print(json.dumps({"import_ms": (t1 - t0) * 1e3, "after_import_ms": (t2 - t1) * 1e3}))
    return 0


def first_result(device, runs=5):
    total, after = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--first-result-child",
                            device], capture_output=True, text=True)
        t = (time.perf_counter() - t0) * 1e3
        if p.returncode != 0:
            err = (p.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"peers_torch.py: first-result child failed: {err}", file=sys.stderr)
            continue
        total.append(t)
        after.append(json.loads(p.stdout.strip().splitlines()[-1])["after_import_ms"])
    if not total:
        return None
    total.sort()
    after.sort()
    return {"new process: python, import torch, exp + cast": total[len(total) // 2],
            "after import torch: device start, exp + cast": after[len(after) // 2]}


# --- environment description --------------------------------------------------------------

def nvidia_driver():
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip().splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def describe_device(torch, device):
    if not device.startswith("cuda"):
        return {"name": platform.processor() or platform.machine(), "type": "cpu",
                "threads": torch.get_num_threads()}
    idx = torch.device(device).index
    idx = torch.cuda.current_device() if idx is None else idx
    p = torch.cuda.get_device_properties(idx)
    return {"name": p.name, "type": "cuda", "capability": f"{p.major}.{p.minor}",
            "multiprocessors": p.multi_processor_count, "memory_bytes": p.total_memory,
            "driver": nvidia_driver()}


def configure_matmul(torch):
    """TF32 off everywhere: FP32 GEMMs are true FP32, as CLBlast's are."""
    for fn in (lambda: torch.set_float32_matmul_precision("highest"),
               lambda: setattr(torch.backends.cuda.matmul, "allow_tf32", False),
               lambda: setattr(torch.backends.cudnn, "allow_tf32", False)):
        try:
            fn()
        except Exception:  # an older torch without the setting, or a newer one that moved it
            pass
    settings = {}
    for key, get in (("float32_matmul_precision", lambda: torch.get_float32_matmul_precision()),
                     ("matmul_allow_tf32", lambda: bool(torch.backends.cuda.matmul.allow_tf32))):
        try:
            settings[key] = get()
        except Exception:
            settings[key] = None
    return settings


# --- main ---------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="peers_torch.py", description=__doc__.split("\n\n")[0],
        epilog="See the module docstring (head -60 bench/peers_torch.py) for the JSON format.")
    ap.add_argument("--out", help="write the JSON here ('-': stdout, and no table)")
    ap.add_argument("--sizes", default=DEFAULT_SIZES,
                    help=f"element counts, comma separated; 2^N, Nk, NM (default {DEFAULT_SIZES})")
    ap.add_argument("--dtype", default="f32,f64", help="f32, f64 or both (default f32,f64)")
    ap.add_argument("--filter", default=None, help="only cases whose name contains SUBSTR (comma-separated: any of them)")
    ap.add_argument("--reps", type=int, default=0, help="timed runs per point (default adaptive)")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    ap.add_argument("--no-startup", action="store_true", help="skip the dispatch overhead")
    ap.add_argument("--first-result", action="store_true",
                    help="also time a new process's first result (5 processes)")
    ap.add_argument("--compile", action="store_true",
                    help="time the expr.* and user.* cases under torch.compile instead of eagerly")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    args = ap.parse_args(argv)
    try:
        args.sizes = parse_sizes(args.sizes)
        args.dtype = parse_dtypes(args.dtype)
    except ValueError as e:
        ap.error(str(e))
    if args.reps < 0 or args.reps > 100000:
        ap.error("--reps needs a positive count")
    if not (args.device == "cpu" or args.device == "cuda" or args.device.startswith("cuda:")):
        ap.error("--device is cuda, cuda:N or cpu")
    return args


def import_torch(device):
    """torch, or None after saying why (the caller exits 2)."""
    try:
        import torch
    except ImportError as e:
        print(f"peers_torch.py: PyTorch is not installed for {sys.executable} ({e}); "
              "nothing measured", file=sys.stderr)
        return None
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            print(f"peers_torch.py: torch {torch.__version__} sees no CUDA device "
                  f"(built with CUDA {torch.version.cuda}); nothing measured "
                  "(--device cpu runs a smoke test on the host)", file=sys.stderr)
            return None
        idx = torch.device(device).index
        if idx is not None and idx >= torch.cuda.device_count():
            print(f"peers_torch.py: no {device} ({torch.cuda.device_count()} CUDA devices)",
                  file=sys.stderr)
            return None
    return torch


def progress(done, total):
    if not sys.stderr.isatty():
        return
    w = 40
    filled = done * w // total if total else w
    sys.stderr.write(f"\r[{'#' * filled}{' ' * (w - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\r" + " " * (w + 20) + "\r")
    sys.stderr.flush()


def compile_probe(torch, device):
    """None if torch.compile compiles and runs a small function on the device, else why not."""
    try:
        x = torch.ones(1024, device=device)
        y = torch.compile(lambda v: torch.sin(v) * 2 + 1, dynamic=False)(x)
        if abs(float(y[0]) - (math.sin(1.0) * 2 + 1)) > 1e-5:
            return f"wrong result {float(y[0])}"
    except Exception as e:  # no triton, no C compiler, an inductor bug: say so and go on
        msg = str(e).strip().splitlines()
        return (msg[0] if msg else type(e).__name__)[:400]
    return None


def run_cases(torch, args, timer):
    cases = [c for c in CASES
             if not args.filter or any(f and f in c[0] for f in args.filter.split(","))]
    if args.compile:
        cases = [c for c in cases if c[0].startswith(COMPILE_CASES)]
    copy_case = next(c for c in CASES if c[0] == COPY_CASE)
    copy_gbps = {}  # (dtype, n) -> GB/s of PyTorch's copy, measured once
    results, skipped = [], []
    total, done = len(cases) * len(args.dtype) * len(args.sizes), 0

    def point(case, dtype, n):
        name, setup, nbytes, flops = case
        env = Env(torch, args.device, dtype)
        env.compile = args.compile and name.startswith(COMPILE_CASES)
        fn, shape, op = setup(env, n)
        r = measure(timer, fn, args.reps)
        del fn
        esz = DTYPE_SIZE[dtype]
        t = r["device_ms"] if r["device_ms"] > 0 else r["wall_ms"]
        res = {"case": name, "dtype": dtype, "n": n, "shape": shape, "op": op}
        res.update(r)
        res["gbps"] = nbytes(n, esz) / (t * 1e-3) * 1e-9 if nbytes and t > 0 else None
        res["gflops"] = flops(n) / (t * 1e-3) * 1e-9 if flops and t > 0 else None
        return res

    def release():
        if timer.cuda:
            torch.cuda.empty_cache()

    for case in cases:
        for dtype in args.dtype:
            if dtype in INT_DTYPES and not case[0].startswith("sort."):
                done += len(args.sizes)
                continue
            for n in args.sizes:
                try:
                    res = point(case, dtype, n)
                except Exception as e:  # out of memory, or an op this torch lacks: go on
                    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    print(f"peers_torch.py: {case[0]} {dtype} n={n}: {msg}", file=sys.stderr)
                    skipped.append({"case": case[0], "dtype": dtype, "n": n, "error": msg})
                    res = None
                release()
                done += 1
                progress(done, total)
                if res is None:
                    continue
                if case[0] == COPY_CASE:
                    copy_gbps[(dtype, n)] = res["gbps"]
                if res["gbps"] is not None:
                    if (dtype, n) not in copy_gbps:  # copy filtered out: measure it anyway
                        try:
                            copy_gbps[(dtype, n)] = point(copy_case, dtype, n)["gbps"]
                        except Exception:
                            copy_gbps[(dtype, n)] = None
                        release()
                    cg = copy_gbps[(dtype, n)]
                    res["copy_gbps"] = cg
                    res["ratio_to_copy"] = res["gbps"] / cg if cg else None
                else:
                    res["copy_gbps"] = res["ratio_to_copy"] = None
                results.append(res)
    return results, skipped


def dumps(doc):
    """JSON with one line per result, like `kiln bench --json`."""
    parts = []
    for k, v in doc.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            body = ",\n".join("    " + json.dumps(x) for x in v)
            parts.append(f"  {json.dumps(k)}: [\n{body}\n  ]")
        else:
            parts.append(f"  {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def print_table(doc, out):
    dev = doc["device"]
    print(f"PyTorch {doc['torch_version']} (CUDA {doc['cuda_version']}) on {dev['name']}", file=out)
    print(f"device time: {doc['settings']['timing']}; wall: median per call including launch "
          "and wait\n", file=out)
    print(f"{'case':<24} {'dtype':<5} {'n':>6} {'device ms':>11} {'wall ms':>11} {'spread':>7} "
          f"{'GB/s':>9} {'copy GB/s':>9} {'ratio':>6} {'GFLOP/s':>9}", file=out)
    f = lambda v, spec: f"{'-':>9}" if v is None else format(v, spec)
    for r in doc["results"]:
        ratio = "-" if r["ratio_to_copy"] is None else f"{100 * r['ratio_to_copy']:.0f}%"
        print(f"{r['case']:<24} {r['dtype']:<5} {size_label(r['n']):>6} {r['device_ms']:11.4f} "
              f"{r['wall_ms']:11.4f} {r['spread_pct']:6.1f}% {f(r['gbps'], '9.2f')} "
              f"{f(r['copy_gbps'], '9.2f')} {ratio:>6} {f(r['gflops'], '9.2f')}", file=out)
    if "dispatch_us_per_op" in doc:
        print(f"\ndispatch overhead: {doc['dispatch_us_per_op']:.2f} us per op "
              "(chain of tiny adds, wall clock)", file=out)
    for k, v in (doc.get("first_result_ms") or {}).items():
        print(f"first result, {k}: {v:.1f} ms", file=out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--first-result-child"]:
        return first_result_child(argv[1] if len(argv) > 1 else "cuda")
    args = parse_args(argv)
    if args.list:
        for name, *_ in CASES:
            print(name)
        return 0
    torch = import_torch(args.device)
    if torch is None:
        return 2
    matmul = configure_matmul(torch)
    if args.device.startswith("cuda") and torch.device(args.device).index is not None:
        torch.cuda.set_device(torch.device(args.device).index)
    timer = Timer(torch, args.device)
    doc = {
        "format": FORMAT,
        "tool": "bench/peers_torch.py",
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "argv": list(argv),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "python_version": platform.python_version(),
        "device": describe_device(torch, args.device),
        "settings": dict(matmul, **{
            "timing": ("CUDA events behind a GPU sleep (launch latency excluded)" if timer.sleep
                       else "CUDA events (launch latency included)" if timer.cuda
                       else "wall clock (no device events)"),
            "sleep_cycles_per_ms": timer.cycles_per_ms,
            "min_sleep_ms": MIN_SLEEP_MS if timer.sleep else None,
            "warmup_runs": WARMUP,
            "reps": args.reps or f"adaptive: {MIN_REPS} to {MAX_REPS}, while under {BUDGET_S} s",
        }),
    }
    t0 = time.perf_counter()
    if args.compile:
        doc["settings"]["mode"] = "torch.compile (dynamic=False), expr.* and user.* cases only"
        err = compile_probe(torch, args.device)
        doc["compile_error"] = err
        if err:
            print(f"peers_torch.py: torch.compile does not work here: {err}; nothing measured "
                  "under torch.compile", file=sys.stderr)
            doc["results"], doc["skipped"] = [], [{"case": "torch.compile", "error": err}]
            if args.out and args.out != "-":
                with open(args.out, "w") as f:
                    f.write(dumps(doc))
            return 1
    doc["results"], doc["skipped"] = run_cases(torch, args, timer)
    if not args.no_startup:
        doc["dispatch_us_per_op"] = dispatch_overhead(torch, args.device, timer)
    if args.first_result:
        fr = first_result(args.device)
        if fr:
            doc["first_result_ms"] = fr
    doc["elapsed_s"] = round(time.perf_counter() - t0, 1)
    if args.out == "-":
        sys.stdout.write(dumps(doc))
    else:
        if args.out:
            with open(args.out, "w") as f:
                f.write(dumps(doc))
        print_table(doc, sys.stdout)
    return 1 if doc["skipped"] else 0


if __name__ == "__main__":
    sys.exit(main())
