"""The stand-in vendor libraries of the CUPTI-dialect backends, built and loaded once per test
run: the mthreads and cann tests, and the tests of the shared tracer over both, use the same
copies (the tracer and the vendors' driver tables keep the first copy they load for the
process)."""
import ctypes

import pytest

from standins import build_standin, load_standin


@pytest.fixture(scope="session")
def mspti_lib(tmp_path_factory):
    path = build_standin("mspti_standin.c", tmp_path_factory.mktemp("mspti"), "libmspti.so")
    lib = load_standin(path)
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    lib.standin_launch.argtypes = [ctypes.c_char_p, u32, u32, u64]
    lib.standin_launch.restype = u64
    lib.standin_rt_launch.argtypes = [ctypes.c_char_p, u32, u64]
    lib.standin_rt_launch.restype = u64
    lib.standin_memcpy.argtypes = [u32, u64, u32, u64]
    lib.standin_memcpy.restype = u64
    lib.standin_memset.argtypes = [u64, u32, u64]
    lib.standin_memset.restype = u64
    lib.standin_api_record.argtypes = [u32]
    lib.standin_launch_at_unsubscribe.argtypes = [ctypes.c_char_p]
    lib.standin_now.restype = u64
    lib.standin_state.restype = u64
    # mstx is CANN's libms_tools_ext.so, not MSPTI's: loaded after it (it calls into it).
    mstx = load_standin(build_standin("mstx_standin.c", tmp_path_factory.mktemp("mstx"), "libms_tools_ext.so"))
    mstx.mstxRangeStartA.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    mstx.mstxRangeStartA.restype = u64
    mstx.mstxRangeEnd.argtypes = [u64]
    lib.mstx = mstx
    lib.path = path
    return lib


@pytest.fixture(scope="session")
def mupti_lib(tmp_path_factory):
    path = build_standin("mupti_standin.c", tmp_path_factory.mktemp("mupti"), "libmupti.so")
    lib = load_standin(path)
    dims = ctypes.c_int * 3
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    lib.standin_launch.argtypes = [ctypes.c_char_p, dims, dims, ctypes.c_uint, u32, u64]
    lib.standin_launch.restype = u32
    lib.standin_runtime_launch.argtypes = [ctypes.c_char_p, dims, dims, u32, u64]
    lib.standin_runtime_launch.restype = u32
    lib.standin_memcpy.argtypes = [ctypes.c_uint8, u64, u32, u64]
    lib.standin_memset.argtypes = [u64, u32, u64]
    lib.standin_state.restype = u64
    lib.standin_truncate_next_delivery.argtypes = [ctypes.c_size_t]
    lib.standin_clock_rate_ppm.argtypes = [ctypes.c_int64]
    lib.standin_unknown_record.argtypes = [u32]
    lib.standin_graph_launch.argtypes = [ctypes.c_char_p, ctypes.c_int, u32, u64]
    lib.standin_define_function.argtypes = [ctypes.c_char_p] + [ctypes.c_int] * 4
    for name, regs, smem, local, blocks in (("_Z6matmulPfS_i", 64, 8192, 16, 4), ("softmax_kernel", 32, 0, 0, 8),
                                            ("add_kernel", 16, 0, 0, 8), ("py_kernel", 16, 0, 0, 8)):
        lib.standin_define_function(name.encode(), regs, smem, local, blocks)
    # Device attributes (CUDA's numbering, which MUSA mirrors): warp size, memory clock, bus
    # width, threads per SM, SMs, compute capability.
    for attribute, value in ((10, 32), (36, 1_500_000), (37, 512), (39, 2048), (16, 48), (75, 2), (76, 2)):
        lib.standin_set_device_attribute(attribute, value)
    lib.dims = dims
    lib.path = path
    return lib
