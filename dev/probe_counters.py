#!/usr/bin/env python3
"""Probe CUPTI's Profiler Host API + Range Profiler API end to end on a GPU.

Standalone: ctypes on libcupti, torch (and Triton if present) for kernels. Each step prints
"[step] ok ..." or "[step] FAILED ...", and the script goes on where it can. It answers the facts the
counters backend depends on:
  - which libcupti / libnvperf get loaded, and whether libnvperf must be preloaded;
  - the chip name, a few base metrics, sub-metrics, metric properties, passes per metric set;
  - one auto-range + kernel-replay session over 3 kernels: range count, range names, metric values;
  - a copy kernel of known size: dram__bytes_read.sum / dram__bytes_write.sum against the bytes moved;
  - a multi-pass metric set over an in-place kernel: are outputs identical (kernel replay restores memory)?
  - a counter data image too small for the launches: what DecodeData reports (numOfRangeDropped)?
  - the error code for an unknown metric (ConfigAddMetrics and GetMetricProperties);
  - the cost per kernel launch with counters vs without;
  - optionally (--with-flagtree) the same while a flagtree.profiler nvidia session traces activity.
Usage: python3 dev/probe_counters.py [--cupti PATH] [--with-flagtree] [--json OUT.json]
"""
import argparse
import ctypes as C
import glob
import json
import os
import sys
import time
import traceback

RESULTS = {}


def step(name, fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
        print(f"[{name}] ok {value if value is not None else ''}", flush=True)
        RESULTS[name] = {"ok": True, "value": repr(value)[:2000]}
        return value
    except Exception as error:  # a probe: report and go on
        print(f"[{name}] FAILED {type(error).__name__}: {error}", flush=True)
        traceback.print_exc(limit=3)
        RESULTS[name] = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        return None


# ---------------------------------------------------------------- structs (cupti_*.h, CUDA 13.0)
size_t, vp, u8, u16, u32, cint, cstr = C.c_size_t, C.c_void_p, C.c_uint8, C.c_uint16, C.c_uint32, C.c_int, C.c_char_p
PSTR = C.POINTER(C.c_char_p)


def params(name, *fields):
    """A CUPTI params struct: structSize and pPriv first; structSize = end of the last field."""
    cls = type(name, (C.Structure,), {"_fields_": [("structSize", size_t), ("pPriv", vp)] + list(fields)})

    def make(**values):
        obj = cls()
        last_name, last_type = cls._fields_[-1]
        obj.structSize = getattr(cls, last_name).offset + C.sizeof(last_type)
        for key, value in values.items():
            setattr(obj, key, value)
        return obj

    cls.make = staticmethod(make)
    return cls


ProfilerInitialize = params("ProfilerInitialize")
DeviceGetChipName = params("DeviceGetChipName", ("deviceIndex", size_t), ("pChipName", cstr))
GetCounterAvailability = params("GetCounterAvailability", ("ctx", vp), ("counterAvailabilityImageSize", size_t),
                                ("pCounterAvailabilityImage", vp))
DeviceSupported = params("DeviceSupported", ("cuDevice", cint), ("isSupported", cint), ("architecture", cint),
                         ("sli", cint), ("vGpu", cint), ("confidentialCompute", cint), ("cmp", cint),
                         ("wsl", cint), ("api", cint))
HostInitialize = params("HostInitialize", ("profilerType", cint), ("pChipName", cstr),
                        ("pCounterAvailabilityImage", vp), ("pHostObject", vp))
HostDeinitialize = params("HostDeinitialize", ("pHostObject", vp))
HostGetSupportedChips = params("HostGetSupportedChips", ("numChips", size_t), ("ppChipNames", PSTR))
HostGetBaseMetrics = params("HostGetBaseMetrics", ("pHostObject", vp), ("metricType", cint),
                            ("ppMetricNames", PSTR), ("numMetrics", size_t))
HostGetSubMetrics = params("HostGetSubMetrics", ("pHostObject", vp), ("metricType", cint), ("pMetricName", cstr),
                           ("numOfSubmetrics", size_t), ("ppSubMetrics", PSTR))
HostGetMetricProperties = params("HostGetMetricProperties", ("pHostObject", vp), ("pMetricName", cstr),
                                 ("pDescription", cstr), ("pHwUnit", cstr), ("pDimUnit", cstr),
                                 ("metricType", cint))
HostConfigAddMetrics = params("HostConfigAddMetrics", ("pHostObject", vp), ("ppMetricNames", PSTR),
                              ("numMetrics", size_t))
HostGetConfigImageSize = params("HostGetConfigImageSize", ("pHostObject", vp), ("configImageSize", size_t))
HostGetConfigImage = params("HostGetConfigImage", ("pHostObject", vp), ("configImageSize", size_t),
                            ("pConfigImage", vp))
HostGetNumOfPasses = params("HostGetNumOfPasses", ("configImageSize", size_t), ("pConfigImage", vp),
                            ("numOfPasses", size_t))
HostEvaluate = params("HostEvaluate", ("pHostObject", vp), ("pCounterDataImage", vp),
                      ("counterDataImageSize", size_t), ("rangeIndex", size_t), ("ppMetricNames", PSTR),
                      ("numMetrics", size_t), ("pMetricValues", C.POINTER(C.c_double)))
HostMaxMetricsPerPass = params("HostMaxMetricsPerPass", ("profilerType", cint), ("pChipName", cstr),
                               ("pCounterAvailabilityImage", vp), ("maxMetricsPerPass", size_t))
RPEnable = params("RPEnable", ("ctx", vp), ("pRangeProfilerObject", vp))
RPObject = params("RPObject", ("pRangeProfilerObject", vp))  # Disable, Start, PopRange
RPStop = params("RPStop", ("pRangeProfilerObject", vp), ("passIndex", size_t), ("targetNestingLevel", size_t),
                ("isAllPassSubmitted", u8))
RPSetConfig = params("RPSetConfig", ("pRangeProfilerObject", vp), ("configSize", size_t), ("pConfig", vp),
                     ("counterDataImageSize", size_t), ("pCounterDataImage", vp), ("range", cint),
                     ("replayMode", cint), ("maxRangesPerPass", size_t), ("numNestingLevels", u16),
                     ("minNestingLevel", u16), ("passIndex", size_t), ("targetNestingLevel", u16))
RPDecode = params("RPDecode", ("pRangeProfilerObject", vp), ("numOfRangeDropped", size_t))
RPCounterDataSize = params("RPCounterDataSize", ("pRangeProfilerObject", vp), ("pMetricNames", PSTR),
                           ("numMetrics", size_t), ("maxNumOfRanges", size_t), ("maxNumRangeTreeNodes", u32),
                           ("counterDataSize", size_t))
RPCounterDataInit = params("RPCounterDataInit", ("pRangeProfilerObject", vp), ("counterDataSize", size_t),
                           ("pCounterData", vp))
RPCounterDataInfo = params("RPCounterDataInfo", ("pCounterDataImage", vp), ("counterDataImageSize", size_t),
                           ("numTotalRanges", size_t))
RPRangeInfo = params("RPRangeInfo", ("pCounterDataImage", vp), ("counterDataImageSize", size_t),
                     ("rangeIndex", size_t), ("rangeDelimiter", cstr), ("rangeName", cstr))

CUPTI_AutoRange, CUPTI_KernelReplay, RANGE_PROFILER = 1, 2, 0
METRIC_TYPES = {0: "counter", 1: "ratio", 2: "throughput"}


class CuptiError(RuntimeError):
    pass


class Cupti:
    def __init__(self, path):
        self.path = path
        self.lib = C.CDLL(path, mode=C.RTLD_GLOBAL)
        self.lib.cuptiGetResultString.argtypes = [cint, C.POINTER(C.c_char_p)]

    def __call__(self, fn, p):
        f = getattr(self.lib, fn)
        code = f(C.byref(p))
        if code != 0:
            text = C.c_char_p()
            self.lib.cuptiGetResultString(code, C.byref(text))
            raise CuptiError(f"{fn} -> {code} ({(text.value or b'?').decode()})")
        return p


def names_array(names):
    arr = (C.c_char_p * len(names))(*[n.encode() for n in names])
    return C.cast(arr, PSTR), arr


def loaded(fragment):
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if fragment in line and "/" in line})


def find_cupti(explicit):
    if explicit:
        return explicit
    already = [p for p in loaded("libcupti.so") if "triton" not in p]
    if already:
        return already[0]
    for entry in sys.path:
        hits = sorted(glob.glob(os.path.join(entry, "nvidia", "cu13", "lib", "libcupti.so*")))
        if hits:
            return hits[0]
    hits = sorted(glob.glob("/usr/local/cuda*/targets/x86_64-linux/lib/libcupti.so.13*"))
    return hits[0] if hits else "libcupti.so.13"


# ---------------------------------------------------------------- the probe
class Probe:
    def __init__(self, cupti, torch):
        self.cupti, self.torch = cupti, torch
        self.ctx = None
        self.chip = None
        self.avail = None
        self.host = None

    def context(self):
        self.torch.cuda.init()
        self.torch.zeros(1, device="cuda")
        libcuda = C.CDLL("libcuda.so.1")
        ctx = vp()
        code = libcuda.cuCtxGetCurrent(C.byref(ctx))
        if code != 0 or not ctx.value:
            raise RuntimeError(f"cuCtxGetCurrent -> {code}, ctx {ctx.value}")
        self.ctx = ctx.value
        return hex(self.ctx)

    def initialize(self):
        self.cupti("cuptiProfilerInitialize", ProfilerInitialize.make())
        return "cuptiProfilerInitialize"

    def device_supported(self):
        p = self.cupti("cuptiProfilerDeviceSupported", DeviceSupported.make(cuDevice=0, api=0))
        return {k: p.__getattribute__(k) for k in ("isSupported", "architecture", "sli", "vGpu",
                                                   "confidentialCompute", "cmp", "wsl")}

    def chip_name(self):
        p = self.cupti("cuptiDeviceGetChipName", DeviceGetChipName.make(deviceIndex=0))
        self.chip = p.pChipName
        return self.chip.decode()

    def counter_availability(self):
        p = self.cupti("cuptiProfilerGetCounterAvailability", GetCounterAvailability.make(ctx=self.ctx))
        self.avail = (C.c_uint8 * p.counterAvailabilityImageSize)()
        p.pCounterAvailabilityImage = C.cast(self.avail, vp)
        self.cupti("cuptiProfilerGetCounterAvailability", p)
        return f"{p.counterAvailabilityImageSize} bytes"

    def supported_chips(self):
        p = self.cupti("cuptiProfilerHostGetSupportedChips", HostGetSupportedChips.make())
        return [p.ppChipNames[i].decode() for i in range(p.numChips)]

    def host_initialize(self):
        p = self.cupti("cuptiProfilerHostInitialize", HostInitialize.make(
            profilerType=RANGE_PROFILER, pChipName=self.chip, pCounterAvailabilityImage=C.cast(self.avail, vp)))
        self.host = p.pHostObject
        return hex(self.host)

    def new_host(self):
        p = self.cupti("cuptiProfilerHostInitialize", HostInitialize.make(
            profilerType=RANGE_PROFILER, pChipName=self.chip, pCounterAvailabilityImage=C.cast(self.avail, vp)))
        return p.pHostObject

    def free_host(self, host):
        self.cupti("cuptiProfilerHostDeinitialize", HostDeinitialize.make(pHostObject=host))

    def base_metrics(self):
        out = {}
        for code, kind in METRIC_TYPES.items():
            p = self.cupti("cuptiProfilerHostGetBaseMetrics", HostGetBaseMetrics.make(pHostObject=self.host,
                                                                                      metricType=code))
            out[kind] = [p.ppMetricNames[i].decode() for i in range(p.numMetrics)]
        self.base = out
        return {k: f"{len(v)} e.g. {v[:4]}" for k, v in out.items()}

    def sub_metrics(self, name, kind):
        p = self.cupti("cuptiProfilerHostGetSubMetrics", HostGetSubMetrics.make(
            pHostObject=self.host, metricType=kind, pMetricName=name.encode()))
        return [p.ppSubMetrics[i].decode() for i in range(p.numOfSubmetrics)]

    def properties(self, name):
        p = self.cupti("cuptiProfilerHostGetMetricProperties", HostGetMetricProperties.make(
            pHostObject=self.host, pMetricName=name.encode()))
        return {"type": METRIC_TYPES.get(p.metricType, p.metricType), "hw": (p.pHwUnit or b"").decode(),
                "dim": (p.pDimUnit or b"").decode(), "desc": (p.pDescription or b"").decode()[:80]}

    def max_metrics_per_pass(self):
        p = self.cupti("cuptiProfilerHostGetMaxNumHardwareMetricsPerPass", HostMaxMetricsPerPass.make(
            profilerType=RANGE_PROFILER, pChipName=self.chip, pCounterAvailabilityImage=C.cast(self.avail, vp)))
        return p.maxMetricsPerPass

    def config_image(self, metrics, keep_host=False):
        """A fresh host object per config (ConfigAddMetrics may accumulate); kept for evaluation if asked."""
        host = self.new_host()
        try:
            pp, keep = names_array(metrics)
            self.cupti("cuptiProfilerHostConfigAddMetrics", HostConfigAddMetrics.make(
                pHostObject=host, ppMetricNames=pp, numMetrics=len(metrics)))
            size = self.cupti("cuptiProfilerHostGetConfigImageSize",
                              HostGetConfigImageSize.make(pHostObject=host)).configImageSize
            image = (C.c_uint8 * size)()
            self.cupti("cuptiProfilerHostGetConfigImage", HostGetConfigImage.make(
                pHostObject=host, configImageSize=size, pConfigImage=C.cast(image, vp)))
            passes = self.cupti("cuptiProfilerHostGetNumOfPasses", HostGetNumOfPasses.make(
                configImageSize=size, pConfigImage=C.cast(image, vp))).numOfPasses
            if keep_host:
                return image, passes, host
            return image, passes
        finally:
            if not keep_host:
                self.free_host(host)

    def session(self, metrics, kernels, max_ranges=64, label=""):
        """Enable on the context, one auto-range/kernel-replay pass over `kernels`, decode, evaluate."""
        image, passes, host = self.config_image(metrics, keep_host=True)
        obj = self.cupti("cuptiRangeProfilerEnable", RPEnable.make(ctx=self.ctx)).pRangeProfilerObject
        try:
            pp, keep = names_array(metrics)
            size = self.cupti("cuptiRangeProfilerGetCounterDataSize", RPCounterDataSize.make(
                pRangeProfilerObject=obj, pMetricNames=pp, numMetrics=len(metrics), maxNumOfRanges=max_ranges,
                maxNumRangeTreeNodes=max_ranges)).counterDataSize
            data = (C.c_uint8 * size)()
            self.cupti("cuptiRangeProfilerCounterDataImageInitialize", RPCounterDataInit.make(
                pRangeProfilerObject=obj, counterDataSize=size, pCounterData=C.cast(data, vp)))
            self.cupti("cuptiRangeProfilerSetConfig", RPSetConfig.make(
                pRangeProfilerObject=obj, configSize=len(image), pConfig=C.cast(image, vp),
                counterDataImageSize=size, pCounterDataImage=C.cast(data, vp), range=CUPTI_AutoRange,
                replayMode=CUPTI_KernelReplay, maxRangesPerPass=max_ranges, numNestingLevels=1,
                minNestingLevel=1, passIndex=0, targetNestingLevel=1))
            self.cupti("cuptiRangeProfilerStart", RPObject.make(pRangeProfilerObject=obj))
            t0 = time.perf_counter()
            for kernel in kernels:
                kernel()
            launch_s = time.perf_counter() - t0
            stop = self.cupti("cuptiRangeProfilerStop", RPStop.make(pRangeProfilerObject=obj))
            self.torch.cuda.synchronize()
            dropped = self.cupti("cuptiRangeProfilerDecodeData",
                                 RPDecode.make(pRangeProfilerObject=obj)).numOfRangeDropped
            total = self.cupti("cuptiRangeProfilerGetCounterDataInfo", RPCounterDataInfo.make(
                pCounterDataImage=C.cast(data, vp), counterDataImageSize=size)).numTotalRanges
            ranges = []
            if total:
                self.bare_host_eval = lambda: self.evaluate(self.host, data, size, 0, metrics)
            for index in range(total):
                info = self.cupti("cuptiRangeProfilerCounterDataGetRangeInfo", RPRangeInfo.make(
                    pCounterDataImage=C.cast(data, vp), counterDataImageSize=size, rangeIndex=index,
                    rangeDelimiter=b"/"))
                values = (C.c_double * len(metrics))()
                self.cupti("cuptiProfilerHostEvaluateToGpuValues", HostEvaluate.make(
                    pHostObject=host, pCounterDataImage=C.cast(data, vp), counterDataImageSize=size,
                    rangeIndex=index, ppMetricNames=pp, numMetrics=len(metrics),
                    pMetricValues=C.cast(values, C.POINTER(C.c_double))))
                ranges.append({"name": (info.rangeName or b"").decode()[:120],
                               "values": dict(zip(metrics, list(values)))})
            return {"label": label, "passes": passes, "config_bytes": len(image), "counter_data_bytes": size,
                    "all_passes_submitted": stop.isAllPassSubmitted, "dropped": dropped, "ranges": ranges,
                    "launch_s": launch_s}
        finally:
            self.cupti("cuptiRangeProfilerDisable", RPObject.make(pRangeProfilerObject=obj))
            self.free_host(host)

    def evaluate(self, host, data, size, index, metrics):
        pp, keep = names_array(metrics)
        values = (C.c_double * len(metrics))()
        self.cupti("cuptiProfilerHostEvaluateToGpuValues", HostEvaluate.make(
            pHostObject=host, pCounterDataImage=C.cast(data, vp), counterDataImageSize=size, rangeIndex=index,
            ppMetricNames=pp, numMetrics=len(metrics), pMetricValues=C.cast(values, C.POINTER(C.c_double))))
        return list(values)


class Continuous:
    """Collection that survives a full image: Stop, Decode, evaluate, re-initialise the image, SetConfig, Start.
    `resetconfig=False` skips the re-initialise + SetConfig to see whether Start alone works again."""

    def __init__(self, probe, metrics, max_ranges, resetconfig=True):
        self.p, self.metrics, self.max_ranges, self.resetconfig = probe, metrics, max_ranges, resetconfig
        self.image, self.passes, self.host = probe.config_image(metrics, keep_host=True)
        self.names, self._keep = names_array(metrics)
        cupti = probe.cupti
        self.obj = cupti("cuptiRangeProfilerEnable", RPEnable.make(ctx=probe.ctx)).pRangeProfilerObject
        self.size = cupti("cuptiRangeProfilerGetCounterDataSize", RPCounterDataSize.make(
            pRangeProfilerObject=self.obj, pMetricNames=self.names, numMetrics=len(metrics),
            maxNumOfRanges=max_ranges, maxNumRangeTreeNodes=max_ranges)).counterDataSize
        self.data = (C.c_uint8 * self.size)()
        self.ranges, self.dropped, self.errors = [], 0, []
        self.configure()
        cupti("cuptiRangeProfilerStart", RPObject.make(pRangeProfilerObject=self.obj))

    def configure(self):
        cupti = self.p.cupti
        cupti("cuptiRangeProfilerCounterDataImageInitialize", RPCounterDataInit.make(
            pRangeProfilerObject=self.obj, counterDataSize=self.size, pCounterData=C.cast(self.data, vp)))
        cupti("cuptiRangeProfilerSetConfig", RPSetConfig.make(
            pRangeProfilerObject=self.obj, configSize=len(self.image), pConfig=C.cast(self.image, vp),
            counterDataImageSize=self.size, pCounterDataImage=C.cast(self.data, vp), range=CUPTI_AutoRange,
            replayMode=CUPTI_KernelReplay, maxRangesPerPass=self.max_ranges, numNestingLevels=1,
            minNestingLevel=1, passIndex=0, targetNestingLevel=1))

    def collect(self, restart=True):
        cupti = self.p.cupti
        cupti("cuptiRangeProfilerStop", RPStop.make(pRangeProfilerObject=self.obj))
        self.dropped += cupti("cuptiRangeProfilerDecodeData",
                              RPDecode.make(pRangeProfilerObject=self.obj)).numOfRangeDropped
        total = cupti("cuptiRangeProfilerGetCounterDataInfo", RPCounterDataInfo.make(
            pCounterDataImage=C.cast(self.data, vp), counterDataImageSize=self.size)).numTotalRanges
        for index in range(total):
            info = cupti("cuptiRangeProfilerCounterDataGetRangeInfo", RPRangeInfo.make(
                pCounterDataImage=C.cast(self.data, vp), counterDataImageSize=self.size, rangeIndex=index,
                rangeDelimiter=b"/"))
            values = self.p.evaluate(self.host, self.data, self.size, index, self.metrics)
            self.ranges.append(((info.rangeName or b"").decode()[:60], values))
        if restart:
            if self.resetconfig:
                self.configure()
            cupti("cuptiRangeProfilerStart", RPObject.make(pRangeProfilerObject=self.obj))
        return total

    def close(self):
        self.p.cupti("cuptiRangeProfilerDisable", RPObject.make(pRangeProfilerObject=self.obj))
        self.p.free_host(self.host)


CALLBACK = C.CFUNCTYPE(None, vp, cint, u32, vp)


class CallbackData(C.Structure):
    _fields_ = [("callbackSite", cint), ("functionName", cstr), ("functionParams", vp),
                ("functionReturnValue", vp), ("symbolName", cstr), ("context", vp), ("contextUid", u32),
                ("correlationData", vp), ("correlationId", u32)]


def decode_in_callback(probe, metrics, kernel, launches=6, every=2):
    """Subscribes to driver-API callbacks itself and runs Continuous.collect in the launch-exit
    callback every `every` launches: may the range profiler be driven from inside a CUPTI callback?"""
    lib = probe.cupti.lib
    run = Continuous(probe, metrics, max_ranges=every)
    seen = []

    def on_api(userdata, domain, cbid, data):
        try:
            cb = C.cast(data, C.POINTER(CallbackData)).contents
            name = C.c_char_p()
            lib.cuptiGetCallbackName(domain, cbid, C.byref(name))
            if b"LaunchKernel" not in (name.value or b"") or cb.callbackSite != 1:
                return
            seen.append(((cb.symbolName or b"")[:40].decode(errors="replace"), cb.correlationId))
            if len(seen) % every == 0:
                run.collect()
        except Exception as error:
            run.errors.append(str(error))

    callback = CALLBACK(on_api)
    subscriber = vp()
    probe.cupti.lib.cuptiGetCallbackName.argtypes = [cint, u32, C.POINTER(C.c_char_p)]
    code = lib.cuptiSubscribe(C.byref(subscriber), callback, None)
    if code != 0:
        run.close()
        raise CuptiError(f"cuptiSubscribe -> {code}")
    try:
        lib.cuptiEnableDomain(1, subscriber, 1)  # CUPTI_CB_DOMAIN_DRIVER_API
        for _ in range(launches):
            kernel()
        probe.torch.cuda.synchronize()
    finally:
        lib.cuptiUnsubscribe(subscriber)
    leftover = run.collect(restart=False)
    run.close()
    return {"launches_seen": seen, "ranges": [(n, [round(v) for v in vals]) for n, vals in run.ranges],
            "dropped": run.dropped, "errors": run.errors[:3], "leftover_at_end": leftover}


def restart_without_callback(probe, metrics, kernel, resetconfig):
    run = Continuous(probe, metrics, max_ranges=4, resetconfig=resetconfig)
    try:
        kernel(), kernel()
        first = run.collect()
        kernel(), kernel(), kernel()
        second = run.collect(restart=False)
        return {"first": first, "second": second, "dropped": run.dropped,
                "names": [n for n, _ in run.ranges], "values": [[round(v) for v in vals] for _, vals in run.ranges]}
    finally:
        run.close()


def kernels(torch):
    n = 64 * 1024 * 1024  # 64 Mi float32 = 256 MiB each way
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    small = torch.ones(1 << 20, device="cuda")
    add = None
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def add_one(x_ptr, n_elements, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n_elements
            tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)

        def add():
            add_one[(triton.cdiv(small.numel(), 1024),)](small, small.numel(), BLOCK=1024)
        add()  # compile outside the profiled region
    except Exception as error:
        print(f"[triton] not used: {error}")

        def add():
            small.add_(1.0)
    torch.cuda.synchronize()
    return src, dst, small, add


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cupti")
    parser.add_argument("--with-flagtree", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    import torch

    path = find_cupti(args.cupti)
    print(f"[cupti] {path}; already loaded: {loaded('libcupti')}; nvperf loaded: {loaded('nvperf')}")
    cupti = Cupti(path)
    probe = Probe(cupti, torch)
    session = None
    if args.with_flagtree:
        import flagtree.profiler as profiler
        base = os.path.join(os.environ.get("OUT", "."), "probe")
        session = step("flagtree_start", lambda: profiler.start(base, backend="nvidia"))
    step("context", probe.context)
    step("profiler_initialize", probe.initialize)
    step("device_supported", probe.device_supported)
    step("chip_name", probe.chip_name)
    step("counter_availability", probe.counter_availability)
    step("supported_chips", probe.supported_chips)
    if step("host_initialize", probe.host_initialize) is None:
        here = os.path.dirname(os.path.realpath(path))
        for lib in ("libnvperf_host.so", "libnvperf_target.so"):
            step(f"preload_{lib}", C.CDLL, os.path.join(here, lib), mode=C.RTLD_GLOBAL)
        step("host_initialize_after_preload", probe.host_initialize)
    print(f"[nvperf] loaded now: {loaded('nvperf')}")
    if probe.host is None:
        print("no host object; stopping")
        return finish(args)
    step("base_metrics", probe.base_metrics)
    for name, kind in (("dram__bytes_read", 0), ("sm__throughput", 2), ("sm__warps_active", 1),
                       ("dram__bytes_read.sum", 0)):
        step(f"sub_metrics {name}", probe.sub_metrics, name, kind)
    wanted = ["dram__bytes_read.sum", "dram__bytes_write.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
              "sm__warps_active.avg.pct_of_peak_sustained_active", "gpu__time_duration.sum",
              "dram__bytes_read.sum.per_second", "sm__cycles_elapsed.avg.per_second"]
    for name in wanted + ["bogus__metric.sum", "dram__bytes_read.bogus"]:
        step(f"properties {name}", probe.properties, name)
    step("max_metrics_per_pass", probe.max_metrics_per_pass)
    step("config unknown metric", probe.config_image, ["bogus__metric.sum"])
    step("passes wanted", lambda: probe.config_image(wanted)[1])

    src, dst, small, add = kernels(torch)
    small.fill_(1.0)
    # dst.copy_(src) of contiguous tensors is a cudaMemcpy in torch, not a kernel: no range.
    three = [lambda: dst.copy_(src), add, lambda: src.mul_(1.0)]
    result = step("session 3 kernels", probe.session, wanted, three, label="copy, triton add, mul")
    if result:
        print(json.dumps(result, indent=1))
        copy = result["ranges"][-1]["values"] if result["ranges"] else {}  # src.mul_: 256 MiB each way
        moved = src.numel() * 4
        step("copy bytes vs expected", lambda: {"expected": moved, "read": copy.get("dram__bytes_read.sum"),
                                                "write": copy.get("dram__bytes_write.sum"),
                                                "read_ratio": copy.get("dram__bytes_read.sum", 0) / moved,
                                                "write_ratio": copy.get("dram__bytes_write.sum", 0) / moved})
        step("triton add applied once (want 2.0)", lambda: float(small[0].item()))
        step("evaluate with a host object that has no config", lambda: probe.bare_host_eval())

    # A metric set needing several passes: does kernel replay restore memory between passes?
    many = [m + ".sum" for m in probe.base.get("counter", []) if m.startswith(("dram__", "lts__t_", "l1tex__t_"))][:40]
    passes = step("passes many", lambda: probe.config_image(many)[1]) if many else None
    if passes and passes > 1:
        small.fill_(1.0)
        before = dst.clone()
        inplace = step("multipass in-place", probe.session, many, [add, lambda: dst.add_(1.0)], label="multipass")
        if inplace:
            print({k: v for k, v in inplace.items() if k != "ranges"}, [r["name"] for r in inplace["ranges"]])
        step("multipass outputs identical", lambda: {"small[0] (want 2.0)": float(small[0].item()),
                                                    "dst == before+1": bool(torch.equal(dst, before + 1.0))})

    # Counter data image with room for 2 ranges, 5 launches: what is reported?
    small_image = step("image too small (2 ranges, 5 launches)", probe.session, wanted[:2], [add] * 5, max_ranges=2)
    if small_image:
        print({k: v for k, v in small_image.items() if k != "ranges"}, len(small_image["ranges"]))

    step("restart after decode, image re-initialised + SetConfig", restart_without_callback, probe, wanted[:2], add,
         True)
    step("restart after decode, Start only", restart_without_callback, probe, wanted[:2], add, False)
    if session is None:
        step("decode inside the launch-exit callback", decode_in_callback, probe, wanted[:2], add)

    # Cost per launch: 200 tiny launches, with counters vs without.
    def timed(fn, n=200):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n

    base = timed(add)
    with_counters = step("200 launches with counters", probe.session, wanted[:2], [add] * 200, max_ranges=256)
    if with_counters:
        step("cost per launch", lambda: {"plain_us": base * 1e6, "counters_launch_us": with_counters["launch_s"] / 200 * 1e6,
                                         "ranges": len(with_counters["ranges"]),
                                         "dropped": with_counters["dropped"]})
    if session is not None:
        import flagtree.profiler as profiler
        step("flagtree_finalize", profiler.finalize)
        step("flagtree kernel records (replay: one per launch?)", kernel_counts,
             os.path.join(os.environ.get("OUT", "."), "probe.hatchet"))
    step("host_deinitialize", probe.free_host, probe.host)
    return finish(args)


def kernel_counts(path):
    """{kernel name: count} from a hatchet file: shows whether kernel replay duplicates activity records."""
    counts = {}

    def walk(node):
        frame = node.get("frame", {})
        if frame.get("kind") == "kernel":
            counts[frame["name"][:60]] = counts.get(frame["name"][:60], 0) + node["metrics"].get("count", 0)
        for child in node.get("children", []):
            walk(child)
    with open(path) as f:
        walk(json.load(f)[0])
    return counts


def finish(args):
    if args.json:
        with open(args.json, "w") as out:
            json.dump(RESULTS, out, indent=1)
    failed = [k for k, v in RESULTS.items() if not v["ok"]]
    print("SUMMARY:", len(RESULTS) - len(failed), "ok,", len(failed), "failed:", failed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
