"""How many PC samples the first two tiny kernels of a sampling session get, by order (context
made before the session or inside it) and sampling interval (GPU machine). Prints JSON lines."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = r'''
import json, sys, torch
import flagtree.profiler as profiler
base, order, mode = sys.argv[1:4]
if order == "context first":
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
profiler.start(base, backend="cupti", mode=mode)
with profiler.scope("first"):
    a = torch.ones(1024, device="cuda")
    b = torch.zeros_like(a)
    torch.cuda.synchronize()
profiler.finalize()
root = json.load(open(base + ".hatchet"))[0]
(scope,) = [c for c in root["children"] if c["frame"]["name"] == "first"]
samples = sum(c["metrics"].get("num_samples", 0) for k in scope["children"] for c in k["children"])
meta = json.load(open(base + ".meta.json"))
print(json.dumps({"samples": samples, "unattributed": meta.get("pcsampling_unattributed_samples"),
                  "total": meta.get("pcsampling_samples")}))
'''

PROTON = r'''
import json, sys, torch
import triton.profiler as proton
base, order = sys.argv[1:3]
if order == "context first":
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
proton.start(base, backend="cupti", mode="pcsampling")
with proton.scope("first"):
    a = torch.ones(1024, device="cuda")
    b = torch.zeros_like(a)
    torch.cuda.synchronize()
proton.finalize()
root = json.load(open(base + ".hatchet"))[0]
(scope,) = [c for c in root["children"] if c["frame"]["name"] == "first"]
total, stack = 0, [scope]
while stack:
    node = stack.pop()
    total += node.get("metrics", {}).get("num_samples", 0)
    stack.extend(node.get("children", []))
print(json.dumps({"samples": total}))
'''

with tempfile.TemporaryDirectory() as tmp:
    if sys.argv[1:] == ["--proton"]:
        for order in ("context first", "session first"):
            for rep in range(3):
                done = subprocess.run([sys.executable, "-c", PROTON, os.path.join(tmp, f"p{rep}"), order],
                                      capture_output=True, text=True, timeout=120)
                line = (done.stdout.strip().splitlines() or [done.stderr[-300:]])[-1]
                print(json.dumps({"profiler": "proton", "order": order, "rep": rep, "result": line}))
        sys.exit(0)
    for mode in sys.argv[1:] or ["pcsampling", "pcsampling:interval=6"]:
        for order in ("context first", "session first"):
            for rep in range(2):
                done = subprocess.run([sys.executable, "-c", SCRIPT, os.path.join(tmp, f"r{rep}"), order, mode],
                                      capture_output=True, text=True, timeout=120)
                line = (done.stdout.strip().splitlines() or [done.stderr[-300:]])[-1]
                print(json.dumps({"mode": mode, "order": order, "rep": rep, "result": line}))
