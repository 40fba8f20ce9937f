"""bench/serving_loop.py's result in a few lines: each configuration's ratio (median of blocks and
over the whole phase), the profiler's own per-step cost, the collector's time in each
configuration's blocks, the windows' close, memory.

    python3 dev/summarize_serving.py serving_loop.json"""
import json
import sys

result = json.load(open(sys.argv[1]))
phase = result["interleaved"]
print(f"none step {phase['none_step_us']:.1f} us; bookkeeping per step (no model) {result['step_us_no_model']}")
for config, figures in phase.items():
    if isinstance(figures, dict) and "ratio_whole" in figures:
        ci = figures.get("ratio_median_ci95")
        print(f"{config:16} median {figures['ratio_median']:.4f}{f' {ci}' if ci else ''}  "
              f"whole {figures['ratio_whole']:.4f}  step {figures.get('step_us', 0):.1f} us")
for config, figures in phase.get("gc", {}).items():
    print(f"gc {config:16} ms a block {figures['ms_median']:.2f} (total {figures['ms_total']:.1f} ms, "
          f"{figures['full_collections']} full, {figures['blocks']} blocks)")
persistent = result["persistent"]
print("persistent:", {k: persistent[k] for k in ("steps", "step_us", "windows") if k in persistent})
print("memory after first window:", persistent.get("after_first_window"), "end:", persistent.get("end"))
series = persistent.get("memory_series") or []
for row in series[:3] + (["..."] if len(series) > 6 else []) + series[max(3, len(series) - 3):]:
    print("  memory", row)
