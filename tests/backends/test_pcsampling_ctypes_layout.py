"""CUPTI's PC-sampling structs declared with ctypes (tests/gpu/cupti_pcsampling_ctypes.py, which the
GPU probe dev/probe_pcsampling.py drives the API with): their sizes and the offsets it reads must equal
what the CUPTI headers the build uses say (compiled here with the C compiler)."""
import ctypes
import subprocess

import pytest

from gpu import cupti_pcsampling_ctypes as p
from tests.standins.build import compiler, cuda_header_dirs


def header_dirs():
    return cuda_header_dirs()


C_PROGRAM = r"""
#include <stdio.h>
#include <stddef.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
int main(void) {
  printf("%zu %zu %zu %zu %zu %zu\n", sizeof(CUpti_PCSamplingStallReason), sizeof(CUpti_PCSamplingPCData),
         sizeof(CUpti_PCSamplingData), sizeof(CUpti_PCSamplingConfigurationInfo),
         (size_t)CUpti_PCSamplingConfigurationInfoParamsSize, (size_t)CUpti_PCSamplingEnableParamsSize);
  printf("%zu %zu %zu %zu %zu\n", (size_t)CUpti_PCSamplingGetDataParamsSize,
         (size_t)CUpti_PCSamplingGetNumStallReasonsParamsSize, (size_t)CUpti_PCSamplingGetStallReasonsParamsSize,
         (size_t)CUpti_GetSassToSourceCorrelationParamsSize, (size_t)CUpti_GetCubinCrcParamsSize);
  printf("%zu %zu %zu %zu %zu\n", offsetof(CUpti_PCSamplingPCData, correlationId),
         offsetof(CUpti_PCSamplingPCData, stallReason), offsetof(CUpti_PCSamplingData, hardwareBufferFull),
         offsetof(CUpti_ActivityKernel9, correlationId), offsetof(CUpti_ActivityKernel9, end));
  return 0;
}
"""


def test_ctypes_structs_match_cupti_headers(tmp_path):
    dirs = header_dirs()
    if compiler() is None or not dirs:
        pytest.skip("needs a C compiler and the CUPTI headers (csrc/find_cuda_headers.py found none)")
    source = tmp_path / "layout.c"
    source.write_text(C_PROGRAM)
    binary = tmp_path / "layout"
    subprocess.run(compiler().split() + [str(source), "-o", str(binary)] + [f"-I{d}" for d in dirs], check=True)
    lines = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout.split("\n")
    sizes = [ctypes.sizeof(t) for t in (p.StallReason, p.PCData, p.SamplingData, p.ConfigInfo, p.ConfigParams,
                                         p.CtxParams)]
    assert lines[0].split() == [str(s) for s in sizes]
    params = [ctypes.sizeof(t) for t in (p.GetDataParams, p.NumStallParams, p.StallParams, p.SassParams, p.CrcParams)]
    assert lines[1].split() == [str(s) for s in params]
    offsets = [p.PCData.correlationId.offset, p.PCData.stallReason.offset, p.SamplingData.hardwareBufferFull.offset,
               p.KERNEL_CORRELATION_OFFSET, p.KERNEL_END_OFFSET]
    assert lines[2].split() == [str(o) for o in offsets]

