"""One rank of the multi-process tests: run as RANK/WORLD_SIZE/LOCAL_RANK/MASTER_* say (what
torchrun sets), with a gloo process group, real Triton kernels (interpreter on CPU, compiled on
a GPU), and FLAGTREE_PROFILER_GATHER=1. Writes only under its own folder (argv[1]).

Round 1: a tree and a trace session around a scope of kernel launches; rank 2 launches on 16x
the data (16x the blocks), so it is the slow rank. Round 2 (argv[2] == "never"): every rank opens one more
session, but rank 3 never finalizes it, so the gather of round 2 must time out naming rank 3.
Prints one line "REPORT <json>" with what it saw (warnings included).
"""
import datetime
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from support.kernels import device, launch_add  # noqa: E402

SLOW_RANK = 2


def tensors_for(rank, blocks):
    """Inputs made before any session, so that only the Triton kernels are recorded on a GPU."""
    n = 1024 * blocks * (16 if rank == SLOW_RANK else 1)
    x = torch.rand(n, device=device())
    return x, torch.rand_like(x), torch.empty_like(x)


def work(profiler, tensors):
    with profiler.scope("step"):
        for _ in range(3):
            launch_add(*tensors, block=1024)
    if device() == "cuda":
        torch.cuda.synchronize()


def main(folder, scenario):
    rank = int(os.environ["RANK"])
    if device() == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    import flagtree.profiler as profiler

    base = os.path.join(folder, "run")
    report = {"rank": rank}
    blocks = int(os.environ.get("WORKER_BLOCKS", "16"))  # the GPU test asks for more, to be slow there too
    small, mine = tensors_for(SLOW_RANK + 1, 1), tensors_for(rank, blocks)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        work(profiler, small)  # warm-up: compile (GPU), nothing recorded
        report["session_ids"] = [profiler.start(base), profiler.start(base, data="trace")]
        work(profiler, mine)
        profiler.finalize()
        if scenario == "never":
            # rank 0 waits 3 s for the others; they wait long for rank 0, which reaches round 2
            # only after the slow rank 2 has sent round 1
            os.environ["FLAGTREE_PROFILER_GATHER_TIMEOUT_S"] = "3" if rank == 0 else "60"
            profiler.start(base + "_late")
            work(profiler, small)
            dist.barrier()  # ranks 0-2 reach finalize together: only rank 3 is missing
            if rank != 3:
                began = time.monotonic()
                profiler.finalize()
                report["late_finalize_s"] = time.monotonic() - began
    report["warnings"] = [str(w.message) for w in seen if "flagtree" in str(w.message)]
    report["files"] = sorted(os.listdir(folder))
    print("REPORT " + json.dumps(report), flush=True)
    release = os.path.join(os.path.dirname(folder), "released")  # the test's control file, not a profile
    if scenario == "never" and rank == 0:
        open(release, "w").close()
    if scenario == "never" and rank == 3:  # alive, but never finalizing, until rank 0 has given up
        began = time.monotonic()
        while not os.path.exists(release) and time.monotonic() - began < 120:
            time.sleep(0.05)
    sys.stdout.flush()
    os._exit(0)  # no atexit finalize of rank 3's open session, no teardown of a group with a timed-out peer


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
