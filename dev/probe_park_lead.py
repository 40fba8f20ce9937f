import os, sys, time, statistics, tempfile
sys.path.insert(0, "bench")
import serving_loop
profiler, native = serving_loop.profiler, serving_loop._native
model = serving_loop.Model(8, 4096, 256)
for _ in range(20): model()
d = tempfile.mkdtemp()
profiler.start(os.path.join(d, "earlier"), backend="nvidia"); model(); profiler.finalize()
for rnd in range(3):
    profiler.release()
    profiler.arm("steps:300-319,800-819", name=os.path.join(d, f"w{rnd}"), backend="nvidia")
    times = []
    for i in range(840):
        t = time.perf_counter_ns(); model(); profiler.step(); times.append((time.perf_counter_ns() - t) / 1e3)
    profiler.disarm()
    s = native.nvidia.cupti_attach_stats()
    base = statistics.median(times[400:700])
    parked_from = None
    print("round", rnd, "quiet step us", round(base, 1), "park ns", s["last_park_ahead_ns"], "parks", s["parks_ahead"],
          "phases", s["start_phases_ns"])
    for lo, hi in ((200, 300), (700, 760), (760, 780), (780, 790), (790, 800), (800, 801), (801, 820), (820, 822), (822, 840)):
        seg = times[lo:hi]
        print(f"  steps {lo}-{hi - 1}: extra us a step {statistics.mean(seg) - base:8.1f}  total extra ms {(sum(seg) - base * len(seg)) / 1e3:6.2f}")
