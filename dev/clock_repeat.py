"""Where CUPTI's kernel records and device_timer's stamps of the same launches sit against the
host scope that launched and waited for them, in several fresh processes (GPU machine)."""
import json
import statistics
import subprocess
import sys
import tempfile

SCRIPT = r'''
import json, os, statistics, sys, torch, triton
sys.path.insert(0, os.path.join(os.getcwd(), "examples"))
from triton_kernels import add_kernel
import flagtree.profiler as profiler
tmp = sys.argv[1]
x = torch.rand(1 << 22, device="cuda"); y = torch.rand_like(x); out = torch.empty_like(x)
grid = (triton.cdiv(x.numel(), 1024),)
add_kernel[grid](x, y, out, x.numel(), BLOCK=1024); torch.cuda.synchronize()
order = sys.argv[2]
backends = {"timer first": ("device_timer", "nvidia"), "nvidia first": ("nvidia", "device_timer"),
            "nvidia only": ("nvidia",)}[order]
sids = {b: profiler.start(os.path.join(tmp, b), backend=b, data="trace") for b in backends}
for i in range(6):
    with profiler.scope(f"s{i}"):
        add_kernel[grid](x, y, out, x.numel(), BLOCK=1024); torch.cuda.synchronize()
for b in reversed(backends):
    profiler.finalize(sids[b])
def rows(b):
    ev = json.load(open(os.path.join(tmp, b + ".chrome_trace")))["traceEvents"]
    sc = {e["name"]: e for e in ev if e.get("cat") == "scope"}
    ks = [k for k in ev if k.get("cat") == "kernel" and k["args"].get("context") in sc]
    return [(k["ts"] - sc[k["args"]["context"]]["ts"], sc[k["args"]["context"]]["ts"] + sc[k["args"]["context"]]["dur"] - k["ts"] - k["dur"])
            for k in ks]
out = {b: [round(statistics.median(r[i] for r in rows(b)), 1) for i in (0, 1)] for b in backends}
out["nvidia_device_clock_shift_us"] = json.load(open(os.path.join(tmp, "nvidia.meta.json"))).get("device_clock_shift_ns", 0) / 1e3
if "device_timer" in backends:
    meta = json.load(open(os.path.join(tmp, "device_timer.meta.json")))
    out["realtime_minus_probe_us"] = meta["device_timer_clock_realtime_minus_probe_ns"] / 1e3
print(json.dumps(out))
'''

with tempfile.TemporaryDirectory() as tmp:
    for order in ("timer first", "nvidia first", "nvidia only"):
        for rep in range(int(sys.argv[1]) if sys.argv[1:] else 2):
            done = subprocess.run([sys.executable, "-c", SCRIPT, tmp, order], capture_output=True, text=True, timeout=120)
            line = (done.stdout.strip().splitlines() or [done.stderr[-300:]])[-1]
            print(order, "(per route: kernel start after scope begin, scope end after kernel end; us):", line)
