"""tinyfw-vision: companion of tinyfw; its own kernel library, coupled to tinyfw's version."""
import ctypes
import os

import tinyfw

__version__ = "@VERSION@"
_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib", "libtinyfw_vision_kernels.so"))
_lib.tinyfw_error_string.restype = ctypes.c_char_p


def ops_check(n=4096):
    """The companion's own GPU kernel (like torchvision.ops.nms on CUDA)."""
    err = ctypes.c_float(0.0)
    code = _lib.tinyfw_axpy_check(n, ctypes.byref(err))
    if code != 0:
        raise RuntimeError("CUDA error: " + _lib.tinyfw_error_string(code).decode())
    return err.value == 0.0


def cpu_ops_check():
    """The companion's CPU op (like torchvision.ops.nms on CPU tensors)."""
    return tinyfw.cpu_check(256)
