"""Cost of training-aware attribution on the CPU (no GPU needed).

    PYTHONPATH=src python bench/training_bench.py [--launches 200000] [--steps 30] [--device cuda]

Part 1 drives the launch path through _native.testing: it needs
the native core built with -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON (dev/gpu_round.sh and
dev/build_native.sh build it so).

1. The launch path (native onLaunch + record, driven by _native.testing.launch/record,
   shadow tree session) per launch, for: a thread with its own scope (the unchanged fast path),
   a thread with an empty stack (one generation load), a thread started inside a scope
   (inherited stack), and a foreign thread while another thread waits in backward.
2. Backward by forward layer: a CPU training step of small torch layers under per-layer scopes,
   FLAGTREE_PROFILER_BACKWARD_SCOPES=caller vs forward (scope boundaries mark sequence numbers,
   every graph node gets a pre/post hook pair), and the cost of one scope enter/exit.
With --device cuda (GPU machine, no TRITON_INTERPRET) the training step runs on the GPU, its
backward on autograd's engine thread, so the hooks and the driving-thread rule are on the real path.
Prints one JSON object.
"""
import _thread
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

if "--device" not in sys.argv:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def launch_loop(native, n, base):
    start = time.perf_counter_ns()
    for i in range(n):
        native.testing.launch(base + i, False)
        native.testing.record(base + i, "k", 1, 2, 0)
    return (time.perf_counter_ns() - start) / n


def on_thread(fn, foreign=False):
    box, done = {}, threading.Event()

    def body():
        box["value"] = fn()
        done.set()

    if foreign:
        _thread.start_new_thread(body, ())
    else:
        t = threading.Thread(target=body)
        t.start()
    done.wait()
    return box["value"]


def launch_costs(profiler, native, n, reps):
    out = {}
    cases = ["own scope", "empty stack", "started in scope", "foreign while driving"]
    samples = {c: [] for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            profiler.start(os.path.join(tmp, f"l{rep}"))
            base = 1 + rep * 4 * n
            with profiler.scope("s"):
                samples["own scope"].append(launch_loop(native, n, base))
            samples["empty stack"].append(launch_loop(native, n, base + n))
            with profiler.scope("parent"):
                samples["started in scope"].append(on_thread(lambda: launch_loop(native, n, base + 2 * n)))
            with profiler.scope("backward"):
                token = native.context.drive_begin()
                samples["foreign while driving"].append(
                    on_thread(lambda: launch_loop(native, n, base + 3 * n), foreign=True))
                native.context.drive_end(token)
            profiler.finalize()
    for c in cases:
        out[c] = round(statistics.median(samples[c]), 1)
    return out


def training_step(profiler, torch, model, x):
    with profiler.scope("forward"):
        h = x
        for i, layer in enumerate(model):
            with profiler.scope(f"layer{i}"):
                h = torch.relu(layer(h))
    loss = h.square().mean()
    with profiler.scope("backward"):
        loss.backward()
    if x.is_cuda:
        torch.cuda.synchronize()


def step_costs(profiler, steps, reps, device):
    import torch

    torch.manual_seed(0)
    model = [torch.nn.Linear(32, 32).to(device) for _ in range(12)]
    x = torch.randn(8, 32, device=device)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("caller", "forward", "caller", "forward"):
            os.environ["FLAGTREE_PROFILER_BACKWARD_SCOPES"] = mode
            profiler.start(os.path.join(tmp, mode))
            training_step(profiler, torch, model, x)  # warm-up
            times = []
            for _ in range(reps):
                start = time.perf_counter_ns()
                for _ in range(steps):
                    training_step(profiler, torch, model, x)
                times.append((time.perf_counter_ns() - start) / steps / 1e3)
            start = time.perf_counter_ns()
            for _ in range(20000):
                with profiler.scope("s"):
                    pass
            scope_ns = (time.perf_counter_ns() - start) / 20000
            profiler.finalize()
            out.setdefault(mode, {"step_us": [], "scope_enter_exit_ns": []})
            out[mode]["step_us"].append(statistics.median(times))
            out[mode]["scope_enter_exit_ns"].append(scope_ns)
    os.environ.pop("FLAGTREE_PROFILER_BACKWARD_SCOPES", None)
    return {m: {k: round(min(v), 1) for k, v in d.items()} for m, d in out.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=200000)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="where the training step runs (cpu, cuda)")
    args = parser.parse_args()
    import flagtree.profiler as profiler
    from flagtree.profiler import _native

    result = {"launch_ns": launch_costs(profiler, _native, args.launches, args.reps),
              "training_step": step_costs(profiler, args.steps, args.reps, args.device),
              "device": args.device, "python": sys.version.split()[0]}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
