"""Overhead of one profiler family on one workload, interleaved with no-profiler runs in this
process (none, A, none, B, ..., repeated), after a warm-up. Prints one JSON line:
{"family", "workload", "configs": {config: {"ratio": median of t/t_none_adjacent, "median_s",
"none_median_s", "finalize_median_s"}}}.

    python bench/overhead.py --family ours --workload launch --reps 5
Families: ours, proton (triton.profiler), torch (torch.profiler), floor (CUPTI kernel activity
only, records discarded: the least any CUPTI-based profiler can cost). The floor needs
_native.testing.cupti_floor_start, i.e. the native core built with -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON (dev/gpu_round.sh and
dev/build_native.sh build it so).
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from workloads import WORKLOADS  # noqa: E402

CONFIGS = {  # name -> start() keyword arguments
    "shadow/tree": dict(context="shadow", data="tree"),
    "python/tree": dict(context="python", data="tree"),
    "shadow/trace": dict(context="shadow", data="trace"),
    "hook=triton": dict(context="shadow", data="tree", hook="triton"),
}
OURS_ONLY = {  # configs Proton has no counterpart for
    "device_timer/tree": dict(context="shadow", data="tree", backend="device_timer"),
}


def null_scope(name):
    return contextlib.nullcontext()


class Family:
    """start(config) -> scope factory; stop() ends the session (finalize)."""

    def __init__(self, name, outdir):
        self.name, self.outdir, self.count = name, outdir, 0

    def configs(self):
        if self.name == "ours":
            return list(CONFIGS) + list(OURS_ONLY)
        if self.name == "proton":
            return list(CONFIGS)
        if self.name == "torch":
            return ["torch.profiler"]
        return ["activity only", "activity+callbacks"]

    def start(self, config):
        self.count += 1
        base = os.path.join(self.outdir, f"{self.name}{self.count}")
        if self.name == "ours":
            import flagtree.profiler as prof

            prof.start(base, **{**CONFIGS, **OURS_ONLY}[config])
            return prof.scope
        if self.name == "proton":
            import triton.profiler as prof

            prof.start(base, **CONFIGS[config])
            return prof.scope
        if self.name == "torch":
            import torch

            self._torch = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                             torch.profiler.ProfilerActivity.CUDA])
            self._torch.__enter__()
            return torch.profiler.record_function
        from flagtree.profiler import _native
        from flagtree.profiler.backends.nvidia.backend import cupti_candidates

        path = os.environ.get("FLAGTREE_PROFILER_CUPTI_PATH") or cupti_candidates(13)[0]
        _native.testing.cupti_floor_start(path, 8 << 20, config == "activity+callbacks")
        return null_scope

    def stop(self):
        if self.name == "ours":
            import flagtree.profiler as prof

            prof.finalize()
        elif self.name == "proton":
            import triton.profiler as prof

            prof.finalize()
        elif self.name == "torch":
            self._torch.__exit__(None, None, None)
        else:
            from flagtree.profiler import _native

            _native.nvidia.cupti_release()

    def settle(self):
        """After a timed session, untimed: ours lets go of CUPTI (kept attached between sessions
        otherwise), so that the no-profiler run after it runs without CUPTI, as for the others."""
        if self.name == "ours":
            import flagtree.profiler as prof

            prof.release()


def measure(family, workload, reps, include_lifecycle):
    run = WORKLOADS[workload]()
    configs = family.configs()
    run(null_scope)  # warm-up: compile kernels, initialise cuBLAS
    for config in configs:  # warm-up each profiler once (CUPTI initialisation, hooks)
        run(family.start(config))
        family.stop()
        family.settle()
    samples = {c: [] for c in configs}
    nones = {c: [] for c in configs}
    finals = {c: [] for c in configs}

    def timed_none():
        t0 = time.perf_counter()
        run(null_scope)
        return time.perf_counter() - t0

    for _ in range(reps):
        # none, A, none, B, none, ...: each configuration is compared with the mean of the two
        # no-profiler runs around it, which cancels slow drifts of a shared, noisy machine.
        before = timed_none()
        for config in configs:
            t0 = time.perf_counter()
            scope = family.start(config)
            if not include_lifecycle:
                t0 = time.perf_counter()
            run(scope)
            t1 = time.perf_counter()
            family.stop()
            t2 = time.perf_counter()
            family.settle()
            after = timed_none()
            samples[config].append((t2 if include_lifecycle else t1) - t0)
            nones[config].append((before + after) / 2)
            finals[config].append(t2 - t1)
            before = after
    out = {}
    for c in configs:
        ratios = [s / n for s, n in zip(samples[c], nones[c])]
        out[c] = {"ratio": statistics.median(ratios), "median_s": statistics.median(samples[c]),
                  "none_median_s": statistics.median(nones[c]), "finalize_median_s": statistics.median(finals[c])}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", choices=["ours", "proton", "torch", "floor"], required=True)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--configs", help="comma-separated subset of the family's configurations")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as outdir:
        family = Family(args.family, outdir)
        if args.configs:
            wanted = args.configs.split(",")
            family.configs = lambda: wanted
        # GPU-bound: start and finalize included (the bar); the others: the loop alone,
        # with finalize reported apart.
        result = measure(family, args.workload, args.reps, include_lifecycle=args.workload == "gpu")
    print(json.dumps({"family": args.family, "workload": args.workload, "reps": args.reps, "configs": result}))


if __name__ == "__main__":
    main()
