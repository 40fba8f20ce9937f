"""Overhead of backend="instrumentation", on the GPU machine.

Workload: a memory-bound 16M-element add with two kernel-side scopes, 50 launches per rep.
Configurations, interleaved in one process (none, ours, none, proton, ...), after a warm-up:

* none: the same kernel compiled outside any session (no records), no profiler;
* ours: start(backend="instrumentation", mode="triton=on"); the kernel is instrumented;
* proton: Triton's own profiler, triton.profiler.start(backend="instrumentation") with its
  language's scopes enabled for Triton kernels (where it is installed).

Per configuration: kernel_device_ratio (ours only: the kernel's own device time, time (ns) / count
of its node in the instrumentation session's tree, which CUPTI measures, over the same kernel's in a
plain nvidia session run interleaved: the per-kernel slowdown), loop_gpu_ratio (GPU time of the 50
launches, CUDA events, over none's: includes the gaps a slower host leaves between kernels) and
end_to_end_ratio (wall time of the 50 launches + synchronize, over none's), finalize_s (session
stop: read-back, parse, write) and end_to_end_with_finalize_ratio. Targets: per kernel < 1.2x,
end to end < 2x. Prints one JSON object; with --out also writes it to OUT/instrumentation-<time>.json.

    python bench/instrumentation.py --reps 5 [--out DIR]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

N = 1 << 24
BLOCK = 1024
LAUNCHES = 50


def kernels():
    import triton
    import triton.language as tl

    # The tests' instrumented add (tests/support/instrumented_kernels.py), one copy for the GPU tests and this bench.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from support.instrumented_kernels import add_two_scopes

    found = {"ours": add_two_scopes}
    try:
        import triton.profiler.language as proton_language

        proton_language.enable_semantic("triton")

        @triton.jit
        def add_proton(x, y, out, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            with proton_language.scope("load"):
                a = tl.load(x + offsets, mask=mask)
                b = tl.load(y + offsets, mask=mask)
            with proton_language.scope("store"):
                tl.store(out + offsets, a + b, mask=mask)

        found["proton"] = add_proton
    except Exception as error:  # Proton not installed or a different API: the row is left out
        print(f"proton instrumentation unavailable: {error}", file=sys.stderr)
    return found


class Runner:
    def __init__(self, outdir):
        import torch
        import triton

        self.torch, self.triton = torch, triton
        self.x = torch.randn(N, device="cuda")
        self.y = torch.randn(N, device="cuda")
        self.out = torch.empty_like(self.x)
        self.grid = (triton.cdiv(N, BLOCK),)
        self.kernels = kernels()
        self.outdir = outdir
        self.count = 0

    def launches(self, kernel):
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        for _ in range(LAUNCHES):
            kernel[self.grid](self.x, self.y, self.out, N, BLOCK=BLOCK)
        end.record()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        return wall, start.elapsed_time(end) / 1000.0

    def run(self, config):
        """(end-to-end wall s, GPU s, finalize s, kernel device ns or None) of one rep of `config`."""
        self.count += 1
        base = os.path.join(self.outdir, f"{config}{self.count}")
        if config == "none":
            wall, gpu = self.launches(self.kernels["ours"])
            return wall, gpu, 0.0, None
        if config in ("ours", "nvidia"):
            import flagtree.profiler as prof

            if config == "ours":
                prof.start(base, backend="instrumentation", mode="triton=on")
            else:  # the plain kernel, timed by the same CUPTI activity records
                prof.start(base, backend="nvidia")
            wall, gpu = self.launches(self.kernels["ours"])
            t0 = time.perf_counter()
            prof.finalize()
            return wall, gpu, time.perf_counter() - t0, kernel_device_ns(base + ".hatchet")
        import triton.profiler as proton

        proton.start(base, backend="instrumentation")
        wall, gpu = self.launches(self.kernels["proton"])
        t0 = time.perf_counter()
        proton.finalize()
        return wall, gpu, time.perf_counter() - t0, None


def kernel_device_ns(path):
    """Mean device time of the add kernel's launches in a tree written by this package."""
    with open(path) as handle:
        root, _ = json.load(handle)
    total, count, stack = 0, 0, [root]
    while stack:
        node = stack.pop()
        if node["frame"].get("kind") == "kernel" and "add" in node["frame"]["name"]:
            total += node["metrics"].get("time (ns)", 0)
            count += node["metrics"].get("count", 0)
        stack.extend(node.get("children", []))
    return total / count if count else None


def measure(reps, outdir):
    runner = Runner(outdir)
    configs = ["ours"] + (["proton"] if "proton" in runner.kernels else [])
    for config in ["none", "nvidia"] + configs:  # warm-up: compile every variant
        runner.run(config)
    samples = {c: [] for c in configs}
    plain_kernel_ns, ours_kernel_ns = [], []
    for _ in range(reps):
        for config in configs:
            none_before = runner.run("none")
            measured = runner.run(config)
            none_after = runner.run("none")
            samples[config].append((measured, none_before, none_after))
            if config == "ours":
                ours_kernel_ns.append(measured[3])
                plain_kernel_ns.append(runner.run("nvidia")[3])
    result = {}
    for config, rows in samples.items():
        def ratio(index, with_finalize=False):
            values = []
            for measured, before, after in rows:
                base = (before[index] + after[index]) / 2
                values.append((measured[index] + (measured[2] if with_finalize else 0)) / base)
            return statistics.median(values)

        result[config] = {"loop_gpu_ratio": ratio(1), "end_to_end_ratio": ratio(0),
                          "end_to_end_with_finalize_ratio": ratio(0, True),
                          "finalize_s": statistics.median(r[0][2] for r in rows),
                          "none_end_to_end_s": statistics.median((r[1][0] + r[2][0]) / 2 for r in rows),
                          "none_gpu_s": statistics.median((r[1][1] + r[2][1]) / 2 for r in rows)}
    if ours_kernel_ns and all(ours_kernel_ns + plain_kernel_ns):
        result["ours"]["kernel_device_ratio"] = statistics.median(ours_kernel_ns) / statistics.median(plain_kernel_ns)
        result["ours"]["kernel_device_ns"] = statistics.median(ours_kernel_ns)
        result["ours"]["plain_kernel_device_ns"] = statistics.median(plain_kernel_ns)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", help="directory for the JSON result")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as outdir:
        result = {"workload": f"add {N} elements, 2 scopes, {LAUNCHES} launches", "reps": args.reps,
                  "configs": measure(args.reps, outdir)}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, time.strftime("instrumentation-%Y%m%d-%H%M%S.json")), "w") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
