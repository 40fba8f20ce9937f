"""Host-side cost of the profiler's own launch path, without any GPU: launches driven through the
roctracer stand-in library (tests/standins) into the native core, timed with no session, with a
shadow/tree session, a python/tree session and a shadow/trace session. The difference to "no
session" is what the core adds per launch on top of the vendor library's own callback cost (the
CUPTI floor measured on the GPU machine). CPU only; prints one JSON line.

    python bench/core_cost.py [--launches 200000]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    from standins import build_standin, load_standin

    with tempfile.TemporaryDirectory() as tmp:
        path = build_standin("roctracer_standin.c", tmp, "libroctracer64.so")
        lib = load_standin(path)
        os.environ["FLAGTREE_PROFILER_ROCTRACER_PATH"] = str(path)
        import flagtree.profiler as profiler

        launch = lib.standin_launch
        launch.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]
        launch.restype = ctypes.c_uint64
        name = b"k"

        def loop():
            t0 = time.perf_counter()
            for _ in range(args.launches):
                launch(name, 0, 10)
            return time.perf_counter() - t0

        configs = {"shadow/tree": {}, "python/tree": {"context": "python"}, "shadow/trace": {"data": "trace"}}
        # The stand-in needs a session open to accept callbacks at all: "none" is a session that is
        # deactivated, so the vendor side runs and the core returns at its first check.
        samples = {c: [] for c in ["none", *configs]}
        for rep in range(args.reps):
            sid = profiler.start(os.path.join(tmp, f"none{rep}"), backend="roctracer")
            profiler.deactivate(sid)
            samples["none"].append(loop())
            profiler.finalize()
            for config, kwargs in configs.items():
                profiler.start(os.path.join(tmp, f"{config.replace('/', '_')}{rep}"), backend="roctracer", **kwargs)
                with profiler.scope("bench"):
                    samples[config].append(loop())
                profiler.finalize()
        none = statistics.median(samples["none"])
        result = {c: {"ns_per_launch": statistics.median(s) / args.launches * 1e9,
                      "added_ns_per_launch": (statistics.median(s) - none) / args.launches * 1e9}
                  for c, s in samples.items()}
        print(json.dumps({"launches": args.launches, "reps": args.reps, "results": result}))


if __name__ == "__main__":
    main()
