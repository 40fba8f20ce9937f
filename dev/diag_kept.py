import json, os, sys, tempfile
sys.path.insert(0, "tests/gpu")
import torch, flagtree.profiler as profiler
from test_pcsampling_gpu import run_slow, _samples_and_kernels
run_slow(1, 10)
d = tempfile.mkdtemp()
keys = ("taken_samples", "first_read_samples", "discarded_samples", "late_samples", "marker_samples", "settle_fallbacks",
        "dropped_samples", "hardware_buffer_full", "settle_s", "first_arrival_s", "last_arrival_s", "longest_gap_s", "get_data_calls")
for i, mode in enumerate(["pcsampling:keep=off", "pcsampling", "pcsampling", "pcsampling", "pcsampling", "pcsampling:keep=off"]):
    base = os.path.join(d, f"s{i}")
    profiler.start(base, backend="cupti_pcsampling", mode=mode)
    run_slow(2)
    profiler.finalize()
    m = json.load(open(base + ".meta.json"))
    print(i, mode, _samples_and_kernels(base)[0], {k: (round(m["pcsampling_" + k] * 1e3, 1) if k.endswith("_s") else m["pcsampling_" + k]) for k in keys if "pcsampling_" + k in m}, flush=True)
