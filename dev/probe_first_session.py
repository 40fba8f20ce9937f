"""The first session's small costs, each in a fresh process with torch + cuBLAS
busy: the device-facts query cold before any session and cold inside one (CUPTI subscribed),
and the steps of the first start. Prints one line per process.

    python3 dev/probe_first_session.py [--runs 3] [--detail]

--start: the pieces of the first start() and finalize() around bench/session_cost.py's workload
(10 tiny Triton kernels + 10 matmuls), one fresh process per run, medians.

--detail: per driver query (libcuda through ctypes, cold in a fresh process), and the pieces of
the first finalize's writes (device facts, the profile's request, the native write, the metadata).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import json, os, sys, tempfile, time
import torch
a = torch.randn(256, 256, device="cuda"); (a @ a).sum().item()
t = time.perf_counter
t0 = t(); import flagtree.profiler as profiler; from flagtree.profiler import _native; t1 = t()
out = {"import_ms": (t1 - t0) * 1e3}
if sys.argv[1] == "before":
    t0 = t(); _native.nvidia.cuda_devices(); out["cuda_devices_cold_ms"] = (t() - t0) * 1e3
    t0 = t(); _native.nvidia.cuda_devices(); out["cuda_devices_warm_ms"] = (t() - t0) * 1e3
else:
    base = os.path.join(tempfile.mkdtemp(), "p")
    t0 = t(); profiler.start(base, backend="nvidia"); out["start_ms"] = (t() - t0) * 1e3
    t0 = t(); _native.nvidia.cuda_devices(); out["cuda_devices_cold_in_session_ms"] = (t() - t0) * 1e3
    a @ a; torch.cuda.synchronize()
    t0 = t(); profiler.finalize(); out["finalize_ms"] = (t() - t0) * 1e3
    profiler.release()
print(json.dumps({k: round(v, 3) for k, v in out.items()}))
'''

# The children's wrapper: the time spent in owner.attr, summed into out[label].
TIMED = r'''
def timed(owner, attr, label):
    original = getattr(owner, attr)
    def wrapper(*args, **kwargs):
        t0 = t()
        try:
            return original(*args, **kwargs)
        finally:
            out[label] = out.get(label, 0.0) + t() - t0
    setattr(owner, attr, wrapper)
'''

DETAIL = r'''
import ctypes, json, os, sys, tempfile, time
import torch
a = torch.randn(256, 256, device="cuda"); (a @ a).sum().item()
t = time.perf_counter
out = {}
cuda = ctypes.CDLL("libcuda.so.1")
dev = ctypes.c_int(); v = ctypes.c_int(); name = ctypes.create_string_buffer(256)
t0 = t(); cuda.cuDeviceGet(ctypes.byref(dev), 0); out["cuDeviceGet"] = t() - t0
t0 = t(); cuda.cuDeviceGetName(name, 256, dev); out["cuDeviceGetName"] = t() - t0
# compute capability major/minor, SMs, clock, memory clock, bus width (cuda.h values)
for label, attr in (("cc_major", 75), ("cc_minor", 76), ("sms", 16), ("clock_rate", 13), ("memory_clock_rate", 36), ("bus_width", 37)):
    t0 = t(); cuda.cuDeviceGetAttribute(ctypes.byref(v), attr, dev); out["attr_" + label] = t() - t0
    t0 = t(); cuda.cuDeviceGetAttribute(ctypes.byref(v), attr, dev); out["attr_" + label + "_again"] = t() - t0
import flagtree.profiler as profiler
from flagtree.profiler import _native, session as session_module, session_outputs
from flagtree.profiler.writers import profile as profile_writer
{timed}
timed(profile_writer, "_tree_request", "write.tree_request")
timed(_native.dump, "session_write", "write.native_session_write")
timed(session_outputs, "write_profile", "write.write_profile")
timed(session_outputs, "build_metadata", "write.build_metadata")
timed(session_outputs, "write_metadata", "write.write_metadata")
timed(session_outputs, "remove", "write.remove_old_metadata")
timed(session_module, "_close", "finalize._close")
timed(_native.session, "session_stats", "write.session_stats")
timed(_native.session, "session_settle_extras", "write.settle_extras")
timed(_native.session, "pending_launches", "write.pending_launches")
base = os.path.join(tempfile.mkdtemp(), "p")
t0 = t(); profiler.start(base, backend="nvidia"); out["start"] = t() - t0
t0 = t(); _native.nvidia.cuda_devices(); out["cuda_devices_in_session"] = t() - t0
a @ a; torch.cuda.synchronize()
t0 = t(); profiler.finalize(); out["finalize"] = t() - t0
profiler.release()
print(json.dumps({k: round(v * 1e3, 3) for k, v in out.items()}))
'''

START = r'''
import json, os, sys, tempfile, time
sys.path.insert(0, sys.argv[2])
import session_cost
work = session_cost._workload()
t = time.perf_counter
import flagtree.profiler as profiler
from flagtree.profiler import _native, session as session_module, session_outputs
from flagtree.profiler.backends.nvidia import backend as nvidia
out = {}
{timed}
for attr in ("check_arguments", "check_writable", "output_paths", "_acquire", "write_outputs", "_close"):
    timed(session_module, attr, "session." + attr)
for attr in ("remove", "build_metadata", "write_profile", "write_metadata"):
    timed(session_outputs, attr, "session_outputs." + attr)
timed(session_module.ranks, "output_base", "session.output_base")
timed(session_module.gather, "after_finalize", "session.gather")
for attr in ("acquire", "attach_session", "dropped_records", "flush", "session_outputs", "metadata_facts", "release"):
    timed(nvidia.NvidiaBackend, attr, "backend." + attr)
for attr in ("cupti_acquire", "session_create", "cuda_driver_version", "cupti_flush", "cupti_release",
             "cuda_devices_prefetch", "cuda_devices_take", "session_write"):
    timed(_native, attr, "native." + attr)
from flagtree.profiler.backends.nvidia import cupti_attach
timed(cupti_attach, "after_release", "backend.after_release")
timed(nvidia._DeviceFacts, "prefetch", "backend.device_facts_prefetch")
timed(session_module.inheritance, "install", "session.hooks_install")
timed(nvidia._DeviceFacts, "get", "backend.device_facts_get")
base = os.path.join(tempfile.mkdtemp(), "p")
t0 = t(); profiler.start(base, backend="nvidia"); out["start"] = t() - t0
t0 = t(); work(); out["work"] = t() - t0
t0 = t(); profiler.finalize(); out["finalize"] = t() - t0
for step, ns in _native.nvidia.cupti_attach_stats()["start_phases_ns"].items():
    out["tracer." + step] = ns * 1e-9
profiler.release()
print(json.dumps({k: round(v * 1e3, 3) for k, v in sorted(out.items())}))
'''

DETAIL = DETAIL.replace("{timed}", TIMED)
START = START.replace("{timed}", TIMED)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--detail", action="store_true")
    parser.add_argument("--start", action="store_true")
    args = parser.parse_args()
    if args.start:
        bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench")
        samples = []
        for _ in range(args.runs):
            done = subprocess.run([sys.executable, "-c", START, "first", bench], capture_output=True, text=True,
                                  timeout=120)
            if done.returncode:
                print(done.stderr.strip()[-600:], flush=True)
                continue
            samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
        if samples:
            labels = sorted({k for r in samples for k in r})
            med = {k: round(sorted(r.get(k, 0.0) for r in samples)[len(samples) // 2], 3) for k in labels}
            print(f"first session, median of {len(samples)}", json.dumps(med), flush=True)
        return
    if args.detail:
        for _ in range(args.runs):
            done = subprocess.run([sys.executable, "-c", DETAIL], capture_output=True, text=True, timeout=120)
            print("detail", done.stdout.strip() or done.stderr.strip()[-600:], flush=True)
        return
    for _ in range(args.runs):
        for where in ("before", "inside"):
            done = subprocess.run([sys.executable, "-c", CHILD, where], capture_output=True, text=True, timeout=120)
            print(where, done.stdout.strip() or done.stderr.strip()[-400:], flush=True)


if __name__ == "__main__":
    main()
