"""Runs a script with CUPTI's let-go's between windows set to finalize or only unsubscribe
(native.nvidia.cupti_let_go_finalizes), to compare the two on one workload:

    python3 dev/with_let_go.py unsubscribe bench/serving_loop.py --duration 120 --backend nvidia"""
import runpy
import sys

from flagtree.profiler.native_core import native


def main():
    mode, script = sys.argv[1], sys.argv[2]
    if mode not in ("finalize", "unsubscribe"):
        sys.exit("usage: with_let_go.py finalize|unsubscribe SCRIPT [ARGS...]")
    native.nvidia.cupti_let_go_finalizes(mode == "finalize")
    sys.argv = sys.argv[2:]
    runpy.run_path(script, run_name="__main__")
    print(f"let-go {mode}: finalizes {native.nvidia.cupti_attach_stats()['finalizes']}", flush=True)


if __name__ == "__main__":
    main()
