"""What the device_timer stamps cost a many-block kernel, stamp by stamp (GPU machine).

Each variant runs in its own process with its own Triton cache: the 16M-element add (16,384
blocks) launched 200 times, timed with CUDA events, against the same kernel unstamped.
  none       no session (the plain kernel)
  full       the stamps as shipped
  entry      the entry stamp only
  exit       the exit stamps only
  one_lane   both, every atomic into lane 0 (how much spreading over lanes buys)

Usage: python dev/stamp_cost.py   (prints one JSON object)
"""
import json
import os
import subprocess
import sys
import tempfile

VARIANTS = ("none", "full", "entry", "exit", "one_lane")

CHILD = r"""
import json, os, statistics, sys, torch, triton
sys.path.insert(0, os.path.join(os.getcwd(), "examples"))
from triton_kernels import add_kernel
import flagtree.profiler as profiler
from flagtree.profiler.backends.device_timer import ptx_stamps
variant = sys.argv[1]
if variant == "entry":
    ptx_stamps.exit_block = lambda *a, **k: ""
elif variant == "exit":
    ptx_stamps.entry_block = lambda *a, **k: ""
elif variant == "one_lane":
    real = ptx_stamps._lane_address
    ptx_stamps._lane_address = lambda reg_lane, reg_out, slot, plane_bytes, lanes: real(
        reg_lane, reg_out, slot, plane_bytes, 1)
x = torch.rand(1 << 24, device="cuda"); y = torch.rand_like(x); out = torch.empty_like(x)
grid = (triton.cdiv(x.numel(), 1024),)
sid = None if variant == "none" else profiler.start(os.path.join(sys.argv[2], variant), backend="device_timer")
for _ in range(20):
    add_kernel[grid](x, y, out, x.numel(), BLOCK=1024)
torch.cuda.synchronize()
times = []
for _ in range(5):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(40):
        add_kernel[grid](x, y, out, x.numel(), BLOCK=1024)
    b.record(); b.synchronize()
    times.append(a.elapsed_time(b) * 1e3 / 40)
if sid is not None:
    profiler.finalize(sid)
assert torch.allclose(out, x + y)
print(json.dumps({"variant": variant, "kernel_us": round(statistics.median(times), 3), "runs_us": [round(t, 2) for t in times]}))
"""


def main():
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(2):
            for variant in VARIANTS:
                env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(tmp, f"cache-{variant}-{rnd}"))
                done = subprocess.run([sys.executable, "-c", CHILD, variant, tmp], env=env,
                                      capture_output=True, text=True, timeout=120)
                line = (done.stdout.strip().splitlines() or ["{}"])[-1]
                try:
                    row = json.loads(line)
                except ValueError:
                    row = {"error": done.stderr[-400:]}
                results.setdefault(variant, []).append(row.get("kernel_us", row.get("error")))
    base = min(results["none"])
    summary = {v: {"kernel_us": r, "ratio": [round(t / base, 4) if isinstance(t, float) else None for t in r]}
               for v, r in results.items()}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
