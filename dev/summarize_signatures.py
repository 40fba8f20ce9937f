"""bench/device_timer.py's result, one line per workload and configuration: the ratio with start
and finalize, the loop's ratio, and the extra nanoseconds a launch.

    python3 dev/summarize_signatures.py device_timer.log"""
import json
import sys

workloads = json.load(open(sys.argv[1]))["workloads"]
print("workload    config        with start+finalize [95%]      loop   per-launch extra ns")
for workload, result in workloads.items():
    for config in ("device_timer", "nvidia"):
        if config in result:
            x = result[config]
            low, high = x.get("ratio_ci95", [float("nan")] * 2)
            print(f"{workload:11} {config:13} {x['ratio_with_start_finalize']:.3f} [{low:.3f}, {high:.3f}]     "
                  f"{x['loop_ratio']:.3f}  {x['per_launch_extra_ns']:.0f}")
            fine = x.get("fine")
            if fine:
                low, high = fine["ratio_with_start_finalize_ci95"]
                print(f"{'':11} {'  fine':13} {fine['ratio_with_start_finalize']:.3f} [{low:.3f}, {high:.3f}]     "
                      f"{fine['loop_ratio']:.3f}  ({fine['pairs']} pairs of {fine['block_launches']} launches)")
