"""kiln's f64 exp for CPU devices (k_exp64), cut out of cl_kernels/elementwise.cl, for the
PyOpenCL prototypes in this folder (run them from the repository root)."""
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')


def k_exp64_source():
    text = open(os.path.join(ROOT, 'cl_kernels', 'elementwise.cl')).read()
    start = text.index('inline double k_exp64(double x)')
    return text[start:text.index('#define k_exp k_exp64', start)]
