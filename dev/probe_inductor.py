"""Where inductor keeps a compiled Triton kernel's stages and its fused-op comments, in a process
that compiled it and in one that loaded it from inductor's caches (run twice with one
TORCHINDUCTOR_CACHE_DIR). Prints facts; copies inductor's generated modules to --out."""
import argparse
import gc
import json
import os
import shutil
import sys

import torch


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.LayerNorm(512), torch.nn.GELU(),
                               torch.nn.Linear(512, 256), torch.nn.Softmax(dim=-1)).cuda()


def facts(out, tag):
    from torch._inductor.runtime import triton_heuristics as th
    from torch._inductor.runtime.cache_dir_utils import triton_cache_dir
    import triton
    print(tag, "TRITON_CACHE_DIR env", os.environ.get("TRITON_CACHE_DIR"), "knobs", triton.knobs.cache.dir,
          "torch triton_cache_dir", triton_cache_dir(0))
    tuners = []
    for o in gc.get_objects():
        try:
            if type(o) is not type and isinstance(o, th.CachingAutotuner):
                tuners.append(o)
        except ReferenceError:
            pass
    print(tag, "autotuners", len(tuners))
    for t in tuners[:6]:
        print(tag, "tuner", t.fn.__name__, "inductor_meta keys", sorted(t.inductor_meta)[:40])
        print(tag, "  fn file", getattr(getattr(t.fn, "fn", None), "__code__", None) and t.fn.fn.__code__.co_filename)
        for r in t.compile_results:
            k = r.kernel
            print(tag, "  result", type(r).__name__, type(k).__name__, "hash", getattr(k, "hash", None),
                  "cubin_path", getattr(k, "cubin_path", None), "asm keys", sorted(getattr(k, "asm", {}) or {}))
            import base64
            key = base64.b32encode(bytes.fromhex(k.hash)).decode().rstrip("=")
            for base in {triton_cache_dir(0), triton.knobs.cache.dir}:
                folder = os.path.join(base, key)
                print(tag, "    folder", folder, sorted(os.listdir(folder)) if os.path.isdir(folder) else "absent")
    try:
        from torch._inductor.codecache import PyCodeCache
        mods = list(getattr(PyCodeCache, "modules", [])) or list(getattr(PyCodeCache, "modules_no_attr", {}).values())
    except Exception as e:
        mods = []
        print(tag, "PyCodeCache", e)
    print(tag, "PyCodeCache modules", len(mods))
    dest = os.path.join(out, tag)
    os.makedirs(dest, exist_ok=True)
    for m in mods:
        f = getattr(m, "__file__", None)
        if f and os.path.exists(f):
            shutil.copy(f, os.path.join(dest, os.path.basename(f)))
            names = [n for n in dir(m) if n.startswith("triton_")]
            print(tag, "module", f, "triton names", names[:12], "types", {type(getattr(m, n)).__name__ for n in names})
    try:
        from torch._inductor import debug
        print(tag, "stack traces", json.dumps({k: v[:2] for k, v in list(debug._inductor_kernel_stack_trace.items())[:4]})[:3000])
        print(tag, "post grad", json.dumps(dict(list(debug._inductor_triton_kernel_to_post_grad_node_info.items())[:4]))[:2000])
    except Exception as e:
        print(tag, "debug", e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="out")
    ap.add_argument("--tag", default="a")
    ap.add_argument("--provenance", action="store_true")
    ap.add_argument("--session", action="store_true")
    a = ap.parse_args()
    if a.provenance:
        torch._inductor.config.trace.provenance_tracking_level = 1
    m = model()
    step = torch.compile(lambda x: m(x).sum())
    x = torch.randn(64, 256, device="cuda", requires_grad=True)
    step(x).backward()
    torch.cuda.synchronize()
    facts(a.out, a.tag)
    if a.session:
        import flagtree.profiler as p
        sid = p.start(os.path.join(a.out, a.tag + "-dt"), backend="device_timer")
        for _ in range(3):
            step(x).backward()
        p.finalize(sid)
        meta = json.load(open(os.path.join(a.out, a.tag + "-dt.metadata.json")))
        print(a.tag, "dt", {k: v for k, v in meta.items() if k.startswith("device_timer_") and ("not" in k or "stamped" in k)})
    # reduce-overhead: what replays the graph
    g = torch.cuda.CUDAGraph
    print(a.tag, "CUDAGraph", g, g.__mro__, "replay in dict", "replay" in g.__dict__)


if __name__ == "__main__":
    sys.exit(main())
