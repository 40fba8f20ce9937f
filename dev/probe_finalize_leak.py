"""Which part of a CUPTI attach leaves device memory behind at cuptiFinalize? Attach and let go
--cycles times each way, bench/serving_loop.py's model run once per attach, and print the device's
used memory grown (cudaMemGetInfo) per cycle:

  floor:       subscribe, register buffers, kernel activity only (the benchmark's floor; needs
               the native core built with FLAGTREE_PROFILER_TESTING=ON);
  floor+cb:    the same with an empty callback on each launch call;
  session:     a full nvidia session (every kind and callback we enable), then release().

    python3 dev/probe_finalize_leak.py --cycles 60"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_blocks  # noqa: E402
import serving_loop  # noqa: E402

profiler, native, torch = serving_loop.profiler, serving_loop._native, serving_loop.torch


def cycles(how, model, count, path, folder):
    torch.cuda.synchronize()
    before = serving_blocks.used_mb()
    for i in range(count):
        if how == "session":
            profiler.start(os.path.join(folder, f"s{i}"), backend="nvidia")
        else:
            native.testing.cupti_floor_start(path, 8 << 20, how == "floor+cb")
        model()
        torch.cuda.synchronize()
        if how == "session":
            profiler.finalize()
            profiler.release()
        else:
            native.nvidia.cupti_release()  # the floor stops (unsubscribe, cuptiFinalize)
    torch.cuda.synchronize()
    grown = serving_blocks.used_mb() - before
    print(f"{how:9s} {count} cycles: device used +{grown:.1f} MB ({grown * 1024 / count:.0f} KB a cycle)", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=60)
    parser.add_argument("--ways", default="floor,floor+cb,session,floor")
    args = parser.parse_args()
    model = serving_loop.Model(8, 4096, 256)
    with tempfile.TemporaryDirectory() as folder:
        serving_blocks.first_nvidia_session(model, folder)
        path = native.nvidia.cupti_library()
        for how in args.ways.split(","):
            cycles(how, model, args.cycles, path, folder)


if __name__ == "__main__":
    main()
