"""What the device_timer's stamps cost and read in CUDA-graph replays, against kernel size (GPU
machine). For an add of 2^k elements (2^k / 1024 blocks), each in one process:
  plain    a graph captured with no session, replayed 100 times, timed with CUDA events, then
           replayed 100 times under an nvidia session alone (CUPTI's time of the unstamped
           kernel in a graph: what the stamped graph's CUPTI time compares with);
  stamped  a graph captured under device_timer and nvidia sessions open at once (its kernel
           stamped, with a graph descriptor), replayed 100 times under them:
           the events' time per replay, the device timer's and CUPTI's time of the same kernel;
  slot     the same kernel launched 100 times without a graph under both sessions (the ring's
           slot path): the device timer's and CUPTI's time.
Prints one JSON line per size (microseconds).

    python dev/probe_graph_stamps.py [--sizes 20,22,24]
"""
import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import torch  # noqa: E402
import triton  # noqa: E402
from launch_paths import beside, kernels_by_name  # noqa: E402
from triton_kernels import add_kernel  # noqa: E402


REPLAYS = 100


def events_us(fn):
    """GPU time of fn() (REPLAYS launches or replays), per launch, us."""
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return begin.elapsed_time(end) * 1e3 / REPLAYS


def add_kernel_us(kernels):
    """Mean time of the add kernel in {name: [launches, ns]} (launch_paths.kernels_by_name), us,
    and its launches."""
    count = sum(entry[0] for name, entry in kernels.items() if "add_kernel" in name)
    total = sum(entry[1] for name, entry in kernels.items() if "add_kernel" in name)
    return (total / count / 1e3 if count else None), count


def both(folder, name, fn, setup=None):
    """setup() then fn() under a device_timer and an nvidia session at once (launch_paths.beside):
    (events us of fn, dt us, CUPTI us, counts). A graph captured in setup() lives only as long as
    the sessions: its descriptors are the device timer's."""
    def work():
        if setup is not None:
            setup()
        return events_us(fn)

    stamps, cupti, gpu = beside(work, os.path.join(folder, name))
    dt, dt_count = add_kernel_us(stamps)
    nv, nv_count = add_kernel_us(cupti)
    return {"events": round(gpu, 3), "device_timer": dt and round(dt, 3), "cupti": nv and round(nv, 3),
            "launches": [dt_count, nv_count]}


def cupti_only(folder, name, fn):
    """fn() under an nvidia session alone: (CUPTI us of the add kernel, its launches)."""
    import flagtree.profiler as prof  # deferred: after torch, as beside() imports it

    sid = prof.start(os.path.join(folder, name), backend="nvidia")
    fn()
    torch.cuda.synchronize()
    prof.finalize(sid)
    prof.release()
    us, count = add_kernel_us(kernels_by_name(os.path.join(folder, name)))
    return {"cupti": us and round(us, 3), "launches": count}


def capture(launch):
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        launch()  # warm on the side stream, as torch's own capture examples do
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph):
        launch()
    return graph


def probe(log2n, folder):
    n = 1 << log2n
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)

    def launch():
        add_kernel[grid](x, y, out, n, BLOCK=1024)

    def replays(graph):
        return lambda: [graph.replay() for _ in range(REPLAYS)]

    launch()
    plain = capture(launch)
    replays(plain)()
    row = {"elements": n, "blocks": grid[0], "plain_graph_events": round(events_us(replays(plain)), 3),
           "plain_graph": cupti_only(folder, f"plain{log2n}", replays(plain))}
    stamped = []

    def setup():  # the stamped kernel captured, its pointer a graph descriptor; one warm replay
        stamped.append(capture(launch))
        stamped[0].replay()

    row["stamped_graph"] = both(folder, f"graph{log2n}", lambda: replays(stamped[0])(), setup)
    stamped.clear()
    row["slot"] = both(folder, f"slot{log2n}", lambda: [launch() for _ in range(REPLAYS)])
    row["plain_graph_events_after"] = round(events_us(replays(plain)), 3)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20,22,24", help="log2 of the elements, comma-separated")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for log2n in (int(s) for s in args.sizes.split(",")):
            print(json.dumps(probe(log2n, folder)), flush=True)


if __name__ == "__main__":
    main()
