"""PC-sample counts of one known long kernel, ours against Proton's, each in a fresh process
(GPU machine). The kernel (every SM busy for ~0.2 ms) gets tens of thousands of samples at
interval 10, so the two profilers' counts can be compared as a ratio, and ours against CUPTI's
own totals (attributed + non-user + unattributed == total when nothing is lost).

  python dev/pcsampling_count.py          prints JSON lines
"""
import json
import os
import sys
import tempfile

from fresh_process import run_script

COMMON = r'''
import json, sys, torch, triton, triton.language as tl

@triton.jit
def spin_kernel(out, n_iter, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.full((BLOCK,), 1.0, tl.float32) + offs
    for _ in range(n_iter):
        x = x * 1.000001 + 0.5
    tl.store(out + tl.program_id(0) * BLOCK + offs, x)

SMS = torch.cuda.get_device_properties(0).multi_processor_count
out = torch.empty(SMS * 4 * 512, device="cuda")

def launch(n_iter):
    spin_kernel[(SMS * 4,)](out, n_iter, BLOCK=512, num_warps=4)

n_iter = 20000
launch(n_iter); torch.cuda.synchronize()  # compiled and loaded before anything is timed
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record(); launch(n_iter); end.record(); torch.cuda.synchronize()
kernel_ms = start.elapsed_time(end)

def samples_under(node):
    total = node.get("metrics", {}).get("num_samples", 0)
    return total + sum(samples_under(c) for c in node.get("children", []))

def kernel_samples(base):
    root = json.load(open(base + ".hatchet"))[0]
    (scope,) = [c for c in root["children"] if c["frame"]["name"] == "spin"]
    return samples_under(scope)

def per_sm_period(samples, time_ns, clock_khz, interval=10):
    """Samples per SM per 2^interval cycles while the kernels ran (1: one warp per SM sampled)."""
    return samples / (time_ns * 1e-9 * clock_khz * 1e3 * SMS / 2 ** interval)
'''

OURS = COMMON + r'''
import flagtree.profiler as profiler
base, mode = sys.argv[1:3]
profiler.start(base, backend="cupti", mode=mode)
with profiler.scope("spin"):
    for _ in range(3):
        launch(n_iter)
    torch.cuda.synchronize()
profiler.finalize()
meta = json.load(open(base + ".meta.json"))
root, device_info = json.load(open(base + ".hatchet"))
clock_khz = next(iter(device_info["CUDA"].values()))["clock_rate"]
(scope,) = [c for c in root["children"] if c["frame"]["name"] == "spin"]
time_ns = sum(k["metrics"].get("time (ns)", 0) for k in scope["children"])
print(json.dumps({"kernel_ms": round(kernel_ms, 4), "sms": SMS, "samples": kernel_samples(base),
                  "time_ns": time_ns, "per_sm_period": round(per_sm_period(kernel_samples(base), time_ns, clock_khz), 3),
                  **{k[len("pcsampling_"):]: v for k, v in meta.items() if k.startswith("pcsampling_")
                     and isinstance(v, (int, float)) and not k.endswith("_s")}}))
'''

PROTON = COMMON + r'''
import triton.profiler as proton
base = sys.argv[1]
proton.start(base, backend="cupti", mode="pcsampling")
with proton.scope("spin"):
    for _ in range(3):
        launch(n_iter)
    torch.cuda.synchronize()
proton.finalize()
print(json.dumps({"kernel_ms": round(kernel_ms, 4), "sms": SMS, "samples": kernel_samples(base)}))
'''


with tempfile.TemporaryDirectory() as tmp:
    for rep in range(2):
        for mode in ("pcsampling", "pcsampling:range=launch"):
            print(json.dumps({"profiler": "ours", "mode": mode, "rep": rep,
                              "result": run_script(OURS, [os.path.join(tmp, "o"), mode])}), flush=True)
        print(json.dumps({"profiler": "proton", "rep": rep, "result": run_script(PROTON, [os.path.join(tmp, "p")])}), flush=True)
