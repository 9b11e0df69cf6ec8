"""tinyfw: a fixture GPU framework with one real CUDA kernel (envfix's end-to-end test)."""
import ctypes
import os

__version__ = "@VERSION@"
_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib", "libtinyfw_kernels.so"))
_lib.tinyfw_error_string.restype = ctypes.c_char_p


def _check(code):
    if code != 0:
        msg = _lib.tinyfw_error_string(code).decode()
        raise RuntimeError(f"CUDA error: {msg}")


def to_device(n=1024):
    """Step A: move data to the GPU (no kernel launched)."""
    _check(_lib.tinyfw_to_device(n))


def axpy_check(n=1 << 16):
    """Step B: run the real kernel and verify the result."""
    err = ctypes.c_float(0.0)
    _check(_lib.tinyfw_axpy_check(n, ctypes.byref(err)))
    if err.value != 0.0:
        raise RuntimeError(f"tinyfw: wrong result, max error {err.value}")
    return True


def cpu_check(n=4096):
    """The CPU smoke step (no GPU on the host): the same axpy, computed in Python."""
    x = [float(i) for i in range(n)]
    y = [2.0 * v + 1.0 for v in x]
    if any(y[i] != 2.0 * i + 1.0 for i in range(n)):
        raise RuntimeError("tinyfw: wrong result on the CPU")
    return True
