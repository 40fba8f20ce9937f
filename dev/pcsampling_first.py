"""How many PC samples the first tiny kernels of a sampling session get, by order (context made
before the session or inside it) and mode, in our profile and in Proton's (GPU machine). Prints
JSON lines: the samples under the scope, per node path, and CUPTI's own totals where we have them.

  python dev/pcsampling_first.py [MODE ...]    ours, each mode (default: pcsampling, interval=6)
  python dev/pcsampling_first.py --proton      Proton, three scope bodies:
      pair      torch.ones then torch.zeros_like (the GPU test's pair)
      ones      torch.ones alone
      triton    a Triton fill (line info) then two torch fills: Triton source lines under a
                torch kernel's node mean a range's samples were counted again at a later launch
"""
import json
import os
import sys
import tempfile

from fresh_process import run_script

COMMON = r'''
import json, sys, torch, triton, triton.language as tl

@triton.jit
def fill_kernel(out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.full((BLOCK,), 1.0, tl.float32), mask=offs < n)

def body(kind):
    if kind == "triton":
        a = torch.empty(1024, device="cuda")
        fill_kernel[(1,)](a, 1024, BLOCK=1024)
    else:
        a = torch.ones(1024, device="cuda")
    if kind in ("pair", "triton"):
        b = torch.zeros_like(a)
    if kind == "triton":
        c = torch.zeros_like(a)
    torch.cuda.synchronize()

def per_path(node, path=(), out=None):
    out = {} if out is None else out
    here = path + (node["frame"]["name"][:60],)
    value = node.get("metrics", {}).get("num_samples", 0)
    if value:
        out[" > ".join(here)] = out.get(" > ".join(here), 0) + value
    for child in node.get("children", []):
        per_path(child, here, out)
    return out

def scope_of(base):
    root = json.load(open(base + ".hatchet"))[0]
    (scope,) = [c for c in root["children"] if c["frame"]["name"] == "first"]
    return scope
'''

OURS = COMMON + r'''
import flagtree.profiler as profiler
base, order, mode, kind = sys.argv[1:5]
if order == "context first":
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
profiler.start(base, backend="cupti", mode=mode)
with profiler.scope("first"):
    body(kind)
profiler.finalize()
paths = per_path(scope_of(base))
meta = json.load(open(base + ".meta.json"))
print(json.dumps({"samples": sum(paths.values()), "paths": paths,
                  "cupti_total": meta.get("pcsampling_total_samples"),
                  "dropped": meta.get("pcsampling_dropped_samples"),
                  "unattributed": meta.get("pcsampling_unattributed_samples"),
                  "non_user": meta.get("pcsampling_non_user_samples"),
                  "sampled_launches": meta.get("pcsampling_sampled_launches")}))
'''

PROTON = COMMON + r'''
import triton.profiler as proton
base, order, kind = sys.argv[1:4]
if order == "context first":
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
proton.start(base, backend="cupti", mode="pcsampling")
with proton.scope("first"):
    body(kind)
proton.finalize()
paths = per_path(scope_of(base))
print(json.dumps({"samples": sum(paths.values()), "paths": paths}))
'''


with tempfile.TemporaryDirectory() as tmp:
    if sys.argv[1:] == ["--proton"]:
        for kind in ("pair", "ones", "triton"):
            for order in ("context first", "session first"):
                for rep in range(2):
                    line = run_script(PROTON, [os.path.join(tmp, f"p{rep}"), order, kind])
                    print(json.dumps({"profiler": "proton", "kind": kind, "order": order, "rep": rep, "result": line}))
        sys.exit(0)
    for mode in sys.argv[1:] or ["pcsampling", "pcsampling:interval=6"]:
        for order in ("context first", "session first"):
            for rep in range(2):
                line = run_script(OURS, [os.path.join(tmp, f"r{rep}"), order, mode, "pair"])
                print(json.dumps({"mode": mode, "order": order, "rep": rep, "result": line}))
