"""CUPTI's PC-sampling structures (cupti_pcsampling.h) declared with ctypes, for the GPU probe
dev/probe_pcsampling.py, which drives the API with ctypes only. Their sizes and offsets are checked
against the CUPTI headers of the build by tests/backends/test_pcsampling_ctypes_layout.py; natural
alignment matches the PACKED_ALIGNMENT(8) layout of these structs."""
import ctypes as C


class StallReason(C.Structure):
    _fields_ = [("index", C.c_uint32), ("samples", C.c_uint32)]


class PCData(C.Structure):
    _fields_ = [("size", C.c_size_t), ("cubinCrc", C.c_uint64), ("pcOffset", C.c_uint64),
                ("functionIndex", C.c_uint32), ("pad", C.c_uint32), ("functionName", C.c_char_p),
                ("stallReasonCount", C.c_size_t), ("stallReason", C.POINTER(StallReason)),
                ("correlationId", C.c_uint32)]


class SamplingData(C.Structure):
    _fields_ = [("size", C.c_size_t), ("collectNumPcs", C.c_size_t), ("totalSamples", C.c_uint64),
                ("droppedSamples", C.c_uint64), ("totalNumPcs", C.c_size_t), ("remainingNumPcs", C.c_size_t),
                ("rangeId", C.c_uint64), ("pPcData", C.POINTER(PCData)),
                ("nonUsrKernelsTotalSamples", C.c_uint64), ("hardwareBufferFull", C.c_uint8)]


class ConfigInfo(C.Structure):
    _fields_ = [("attributeType", C.c_int), ("attributeStatus", C.c_int), ("data", C.c_uint64 * 3)]


class ConfigParams(C.Structure):
    _fields_ = [("size", C.c_size_t), ("pPriv", C.c_void_p), ("ctx", C.c_void_p),
                ("numAttributes", C.c_size_t), ("info", C.POINTER(ConfigInfo))]


class CtxParams(C.Structure):  # Enable / Disable / Start / Stop
    _fields_ = [("size", C.c_size_t), ("pPriv", C.c_void_p), ("ctx", C.c_void_p)]


class GetDataParams(C.Structure):
    _fields_ = [("size", C.c_size_t), ("pPriv", C.c_void_p), ("ctx", C.c_void_p), ("data", C.c_void_p)]


class NumStallParams(C.Structure):
    _fields_ = [("size", C.c_size_t), ("pPriv", C.c_void_p), ("ctx", C.c_void_p),
                ("numStallReasons", C.POINTER(C.c_size_t))]


class StallParams(C.Structure):
    _fields_ = [("size", C.c_size_t), ("pPriv", C.c_void_p), ("ctx", C.c_void_p), ("numStallReasons", C.c_size_t),
                ("stallReasonIndex", C.POINTER(C.c_uint32)), ("stallReasons", C.POINTER(C.c_char_p))]


class SassParams(C.Structure):
    _fields_ = [("size", C.c_size_t), ("cubin", C.c_void_p), ("functionName", C.c_char_p),
                ("cubinSize", C.c_size_t), ("lineNumber", C.c_uint32), ("pcOffset", C.c_uint64),
                ("fileName", C.c_void_p), ("dirName", C.c_void_p)]


class CrcParams(C.Structure):
    _fields_ = [("size", C.c_size_t), ("cubinSize", C.c_size_t), ("cubin", C.c_void_p), ("cubinCrc", C.c_uint64)]


# Where a kernel activity record (CUpti_ActivityKernel9) keeps these fields.
KERNEL_CORRELATION_OFFSET, KERNEL_START_OFFSET, KERNEL_END_OFFSET = 92, 16, 24
