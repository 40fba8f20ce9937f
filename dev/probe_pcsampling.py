#!/usr/bin/env python3
"""Probe CUPTI's PC-sampling API end to end on one Triton kernel (GPU machine, standalone, ctypes only).

Usage: python3 dev/probe_pcsampling.py [--mode all|continuous|serialized] [--sequence startonce|callbacks]
                                         [--config proton|split] [--period N] [--out DIR]

`all` (the default) runs each variant in its own child process (PC sampling is enabled once per
context and CUPTI keeps state per process) and prints a short summary table last. Every step prints
`[step] ok ...` or `[step] FAILED ...` and the probe carries on where it can.

Sequences (round 2 got 0 samples in every start-once variant; Proton gets samples on the same H200):
  * startonce: Enable + configure, Start once, N launches, sync, Stop, GetData (our first design);
  * callbacks: Proton's order (third_party/proton CuptiPCSampling.cpp/CuptiProfiler.cpp, read for facts):
    a CUPTI subscriber on the driver-API launch callbacks; at the first launch ENTER in a context
    Enable + one SetConfigurationAttribute call (stall reasons, period 2^10, hardware buffer 128 MiB,
    scratch 16 MiB, data buffer of 1024 PCs, start/stop control on, collection mode; no output format,
    no sleep span); at every ENTER cuCtxSynchronize then Start; at EXIT Stop then GetData (always once,
    again while PCs remain).
Configs: `proton` = that one-call attribute set; `split` = our round-2 set, one attribute per call
(sleep span, output format and 512 MiB hardware buffer included).

What it answers for the cupti_pcsampling backend:
  * stall reason names and indices on this GPU / CUPTI;
  * whether each configuration attribute is accepted (attributeStatus per attribute);
  * continuous vs kernel-serialized mode: is `correlationId` filled, and does it equal the correlation
    id of the kernel's activity record (CUPTI activity API enabled next to PC sampling, as the backend does);
  * can many launches be collected with ONE GetData drain at the end (no sync per launch);
  * one SASS->source lookup through cuptiGetSassToSourceCorrelation on the Triton cubin: does the slow
    line get most samples;
  * cost: 2,000 tiny launches and a GPU-bound kernel with sampling started vs stopped, interleaved.
"""
import argparse
import ctypes as C
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "gpu"))
from cupti_pcsampling_ctypes import (KERNEL_CORRELATION_OFFSET, KERNEL_END_OFFSET, KERNEL_START_OFFSET,  # noqa: E402
                                     ConfigInfo, ConfigParams, CrcParams, CtxParams, GetDataParams, NumStallParams,
                                     PCData, SamplingData, SassParams, StallParams, StallReason)

RESULT = {}  # summary numbers, printed as JSON on the last line of a child run


def step(name, fn, *args):
    """Run one probe step; print ok/FAILED with the value; never raise."""
    try:
        value = fn(*args)
        shown = value if not isinstance(value, (list, dict)) or len(str(value)) < 400 else str(value)[:400] + "..."
        print(f"[{name}] ok {shown if value is not None else ''}", flush=True)
        return value
    except Exception as exc:  # the probe reports and goes on
        print(f"[{name}] FAILED {type(exc).__name__}: {exc}", flush=True)
        traceback.print_exc(limit=3)
        RESULT.setdefault("failed", []).append(name)
        return None


ATTR = dict(period=1, stall_reason=2, scratch=3, hardware=4, mode=5, start_stop=6, output_format=7,
            data_buffer=8, sleep_span=9)
MODE = dict(continuous=1, serialized=2)
KIND_KERNEL, KIND_CONCURRENT_KERNEL = 3, 10
# Proton's PCSamplingMetric value names (Data/Metric.h); a CUPTI reason is configured when its name contains
# one (so *_not_issued ones too; "stalled_not_Selected" is spelt with a capital S there and matches none).
PROTON_METRIC_NAMES = ("num_samples", "num_stalled_samples", "stalled_branch_resolving", "stalled_no_instruction",
                       "stalled_short_scoreboard", "stalled_wait", "stalled_long_scoreboard", "stalled_tex_throttle",
                       "stalled_barrier", "stalled_membar", "stalled_imc_miss", "stalled_mio_throttle",
                       "stalled_math_pipe_throttle", "stalled_drain", "stalled_lg_throttle", "stalled_not_Selected",
                       "stalled_misc", "stalled_dispatch_stall", "stalled_sleeping", "stalled_selected")


def load_cupti():
    loaded = [l.split()[-1] for l in open("/proc/self/maps") if "libcupti.so" in l]
    candidates = sorted(set(loaded)) + [
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.13",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13", "libcupti.so.13"]
    for path in candidates:
        try:
            lib = C.CDLL(path, mode=C.RTLD_GLOBAL)
            print(f"  libcupti: {path} (already loaded: {sorted(set(loaded))})")
            return lib
        except OSError as exc:
            print(f"  cannot load {path}: {exc}")
    raise OSError("no libcupti.so.13 found")


class Cupti:
    def __init__(self):
        self.lib = load_cupti()
        version = C.c_uint32()
        self.lib.cuptiGetVersion(C.byref(version))
        self.version = version.value

    def check(self, name, status):
        if status != 0:
            text = C.c_char_p()
            self.lib.cuptiGetResultString(status, C.byref(text))
            raise RuntimeError(f"{name} returned {status} ({text.value.decode() if text.value else '?'})")

    def call(self, name, params):
        params.size = C.sizeof(params)
        self.check(name, getattr(self.lib, name)(C.byref(params)))
        return params


# ----------------------------------------------------------------------------- driver-API callbacks
DOMAIN_DRIVER_API, DOMAIN_RESOURCE = 1, 3
RESOURCE_CBIDS = (1, 2, 6, 7)  # CONTEXT_CREATED, CONTEXT_DESTROY_STARTING, MODULE_LOADED, MODULE_UNLOAD_STARTING
LAUNCH_CBIDS = (307, 442, 477, 652, 653)  # cuLaunchKernel(_ptsz), cuLaunchCooperativeKernel, cuLaunchKernelEx(_ptsz)
CB_SITE_OFFSET, CB_CONTEXT_OFFSET, CB_CORRELATION_OFFSET = 0, 40, 64  # CUpti_CallbackData (cupti_callbacks.h)
CALLBACK_T = C.CFUNCTYPE(None, C.c_void_p, C.c_int, C.c_uint32, C.c_void_p)


class LaunchCallbacks:
    """One CUPTI subscriber on the launch callbacks; calls on_enter/on_exit(ctx, correlation)."""

    def __init__(self, cupti, on_enter=None, on_exit=None, resource=False):
        self.cupti, self.on_enter, self.on_exit = cupti, on_enter, on_exit
        self.launches, self.errors, self.resource_events = 0, [], 0
        self._fn = CALLBACK_T(self.callback)
        self.subscriber = C.c_void_p()
        cupti.check("cuptiSubscribe", cupti.lib.cuptiSubscribe(C.byref(self.subscriber), self._fn, None))
        for cbid in LAUNCH_CBIDS:
            cupti.check("cuptiEnableCallback", cupti.lib.cuptiEnableCallback(1, self.subscriber,
                                                                              DOMAIN_DRIVER_API, cbid))
        for cbid in (RESOURCE_CBIDS if resource else ()):  # as Proton: context created/destroyed, module (un)load
            cupti.check("cuptiEnableCallback", cupti.lib.cuptiEnableCallback(1, self.subscriber, DOMAIN_RESOURCE, cbid))

    def callback(self, userdata, domain, cbid, data):
        try:
            if domain != DOMAIN_DRIVER_API:
                self.resource_events += 1
                return
            site = C.c_uint32.from_address(data + CB_SITE_OFFSET).value
            ctx = C.c_void_p.from_address(data + CB_CONTEXT_OFFSET).value
            correlation = C.c_uint32.from_address(data + CB_CORRELATION_OFFSET).value
            if site == 0:
                self.launches += 1
                if self.on_enter:
                    self.on_enter(ctx, correlation)
            elif self.on_exit:
                self.on_exit(ctx, correlation)
        except Exception as exc:  # never raise into CUPTI
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def close(self):
        self.cupti.lib.cuptiUnsubscribe(self.subscriber)


# ----------------------------------------------------------------------------- activity records
class Activity:
    """Kernel activity records through ctypes, to read the correlation ids CUPTI gives each launch."""

    def __init__(self, cupti, kind=KIND_CONCURRENT_KERNEL):
        self.cupti, self.kernels, self.buffers = cupti, [], []
        req_t = C.CFUNCTYPE(None, C.POINTER(C.c_void_p), C.POINTER(C.c_size_t), C.POINTER(C.c_size_t))
        done_t = C.CFUNCTYPE(None, C.c_void_p, C.c_uint32, C.c_void_p, C.c_size_t, C.c_size_t)
        self._req, self._done = req_t(self.requested), done_t(self.completed)
        cupti.check("cuptiActivityRegisterCallbacks", cupti.lib.cuptiActivityRegisterCallbacks(self._req, self._done))
        # Proton enables KIND_KERNEL when PC sampling is on ("continuous PC sampling is not compatible with
        # concurrent kernel profiling", CuptiProfiler.cpp); both record kinds share CUpti_ActivityKernel's layout.
        cupti.check("cuptiActivityEnable", cupti.lib.cuptiActivityEnable(kind))

    def requested(self, buf, size, max_records):
        block = (C.c_uint8 * (8 << 20))()
        self.buffers.append(block)
        buf[0] = C.cast(block, C.c_void_p).value
        size[0] = C.sizeof(block)
        max_records[0] = 0

    def completed(self, ctx, stream, buf, size, valid):
        record = C.c_void_p(0)
        while self.cupti.lib.cuptiActivityGetNextRecord(C.c_void_p(buf), C.c_size_t(valid), C.byref(record)) == 0:
            base = record.value
            kind = C.c_uint32.from_address(base).value
            if kind in (KIND_KERNEL, KIND_CONCURRENT_KERNEL):
                self.kernels.append((C.c_uint32.from_address(base + KERNEL_CORRELATION_OFFSET).value,
                                     C.c_uint64.from_address(base + KERNEL_END_OFFSET).value
                                     - C.c_uint64.from_address(base + KERNEL_START_OFFSET).value))

    def flush(self):
        self.cupti.check("cuptiActivityFlushAll", self.cupti.lib.cuptiActivityFlushAll(1))
        taken, self.kernels = self.kernels, []
        return taken


# ----------------------------------------------------------------------------- PC sampling
class Sampler:
    def __init__(self, cupti, ctx, args):
        self.cupti, self.ctx, self.args = cupti, ctx, args
        self.names = {}

    def enable(self):
        self.cupti.call("cuptiPCSamplingEnable", CtxParams(ctx=self.ctx))

    def stall_reasons(self):
        count = C.c_size_t()
        self.cupti.call("cuptiPCSamplingGetNumStallReasons", NumStallParams(ctx=self.ctx, numStallReasons=C.pointer(count)))
        n = count.value
        self.indices = (C.c_uint32 * n)()
        bufs = [C.create_string_buffer(128) for _ in range(n)]
        names = (C.c_char_p * n)(*[C.cast(b, C.c_char_p) for b in bufs])
        self.cupti.call("cuptiPCSamplingGetStallReasons",
                        StallParams(ctx=self.ctx, numStallReasons=n, stallReasonIndex=self.indices, stallReasons=names))
        self.names = {self.indices[i]: bufs[i].value.decode() for i in range(n)}
        RESULT["num_stall_reasons"] = n
        if self.args.reasons == "proton":  # Proton's rule: name contains one of its metric names (case-sensitive)
            keep = [i for i in range(n) if any(m in bufs[i].value.decode() for m in PROTON_METRIC_NAMES)]
            self.indices = (C.c_uint32 * len(keep))(*[self.indices[i] for i in keep])
            self.collected = {self.indices[j]: self.names[self.indices[j]] for j in range(len(keep))}
        elif self.args.reasons == "stall":  # leave out counters that are not stall reasons (sample_count, dropped)
            keep = [i for i in range(n) if "_stalled_" in bufs[i].value.decode()
                    and not bufs[i].value.decode().endswith("_not_issued")]
            self.indices = (C.c_uint32 * len(keep))(*[self.indices[i] for i in keep])
            self.collected = {self.indices[j]: self.names[self.indices[j]] for j in range(len(keep))}
        else:
            self.collected = dict(self.names)
        RESULT["collected_reasons"] = len(self.collected)
        return self.names

    def allocate(self, num_pcs):
        # Proton sizes each stallReason array to the configured reasons and leaves PCData.size zero (calloc).
        n = max(1, len(self.collected) if self.args.pc_size == "zero" else len(self.names))
        self.pcs = (PCData * num_pcs)()
        self.stalls = [(StallReason * n)() for _ in range(num_pcs)]
        for i in range(num_pcs):
            self.pcs[i].size = C.sizeof(PCData) if self.args.pc_size == "struct" else 0
            self.pcs[i].stallReason = C.cast(self.stalls[i], C.POINTER(StallReason))
        self.data = SamplingData(size=C.sizeof(SamplingData), collectNumPcs=num_pcs,
                                 pPcData=C.cast(self.pcs, C.POINTER(PCData)))

    def configure_one(self, name, value):
        info = ConfigInfo(attributeType=ATTR[name])
        if name == "stall_reason":
            info.data[0], info.data[1] = len(self.collected), C.cast(self.indices, C.c_void_p).value
        elif name == "data_buffer":
            info.data[0] = C.addressof(self.data)
        else:
            info.data[0] = value
        params = ConfigParams(ctx=self.ctx, numAttributes=1, info=C.pointer(info))
        self.cupti.call("cuptiPCSamplingSetConfigurationAttribute", params)
        return f"{name}={value} status={info.attributeStatus}"

    def configure_proton(self, mode):
        """Proton's attribute set and order, in ONE SetConfigurationAttribute call."""
        values = [("stall_reason", None), ("period", 10), ("hardware", 128 << 20), ("scratch", 16 << 20),
                  ("data_buffer", None), ("start_stop", 1), ("mode", MODE[mode])]
        infos = (ConfigInfo * len(values))()
        for info, (name, value) in zip(infos, values):
            info.attributeType = ATTR[name]
            if name == "stall_reason":
                info.data[0], info.data[1] = len(self.collected), C.cast(self.indices, C.c_void_p).value
            elif name == "data_buffer":
                info.data[0] = C.addressof(self.data)
            else:
                info.data[0] = value
        self.cupti.call("cuptiPCSamplingSetConfigurationAttribute",
                        ConfigParams(ctx=self.ctx, numAttributes=len(values), info=C.cast(infos, C.POINTER(ConfigInfo))))
        return {name: infos[i].attributeStatus for i, (name, _) in enumerate(values)}

    def read_attribute(self, name):
        info = ConfigInfo(attributeType=ATTR[name])
        self.cupti.call("cuptiPCSamplingGetConfigurationAttribute",
                        ConfigParams(ctx=self.ctx, numAttributes=1, info=C.pointer(info)))
        return info.data[0]

    before_start = None  # e.g. cuCtxSynchronize, as Proton does before every Start

    def ctl(self, what):
        if what == "Start" and self.before_start:
            self.before_start()
        self.cupti.call(f"cuptiPCSampling{what}", CtxParams(ctx=self.ctx))

    def take(self, records, stats):
        """Add what the configured buffer holds now (its totals and PC records) and mark it consumed."""
        d = self.data
        stats["totalSamples"] += d.totalSamples
        stats["droppedSamples"] += d.droppedSamples
        stats["nonUser"] += d.nonUsrKernelsTotalSamples
        stats["hwFull"] |= d.hardwareBufferFull
        stats["rangeIds"].add(d.rangeId)
        for i in range(min(d.totalNumPcs, len(self.pcs))):
            pc = self.pcs[i]
            stalls = {pc.stallReason[j].index: pc.stallReason[j].samples for j in range(pc.stallReasonCount)}
            records.append(dict(crc=pc.cubinCrc, pc=pc.pcOffset, fn=(pc.functionName or b"").decode(),
                                fidx=pc.functionIndex, corr=pc.correlationId, stalls=stalls))
        d.totalNumPcs = 0
        d.totalSamples = d.droppedSamples = d.nonUsrKernelsTotalSamples = 0

    def drain(self, retries=None):
        """GetData until nothing remains; returns aggregated records and buffer stats."""
        retries = self.args.empty_retries if retries is None else retries
        records, stats = [], dict(calls=0, totalSamples=0, droppedSamples=0, nonUser=0, hwFull=0, rangeIds=set())
        empty_rounds = 0
        if self.args.read_after_stop:  # Proton reads the configured buffer (filled by Stop?) before GetData
            self.take(records, stats)
            stats["after_stop_pcs"] = stats.get("after_stop_pcs", 0) + len(records)
        while True:
            self.data.totalNumPcs = 0
            self.cupti.call("cuptiPCSamplingGetData", GetDataParams(ctx=self.ctx, data=C.addressof(self.data)))
            stats["calls"] += 1
            self.take(records, stats)
            if self.data.totalNumPcs == 0 and self.data.remainingNumPcs == 0 and not records \
                    and empty_rounds < retries:
                empty_rounds += 1  # CUPTI's worker threads decode the hardware buffer every sleep span
                time.sleep(self.args.wait_ms / 1000)
                continue
            if self.data.remainingNumPcs == 0 or stats["calls"] > 1000:
                break
        stats["rangeIds"] = sorted(stats["rangeIds"])[:8]
        stats["empty_rounds"] = empty_rounds
        return records, stats


# ----------------------------------------------------------------------------- Triton workload
def make_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def slow_line_kernel(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        acc = tl.load(x_ptr + offs)
        for _ in range(n_iter):
            acc = tl.sqrt(acc * acc + 1.0) * 0.999 + tl.sin(acc)  # PROBE_SLOW_LINE
        tl.store(out_ptr + offs, acc)

    @triton.jit
    def tiny_kernel(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)

    return slow_line_kernel, tiny_kernel


def slow_line_number():
    for number, text in enumerate(open(HERE), 1):
        if text.rstrip().endswith("# PROBE_SLOW_LINE") and "tl.sqrt" in text:
            return number
    raise RuntimeError("the probe's slow line (marked PROBE_SLOW_LINE) is gone from " + HERE)


def cubin_of(compiled):
    asm = getattr(compiled, "asm", {}) or {}
    name = getattr(compiled, "name", None) or getattr(getattr(compiled, "metadata", None), "name", None)
    return asm.get("cubin"), name


# ----------------------------------------------------------------------------- the run of one mode
def run_mode(args):
    import torch
    cupti = step("load cupti", Cupti)
    if cupti is None:
        return
    print(f"  cuptiGetVersion = {cupti.version}")
    RESULT["cupti_version"] = cupti.version
    torch.cuda.init()
    x = torch.rand(1 << 22, device="cuda")
    out = torch.empty_like(x)
    small = torch.zeros(128, device="cuda")
    slow, tiny = make_kernels()
    grid_gpu = (x.numel() // 1024,)
    compiled_slow = step("compile slow kernel", lambda: slow[(4,)](x, out, 2000, BLOCK=1024))
    step("compile tiny kernel", lambda: tiny[(1,)](small, BLOCK=128))
    torch.cuda.synchronize()
    cuda = C.CDLL("libcuda.so.1")
    ctx = C.c_void_p()
    step("cuCtxGetCurrent", lambda: (cuda.cuCtxGetCurrent(C.byref(ctx)), hex(ctx.value or 0))[1])
    loops = cost_loops(slow, tiny, x, out, small, grid_gpu, torch)
    if args.cost:
        step("cost before PC sampling is enabled", measure_before_enable, loops)
    if not args.activity:
        args.activity_kind = "none"
    kind = {"concurrent": KIND_CONCURRENT_KERNEL, "kernel": KIND_KERNEL}.get(args.activity_kind)
    activity = step(f"activity API ({args.activity_kind} records)", Activity, cupti, kind) if kind else None
    print(f"  setup: activity={args.activity_kind} reasons={args.reasons} pc_size={args.pc_size} "
          f"read_after_stop={args.read_after_stop} resource_callbacks={args.resource_callbacks}")
    sampler = Sampler(cupti, ctx, args)
    if args.sequence == "callbacks":
        run_callbacks(args, cupti, sampler, activity, slow, x, out, compiled_slow, torch)
        print("RESULT " + json.dumps(RESULT))
        return
    noop_subscriber = None  # kept referenced until the end: CUPTI calls its ctypes callback
    if args.subscribe:  # the backend always has one subscriber (the activity tracer): same here
        noop_subscriber = step("subscribe to launch callbacks (no-op)", LaunchCallbacks, cupti)
    step("cuptiPCSamplingEnable", sampler.enable)
    names = step("stall reasons", sampler.stall_reasons) or {}
    for index, name in sorted(names.items()):
        print(f"    {index:3d} {name}")
    sampler.allocate(args.num_pcs)
    if args.config == "proton":
        step("config (one call, Proton's set)", sampler.configure_proton, args.mode)
    else:
        for name, value in [("sleep_span", args.sleep_ms), ("period", args.period), ("stall_reason", None),
                            ("scratch", args.scratch_mb << 20), ("hardware", args.hardware_mb << 20),
                            ("mode", MODE[args.mode]), ("start_stop", 1), ("output_format", 1), ("data_buffer", None)]:
            step(f"config {name}", sampler.configure_one, name, value)
    for name in ("period", "scratch", "hardware", "mode", "sleep_span"):
        step(f"read back {name}", sampler.read_attribute, name)
    if activity:
        activity.flush()
    if args.ctx_sync:
        sampler.before_start = lambda: cuda.cuCtxSynchronize()

    # 1. the slow-line kernel, several launches, one drain at the end
    def sampled_launches():
        sampler.ctl("Start")
        for _ in range(args.slow_launches):
            slow[(132,)](x, out, 4000, BLOCK=1024)
        torch.cuda.synchronize()
        sampler.ctl("Stop")
        return sampler.drain()

    if args.late_module:  # a new specialisation (BLOCK=512) loads its module after Enable
        def late_launches():
            sampler.ctl("Start")
            for _ in range(args.slow_launches):
                compiled = slow[(264,)](x, out, 4000, BLOCK=512)
            torch.cuda.synchronize()
            sampler.ctl("Stop")
            return sampler.drain(), compiled
        late = step("late-module kernel: start, launches, stop, drain", late_launches)
        if late:
            (records, stats), compiled_late = late
            print(f"  late-module stats {stats} records {len(records)}")
            RESULT["late_records"] = len(records)
            RESULT["late_samples"] = sum(sum(r["stalls"].values()) for r in records)
    got = step("slow kernel: start, launches, stop, one drain", sampled_launches)
    records, stats = got if got else ([], {})
    print(f"  stats {stats}")
    RESULT["total_samples"], RESULT["non_user"] = stats.get("totalSamples"), stats.get("nonUser")
    kernels = activity.flush() if activity else []
    report_records(records, stats, kernels, names, compiled_slow, cupti)
    if noop_subscriber:
        print(f"  launch callbacks seen by the no-op subscriber: {noop_subscriber.launches}")

    # 2. cost: interleaved off / on, tiny launches and a GPU-bound kernel
    if args.cost:
        step("cost (sampling started vs stopped, interleaved)", measure_cost, sampler, loops)
    if activity:
        step("activity after cost", lambda: len(activity.flush()))
    step("cuptiPCSamplingDisable", sampler.ctl, "Disable")
    print("RESULT " + json.dumps(RESULT))


def run_callbacks(args, cupti, sampler, activity, slow, x, out, compiled_slow, torch):
    """Proton's order: Enable + configure at the first launch ENTER of the context, then per launch
    cuCtxSynchronize + Start at ENTER and Stop + GetData at EXIT."""
    cuda = C.CDLL("libcuda.so.1")
    state = dict(ready=False, records=[], stats=[], per_launch={})

    def on_enter(ctx, correlation):
        if not state["ready"]:
            sampler.ctx = ctx
            sampler.enable()
            sampler.stall_reasons()
            sampler.allocate(1024)  # Proton's DataBufferPCCount
            state["config_status"] = sampler.configure_proton(args.mode)
            state["ready"] = True
        cuda.cuCtxSynchronize()
        sampler.ctl("Start")

    def on_exit(ctx, correlation):
        if not state["ready"]:
            return
        sampler.ctl("Stop")
        records, stats = sampler.drain(retries=0)
        state["records"] += records
        state["stats"].append(stats)
        state["per_launch"][correlation] = (stats["totalSamples"], len(records))

    callbacks = step("subscribe to launch callbacks (Proton's order)", LaunchCallbacks, cupti, on_enter, on_exit,
                     args.resource_callbacks)
    if callbacks is None:
        return

    def launches():
        for _ in range(args.slow_launches):
            slow[(132,)](x, out, 4000, BLOCK=1024)
        torch.cuda.synchronize()
        return callbacks.launches

    step("slow kernel: launches with Start/Stop in callbacks", launches)
    callbacks.close()
    print(f"  callback errors: {callbacks.errors[:5]}")
    print(f"  config status per attribute: {state.get('config_status')}")
    print(f"  per launch (callback correlation: totalSamples, PC records): {state['per_launch']}")
    if callbacks.errors:
        RESULT.setdefault("failed", []).append("callbacks: " + callbacks.errors[0][:80])
    stats = {"calls": 0, "totalSamples": 0, "droppedSamples": 0, "nonUser": 0, "hwFull": 0, "after_stop_pcs": 0}
    for one in state["stats"]:
        for key in stats:
            stats[key] += one.get(key, 0)
    RESULT["after_stop_pcs"] = stats["after_stop_pcs"]
    print(f"  stats {stats}")
    RESULT["total_samples"], RESULT["non_user"] = stats["totalSamples"], stats["nonUser"]
    kernels = activity.flush() if activity else []
    report_records(state["records"], stats, kernels, sampler.names, compiled_slow, cupti)
    if state["ready"]:
        step("cuptiPCSamplingDisable", sampler.ctl, "Disable")


def report_records(records, stats, kernels, names, compiled_slow, cupti):
    total = sum(sum(r["stalls"].values()) for r in records)
    by_corr = {}
    for r in records:
        by_corr[r["corr"]] = by_corr.get(r["corr"], 0) + sum(r["stalls"].values())
    kernel_corr = sorted(c for c, _ in kernels)
    print(f"  PC records: {len(records)}, samples in records: {total}, GetData calls: {stats.get('calls')}")
    print(f"  samples per record correlationId: {dict(sorted(by_corr.items())[:20])}")
    print(f"  activity kernel correlation ids: {kernel_corr[:20]} durations(ns): {[d for _, d in kernels][:10]}")
    matched = sorted(set(by_corr) & set(kernel_corr))
    print(f"  record correlation ids that match activity kernels: {len(matched)} of {len(by_corr)}")
    per_reason = {}
    for r in records:
        for index, count in r["stalls"].items():
            per_reason[names.get(index, index)] = per_reason.get(names.get(index, index), 0) + count
    print(f"  samples per stall reason: {dict(sorted(per_reason.items(), key=lambda kv: -kv[1])[:12])}")
    RESULT.update(records=len(records), samples=total, distinct_correlation=len(by_corr),
                  matched_correlation=len(matched), activity_kernels=len(kernels),
                  dropped=stats.get("droppedSamples"), hw_full=stats.get("hwFull"),
                  kernel_ns=sum(d for _, d in kernels))
    if not records:
        return
    cubin, fn_name = cubin_of(compiled_slow) if compiled_slow is not None else (None, None)
    print(f"  triton cubin: {len(cubin) if cubin else None} bytes, name {fn_name}")
    if not cubin:
        return
    buf = C.create_string_buffer(cubin, len(cubin))
    crc = step("cuptiGetCubinCrc", lambda: cupti.call("cuptiGetCubinCrc", CrcParams(cubinSize=len(cubin),
                                                                                      cubin=C.addressof(buf))).cubinCrc)
    print(f"  crc {crc} record crcs {sorted({r['crc'] for r in records})[:4]} record fns {sorted({r['fn'] for r in records})[:4]}")
    line_samples = {}
    for r in records:
        if r["crc"] != crc:
            continue
        line = step_quiet_line(cupti, buf, len(cubin), r["fn"], r["pc"])
        line_samples[line] = line_samples.get(line, 0) + sum(r["stalls"].values())
    top = sorted(line_samples.items(), key=lambda kv: -kv[1])[:6]
    print(f"  samples per source line (top): {top}")
    slow_line = slow_line_number()
    on_slow = sum(c for (f, l, d), c in line_samples.items() if l == slow_line and f and f in HERE)
    share = on_slow / max(1, sum(line_samples.values()))
    print(f"  slow line {slow_line}: {on_slow} samples, share {share:.2f}")
    RESULT["slow_line_share"] = round(share, 3)


def step_quiet_line(cupti, buf, size, fn, pc):
    params = SassParams(cubin=C.addressof(buf), functionName=fn.encode(), cubinSize=size, pcOffset=pc)
    params.size = C.sizeof(params)
    status = cupti.lib.cuptiGetSassToSourceCorrelation(C.byref(params))
    if status != 0:
        return ("<status %d>" % status, 0, "")
    libc = C.CDLL(None)
    f = C.string_at(params.fileName).decode() if params.fileName else ""
    d = C.string_at(params.dirName).decode() if params.dirName else ""
    for p in (params.fileName, params.dirName):  # the caller frees both (cupti_pcsampling.h)
        if p:
            libc.free(C.c_void_p(p))
    return (f, params.lineNumber, d)


def cost_loops(slow, tiny, x, out, small, grid_gpu, torch):
    """The two timed workloads: 2,000 tiny launches (wall s) and one GPU-bound launch (device ms)."""
    def tiny_loop():
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(2000):
            tiny[(1,)](small, BLOCK=128)
        torch.cuda.synchronize()
        return time.perf_counter() - t

    def gpu_bound():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        slow[grid_gpu](x, out, 200, BLOCK=1024)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    return tiny_loop, gpu_bound


def measure_before_enable(loops):
    tiny_loop, gpu_bound = loops
    tiny = sorted(tiny_loop() for _ in range(3))[1]
    gpu = sorted(gpu_bound() for _ in range(3))[1]
    RESULT["tiny_pre_s"], RESULT["gpu_pre_ms"] = round(tiny, 5), round(gpu, 4)
    return RESULT["tiny_pre_s"], RESULT["gpu_pre_ms"]


def measure_cost(sampler, loops):
    tiny_loop, gpu_bound = loops
    timings = {"tiny_off": [], "tiny_on": [], "gpu_off": [], "gpu_on": [], "drain_s": []}
    for _ in range(3):
        for state in ("off", "on"):
            if state == "on":
                sampler.ctl("Start")
            timings[f"tiny_{state}"].append(tiny_loop())
            timings[f"gpu_{state}"].append(gpu_bound())
            if state == "on":
                sampler.ctl("Stop")
                t = time.perf_counter()
                sampler.drain()
                timings["drain_s"].append(time.perf_counter() - t)
    med = {k: sorted(v)[len(v) // 2] for k, v in timings.items() if v}
    RESULT["tiny_ratio"] = round(med["tiny_on"] / med["tiny_off"], 3)
    RESULT["gpu_ratio"] = round(med["gpu_on"] / med["gpu_off"], 3)
    RESULT["drain_s"] = round(med["drain_s"], 4)
    RESULT["tiny_off_vs_pre"] = round(med["tiny_off"] / RESULT.get("tiny_pre_s", float("nan")), 3)
    return {k: round(v, 5) for k, v in med.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="all", choices=["all", "continuous", "serialized"])
    parser.add_argument("--period", type=int, default=10, help="log2 of the sampling period in cycles (5..31)")
    parser.add_argument("--num-pcs", type=int, default=10000)
    parser.add_argument("--scratch-mb", type=int, default=16)
    parser.add_argument("--hardware-mb", type=int, default=512)
    parser.add_argument("--slow-launches", type=int, default=5)
    parser.add_argument("--no-activity", dest="activity", action="store_false")
    parser.add_argument("--reasons", default="stall", choices=["stall", "all", "proton"],
                        help="configure only *_stalled_* reasons without _not_issued (default), all, or Proton's "
                             "name-match set (not_issued included)")
    parser.add_argument("--activity-kind", default="concurrent", choices=["concurrent", "kernel", "none"],
                        help="kernel activity kind enabled next to PC sampling (Proton: kernel)")
    parser.add_argument("--pc-size", default="struct", choices=["struct", "zero"],
                        help="PCData.size = sizeof (ours) or left 0 as Proton's calloc leaves it")
    parser.add_argument("--read-after-stop", action="store_true",
                        help="take what the configured buffer holds right after Stop, before GetData (Proton)")
    parser.add_argument("--resource-callbacks", action="store_true",
                        help="also enable the resource-domain callbacks Proton enables (module/context)")
    parser.add_argument("--late-module", action="store_true", help="also launch a kernel loaded after Enable")
    parser.add_argument("--wait-ms", type=int, default=150, help="sleep between empty GetData retries")
    parser.add_argument("--empty-retries", type=int, default=4)
    parser.add_argument("--sleep-ms", type=int, default=10, help="CUPTI worker thread sleep span (ms)")
    parser.add_argument("--no-cost", dest="cost", action="store_false")
    parser.add_argument("--sequence", default="startonce", choices=["startonce", "callbacks"],
                        help="Start once around all launches, or Start/Stop in launch callbacks (Proton's order)")
    parser.add_argument("--config", default="split", choices=["split", "proton"],
                        help="one attribute per call (round 2) or Proton's set in one call")
    parser.add_argument("--ctx-sync", action="store_true", help="cuCtxSynchronize before every Start")
    parser.add_argument("--subscribe", action="store_true", help="start-once with a no-op launch-callback subscriber")
    parser.add_argument("--budget-s", type=float, default=58, help="whole probe (all variants) wall-clock limit")
    parser.add_argument("--out", default=os.environ.get("OUT", ""))
    args = parser.parse_args()
    if args.mode != "all":
        run_mode(args)
        return
    run_all(args)


# Each variant runs in its own process: PC sampling is enabled once per context and CUPTI keeps
# state per process. Round 2's start-once variants are left out (all gave 0; logs kept).
PROTON_EXACT = ["--mode", "continuous", "--sequence", "callbacks", "--reasons", "proton", "--pc-size", "zero",
                "--read-after-stop", "--activity-kind", "kernel", "--resource-callbacks"]
VARIANTS = [  # round 6: every callbacks / start-once variant gave 0 samples (logs kept); each below changes ONE
    # suspect of the round-6 "callbacks continuous (Proton)" setup toward Proton, the first changes all of them.
    ("proton-exact", PROTON_EXACT),
    ("read-after-stop", ["--mode", "continuous", "--sequence", "callbacks", "--read-after-stop"]),
    ("kernel-activity", ["--mode", "continuous", "--sequence", "callbacks", "--activity-kind", "kernel"]),
    ("no-activity", ["--mode", "continuous", "--sequence", "callbacks", "--activity-kind", "none"]),
    ("proton-reasons+zero-pc-size", ["--mode", "continuous", "--sequence", "callbacks", "--reasons", "proton",
                                     "--pc-size", "zero"]),
    ("resource-callbacks", ["--mode", "continuous", "--sequence", "callbacks", "--resource-callbacks"]),
]


def run_all(args):
    rows = []
    deadline = time.monotonic() + args.budget_s
    base = [sys.executable, HERE, "--period", str(args.period), "--num-pcs", str(args.num_pcs),
            "--scratch-mb", str(args.scratch_mb), "--no-cost", "--empty-retries", "2", "--wait-ms", "100"]
    for label, extra in VARIANTS:
        left = deadline - time.monotonic()
        print(f"\n===== {label} ({left:.0f} s left) =====", flush=True)
        if left < 5:
            rows.append((label, {"failed": ["no time left"]}))
            continue
        try:
            proc = subprocess.run(base + extra, capture_output=True, text=True, timeout=min(left, 30))
            text = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            partial = exc.stdout or ""
            text = (partial.decode(errors="replace") if isinstance(partial, bytes) else partial) + "\nTIMEOUT"
        print(text, flush=True)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            name = "probe_" + "".join(c if c.isalnum() else "_" for c in label) + ".log"
            with open(os.path.join(args.out, name), "w") as f:
                f.write(text)
        result = next((json.loads(l[7:]) for l in text.splitlines() if l.startswith("RESULT ")), {})
        rows.append((label, result))
    keys = ["total_samples", "after_stop_pcs", "non_user", "records", "samples", "distinct_correlation", "matched_correlation",
            "activity_kernels", "slow_line_share", "dropped", "failed"]
    print("\n| variant | " + " | ".join(keys) + " |")
    print("|" + "---|" * (len(keys) + 1))
    for label, result in rows:
        print(f"| {label} | " + " | ".join(str(result.get(k, "-")) for k in keys) + " |")


if __name__ == "__main__":
    main()
