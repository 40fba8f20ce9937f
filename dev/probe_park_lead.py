"""Where a steps trigger's window attached ahead costs the program (nvidia backend): the serving
model under arm("steps:300-319,800-819"), each step timed, three rounds. Prints the park's time on
the idle clock's thread (last_park_ahead_ns) and, per stretch of steps before, in and after the
second window, the extra time over the median quiet step: the stretch while the park subscribes
on the clock thread, the parked steps, the window's opening step, the window and what follows.

    python3 dev/probe_park_lead.py"""
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_blocks  # noqa: E402
import serving_loop  # noqa: E402

profiler, native = serving_loop.profiler, serving_loop._native
STRETCHES = ((200, 300), (700, 760), (760, 780), (780, 790), (790, 800), (800, 801), (801, 820), (820, 822),
             (822, 840))


def one_round(model, base):
    profiler.release()
    profiler.arm("steps:300-319,800-819", name=base, backend="nvidia")
    times = []
    for _ in range(840):
        began = time.perf_counter_ns()
        model()
        profiler.step()
        times.append((time.perf_counter_ns() - began) / 1e3)
    profiler.disarm()
    return times


def main():
    model = serving_loop.Model(8, 4096, 256)
    with tempfile.TemporaryDirectory() as folder:
        serving_blocks.first_nvidia_session(model, folder)
        for number in range(3):
            times = one_round(model, os.path.join(folder, f"w{number}"))
            stats = native.nvidia.cupti_attach_stats()
            quiet = statistics.median(times[400:700])
            print("round", number, "quiet step us", round(quiet, 1), "park ns", stats["last_park_ahead_ns"],
                  "parks", stats["parks_ahead"], "phases", stats["start_phases_ns"])
            for lo, hi in STRETCHES:
                stretch = times[lo:hi]
                print(f"  steps {lo}-{hi - 1}: extra us a step {statistics.mean(stretch) - quiet:8.1f}"
                      f"  total extra ms {(sum(stretch) - quiet * len(stretch)) / 1e3:6.2f}")


if __name__ == "__main__":
    main()
