#!/usr/bin/env bash
# One GPU round on the GPU machine (see shared/DEVICE.md): install, GPU tests, benchmarks.
# Usage (device tool, with carry [".whl"]): bash dev/gpu_round.sh [tests|verify|stamps|tickets|graph-cost|agreement|unverified|unverified-figures|stacks|launch-cost|serving|stepcost|quietrule|windowcost|check|ab|launches|signatures|device-timer|probe-device-timer|bench|scale|handover|fixed|finalize|firstdetail|firststart|probe-instrumentation|probe-pcsampling|pcsampling|probe-counters|counters|instrumentation|all] [pytest args...]
# Everything worth keeping goes to $OUT (or ./out when run by hand).
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
what=${1:-all}; shift || true
export PYTHONUNBUFFERED=1
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
# Headers newer than the machine's CUPTI (carried as .hdr) prove the build/run version split.
if [ -d .hdr/include ]; then export CUDA_HOME=$PWD/.hdr; fi
echo "building against: ${CUDA_HOME:-default headers} $(grep -h '#define CUPTI_API_VERSION ' ${CUDA_HOME:-/usr/local/cuda}/include/cupti_version.h 2>/dev/null)"
t0=$(date +%s)
python3 -m pip install -q --no-build-isolation --no-deps -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON . > "$OUT/install.log" 2>&1 || { tail -30 "$OUT/install.log"; exit 1; }
echo "install: $(( $(date +%s) - t0 )) s"
python3 - <<'PY' | tee "$OUT/env.txt"
import torch, triton, flagtree.profiler as p
from flagtree.profiler import _native
from flagtree.profiler.backends.nvidia.backend import cupti_candidates
print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))
print("driver", _native.nvidia.cuda_driver_version(), "cupti candidates", cupti_candidates(13)[:4])
print("loaded cupti:", [l.split()[-1] for l in open("/proc/self/maps") if "libcupti" in l][:3])
PY
gpu_test() {   # gpu_test SECONDS FILE [pytest args...]: one line (the file's failures and outcome); its log in $OUT
  local limit=$1 file=$2; shift 2
  echo "$(basename "$file" .py): $(FLAGTREE_GPU_TESTS=1 timeout "$limit" python3 -m pytest -q -p no:cacheprovider "$file" "$@" 2>&1 | tee "$OUT/$(basename "$file" .py).log" | grep -E "^E +|passed|failed" | tail -6 | cut -c1-300)"
}
signatures() {   # signatures SECONDS [REPS]: device_timer's per-launch cost for kernels of 1, 5 and 20 arguments (8 repetitions unless told)
  FLAGTREE_BENCH_WORKLOADS=launch_a1,launch_a5,launch_a20 timeout "$1" python3 bench/device_timer.py --reps "${2:-8}" --out "$OUT" > "$OUT/device_timer.log" 2> "$OUT/device_timer.err"; tail -2 "$OUT/device_timer.err"
  python3 dev/summarize_signatures.py "$OUT/device_timer.log"
}
stacks() {   # where a launch's host time goes, none against an active device_timer session (py-spy, native frames)
  for c in none active; do
    timeout 90 /tmp/site/bin/py-spy record --native --rate 200 --format raw -o "$OUT/stacks-$c.txt" -- \
      python3 dev/probe_launch_stacks.py --config $c --seconds 8 --rate-file "$OUT/stacks-$c.txt.rate" > "$OUT/stacks-$c.log" 2>&1 || tail -5 "$OUT/stacks-$c.log"
  done
  python3 dev/probe_launch_stacks.py --summarize "$OUT/stacks-none.txt" "$OUT/stacks-active.txt" | cut -c1-220
}
if [ "$what" = tests ] || [ "$what" = all ]; then
  FLAGTREE_GPU_TESTS=1 timeout 540 python3 -m pytest -q -p no:cacheprovider tests/gpu "$@" 2>&1 | tee "$OUT/pytest_gpu.log" | tail -40
fi
if [ "$what" = unverified ]; then   # what was merged without a GPU run: its tests with their own time limits, then the figures
  for t in tests/gpu/test_device_timer_gpu.py tests/gpu/test_instrumentation_gpu.py tests/gpu/test_tianshu_hooks_gpu.py \
           tests/gpu/test_parts_gpu.py tests/gpu/test_trigger_gpu.py tests/gpu/test_armed_gpu.py; do
    echo "$t: $(FLAGTREE_GPU_TESTS=1 timeout 100 python3 -m pytest -q -p no:cacheprovider -x "$t" "$@" 2>&1 | tee "$OUT/$(basename "$t" .py).log" | tail -1)"
  done
fi
if [ "$what" = unverified-figures ]; then   # the figures of the same: per-launch costs, the serving loop on device_timer
  timeout 60 python3 dev/probe_launch_cost.py 2>&1 | grep -E "allocator|tiny|serving"
  timeout 200 python3 bench/serving_loop.py --duration 150 --backend device_timer --out "$OUT/serving_loop-device_timer.json" > "$OUT/serving_loop.log" 2>&1; tail -c 600 "$OUT/serving_loop.log"
fi
if [ "$what" = stacks ]; then
  stacks
fi
if [ "$what" = launch-cost ]; then   # the device_timer's launch path: its GPU tests, where a launch's time goes, kernels of 1, 5 and 20 arguments
  for t in tests/gpu/test_armed_gpu.py tests/gpu/test_device_timer_gpu.py; do
    gpu_test 150 "$t"
  done
  stacks
  signatures 240
fi
if [ "$what" = verify ]; then   # the launch door on this Triton: device_timer GPU tests, kernels of 1/5/20 arguments, reduce-overhead's counts, the armed route
  gpu_test 150 tests/gpu/test_device_timer_gpu.py
  signatures 220
  gpu_test 180 tests/gpu/test_launch_paths_gpu.py -k compile_ro
  gpu_test 100 tests/gpu/test_armed_gpu.py
fi
if [ "$what" = stamps ]; then   # a change to the stamps: every GPU test that runs stamped kernels, then kernels of 1/5/20 arguments
  for t in tests/gpu/test_device_timer_gpu.py tests/gpu/test_graph_replays_gpu.py tests/gpu/test_armed_gpu.py tests/gpu/test_unseen_graphs_gpu.py; do
    gpu_test 120 "$t"
  done
  signatures 220
fi
if [ "$what" = tickets ]; then   # graph replays' tickets spread over lanes: the tests that replay stamped graphs, then reduce-overhead's kernels against CUPTI
  for t in tests/gpu/test_graph_replays_gpu.py tests/gpu/test_armed_gpu.py tests/gpu/test_unseen_graphs_gpu.py; do
    gpu_test 120 "$t"
  done
  FLAGTREE_PROFILER_DEVICE_TIMER_ARM=1 timeout 200 python3 bench/launch_paths.py --workloads compile_ro --steps 20 --reps 2 --out "$OUT" > "$OUT/launch_paths.log" 2> "$OUT/launch_paths.err"; tail -3 "$OUT/launch_paths.log"
  python3 - "$OUT" <<'PY'
import glob, json, sys
for path in glob.glob(sys.argv[1] + "/launch_paths-*.json"):
    for name, v in json.load(open(path))["workloads"]["compile_ro"].get("agreement", {}).get("per_kernel", {}).items():
        print(f"{name[:60]:60} {v}")
PY
fi
if [ "$what" = graph-cost ]; then   # a change to the graph stamps: the tests that replay stamped graphs and the device_timer's, then what replays cost (dev/probe_graph_stamps.py)
  for t in tests/gpu/test_graph_replays_gpu.py tests/gpu/test_armed_gpu.py tests/gpu/test_unseen_graphs_gpu.py tests/gpu/test_device_timer_gpu.py; do
    gpu_test 120 "$t"
  done
  timeout 150 python3 dev/probe_graph_stamps.py > "$OUT/probe_graph_stamps.log" 2>&1; tail -4 "$OUT/probe_graph_stamps.log" | cut -c1-700
fi
if [ "$what" = agreement ]; then   # the stamps' time against CUPTI's on the same launches: graph replays by kernel size, FlagGems' kernels; kernels of 1/5/20 arguments
  timeout 150 python3 dev/probe_graph_stamps.py > "$OUT/probe_graph_stamps.log" 2>&1; tail -4 "$OUT/probe_graph_stamps.log" | cut -c1-600
  timeout 200 python3 bench/launch_paths.py --workloads flaggems --steps 20 --reps 2 --out "$OUT" > "$OUT/launch_paths.log" 2> "$OUT/launch_paths.err"; tail -3 "$OUT/launch_paths.err"; tail -2 "$OUT/launch_paths.log"
  python3 - "$OUT" <<'PY'
import glob, json, sys
for path in glob.glob(sys.argv[1] + "/launch_paths-*.json"):
    for name, v in (json.load(open(path))["workloads"]["flaggems"].get("beside") or {}).get("per_kernel", {}).items():
        if v.get("mean_ns_cupti", 0) >= 5000:
            print(f"beside {name[:50]:50} {v}")
PY
  signatures 220
fi
if [ "$what" = serving ]; then   # the armed route's GPU tests, kernels of 1/5/20 arguments, device_timer's session fixed cost, the serving loop
  gpu_test 150 tests/gpu/test_armed_gpu.py
  signatures 150 4
  timeout 80 python3 bench/session_cost.py --sessions 10 --tools device_timer --out "$OUT" > "$OUT/session_cost.log" 2>&1; tail -12 "$OUT/session_cost.log" | cut -c1-400
  timeout 200 python3 bench/serving_loop.py --duration 150 --backend device_timer --out "$OUT/serving_loop-device_timer.json" > "$OUT/serving_loop.log" 2>&1
  python3 dev/summarize_serving.py "$OUT/serving_loop-device_timer.json"
fi
if [ "$what" = stepcost ]; then   # what scope() and step() cost a step: split on the serving model, cold on the host, the serving loop
  timeout 100 python3 dev/probe_armed_parts.py --rounds 14 2>&1 | tee "$OUT/probe_armed_parts.log"
  timeout 60 python3 bench/step_cold_cost.py --rounds 5 --out "$OUT/step_cold_cost.json" > "$OUT/step_cold_cost.log" 2>&1; grep -A6 '"calls_ns"' "$OUT/step_cold_cost.log"
  timeout 170 python3 bench/serving_loop.py --duration 140 --backend device_timer --out "$OUT/serving_loop-device_timer.json" > "$OUT/serving_loop.log" 2>&1
  python3 dev/summarize_serving.py "$OUT/serving_loop-device_timer.json"
fi
if [ "$what" = quietrule ]; then   # a schedule's known-quiet rule on nvidia: its GPU tests, the probe at the serving bench's windows (QUIET_PROBE=0: not), the serving loop (SERVING_S seconds, 300 unless told)
  gpu_test 120 tests/gpu/test_attach_ahead_gpu.py
  gpu_test 150 tests/gpu/test_suspend_gpu.py
  [ "${QUIET_PROBE:-1}" = 1 ] && timeout 100 python3 dev/probe_known_quiet.py --wait 480 --cycles 10 --rounds 3 2>&1 | tee "$OUT/probe_known_quiet.log" | tail -3
  timeout $(( ${SERVING_S:-300} + 60 )) python3 bench/serving_loop.py --duration "${SERVING_S:-300}" --out "$OUT/serving_loop-nvidia.json" > "$OUT/serving_loop.log" 2>&1
  python3 dev/summarize_serving.py "$OUT/serving_loop-nvidia.json"
fi
if [ "$what" = windowcost ]; then   # what a window costs the caller: schedule against a steps trigger, device_timer and nvidia
  timeout 200 python3 dev/probe_window_cost.py --backends device_timer,nvidia --cycles 12 --rounds 2 --cprofile 2>&1 | tee "$OUT/probe_window_cost.log" | grep -v "^ " | head -20
fi
if [ "$what" = check ]; then   # the whole GPU suite, then the figures a change must not worsen
  FLAGTREE_GPU_TESTS=1 timeout 280 python3 -m pytest -q -p no:cacheprovider tests/gpu "$@" 2>&1 | tee "$OUT/pytest_gpu.log" | tail -25
  timeout 80 python3 bench/overhead.py --family ours --workload launch --reps 3 > "$OUT/overhead_launch.json" 2> "$OUT/overhead_launch.err"; tail -c 1500 "$OUT/overhead_launch.json"; echo
  timeout 50 python3 bench/session_cost.py --sessions 10 --tools ours,cupti --no-breakdown --out "$OUT" > "$OUT/session_cost.log" 2>&1; tail -8 "$OUT/session_cost.log"
  timeout 70 python3 bench/device_timer.py --reps 3 --out "$OUT" > "$OUT/device_timer.log" 2> "$OUT/device_timer.err"; tail -3 "$OUT/device_timer.err"; cat "$OUT/device_timer.log"
fi
if [ "$what" = ab ]; then   # this tree against an older one carried as .old (git archive REV | tar -x -C .old): launch loop and sessions, alternating processes
  python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/old -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON ./.old > "$OUT/install_old.log" 2>&1 || { tail -20 "$OUT/install_old.log"; exit 1; }
  for round in ${AB_ROUNDS:-1 2}; do
    for side in new old; do
      if [ "$side" = old ]; then tree=.old; pp=/tmp/old:${PYTHONPATH:-}; else tree=.; pp=${PYTHONPATH:-}; fi
      echo "$side $round launch $(PYTHONPATH=$pp timeout 80 python3 $tree/bench/overhead.py --family ours --workload launch --reps 3 --configs shadow/tree,python/tree 2>/dev/null | tail -c 700)" | tee -a "$OUT/ab.log"
      echo "$side $round sessions $(PYTHONPATH=$pp timeout 60 python3 $tree/bench/session_cost.py --sessions 10 --tools ours --no-breakdown 2>/dev/null | tail -4 | tr '\n' ' ')" | tee -a "$OUT/ab.log"
    done
  done
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  timeout 420 python3 bench/run_all.py --out "$OUT" "$@" 2>&1 | tee "$OUT/bench.log" | tail -40
  timeout 150 python3 bench/scale.py 2>&1 | tee "$OUT/scale.json" | tail -3
  timeout 300 python3 bench/instrumentation.py --reps 5 --out "$OUT" 2>&1 | tee "$OUT/bench_instrumentation.log" | tail -30
fi
if [ "$what" = instrumentation ]; then  # instrumentation alone: probe, its GPU tests, its benchmark
  timeout 300 python3 dev/probe_instrumentation.py 2>&1 | tee "$OUT/probe_instrumentation.log" | tail -40
  FLAGTREE_GPU_TESTS=1 timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_instrumentation_gpu.py "$@" 2>&1 | tee "$OUT/pytest_instrumentation.log" | tail -40
  timeout 300 python3 bench/instrumentation.py --reps 5 --out "$OUT" 2>&1 | tee "$OUT/bench_instrumentation.log" | tail -30
fi
if [ "$what" = probe-instrumentation ]; then  # backend="instrumentation": the route end to end (dev/probe_instrumentation.py)
  timeout 500 python3 dev/probe_instrumentation.py 2>&1 | tee "$OUT/probe_instrumentation.log" | tail -60
fi
if [ "$what" = launches ]; then  # device_timer on every launch path: GPU tests and bench on Liger, FlagGems, torch.compile (wheels in .whl/)
  python3 -c "import liger_kernel, flag_gems" 2>&1 | tail -1
  FLAGTREE_GPU_TESTS=1 timeout 280 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_launch_paths_gpu.py "$@" 2>&1 | tee "$OUT/pytest_launches.log" | grep -E "^E +|passed|failed|skipped" | tail -12 | cut -c1-400
  timeout 300 python3 bench/launch_paths.py --steps 20 --reps 3 --out "$OUT" > "$OUT/launch_paths.log" 2> "$OUT/launch_paths.err"; tail -3 "$OUT/launch_paths.err"; tail -6 "$OUT/launch_paths.log"
fi
if [ "$what" = signatures ]; then  # device_timer's per-launch cost for kernels of 1, 5 and 20 arguments, beside the nvidia backend
  timeout 500 python3 bench/device_timer.py --reps 3 --out "$OUT" > "$OUT/device_timer.log" 2> "$OUT/device_timer.err"; tail -2 "$OUT/device_timer.err"
  python3 dev/summarize_signatures.py "$OUT/device_timer.log"
fi
if [ "$what" = device-timer ]; then  # device_timer: stamp cost, clock in fresh processes, GPU tests, bench; PC-sampling first kernels
  timeout 200 python3 dev/stamp_cost.py > "$OUT/stamp_cost.json" 2> "$OUT/stamp_cost.err"; python3 -c "import json;d=json.load(open('$OUT/stamp_cost.json'));print({k:v['kernel_us'] for k,v in d.items()})"; tail -2 "$OUT/stamp_cost.err"
  timeout 150 python3 dev/clock_repeat.py 2>&1 | tail -4 | cut -c1-400
  FLAGTREE_GPU_TESTS=1 timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_device_timer_gpu.py 2>&1 | grep -E "^E +|passed|failed" | tail -6 | cut -c1-400
  timeout 90 python3 bench/device_timer.py --reps 3 --out "$OUT" > "$OUT/device_timer.log" 2> "$OUT/device_timer.err"; tail -2 "$OUT/device_timer.err"; python3 - "$OUT/device_timer.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["workloads"]
for w, r in d.items():
    for c in ("device_timer", "nvidia", "floor"):
        x = r[c]; print(w, c, {k: round(x[k], 4) for k in ("ratio_with_start_finalize", "loop_ratio", "gpu_time_ratio", "start_median_s", "finalize_median_s")})
    print(w, "agreement", {k: (v["count_device_timer"], v["count_cupti"], round(v["mean_ns_device_timer"]), round(v["mean_ns_cupti"]), round(v["diff_rel"], 4)) for k, v in r["agreement"].items()})
PY
  timeout 150 python3 dev/pcsampling_first.py 2>&1 | cut -c1-300
fi
if [ "$what" = probe-device-timer ]; then  # device_timer: timer step, clock against CUPTI, session cost
  timeout 200 python3 dev/probe_device_timer.py --out "$OUT" > "$OUT/probe_device_timer.log" 2>&1; tail -c 9000 "$OUT/probe_device_timer.log"
  timeout 200 python3 dev/stamp_cost.py > "$OUT/stamp_cost.json" 2> "$OUT/stamp_cost.err"; cat "$OUT/stamp_cost.json"; tail -3 "$OUT/stamp_cost.err"
  FLAGTREE_GPU_TESTS=1 timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_device_timer_gpu.py 2>&1 | tail -6 | cut -c1-600
  for i in 1 2 3; do FLAGTREE_GPU_TESTS=1 timeout 100 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_pcsampling_gpu.py -k "first_tiny" 2>&1 | grep -E "^E +(AssertionError|assert)|passed|failed" | cut -c1-900; done
fi
if [ "$what" = probe-pcsampling ]; then  # CUPTI PC-sampling API check
  timeout 120 python3 dev/probe_pcsampling.py --out "$OUT" 2>&1 | tee "$OUT/probe_pcsampling.log" | tail -60
fi
if [ "$what" = pcsampling ]; then  # PC-sampling GPU tests and overhead
  FLAGTREE_GPU_TESTS=1 timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_pcsampling_gpu.py 2>&1 | tee "$OUT/pytest_pcsampling.log" | tail -30
  timeout 280 python3 bench/pcsampling_bench.py "$@" 2>&1 | tee "$OUT/pcsampling_bench.log" | tail -12
fi
if [ "$what" = scale ]; then
  timeout 300 python3 bench/scale.py "$@" 2>&1 | tee "$OUT/scale.log" | tail -5
fi
if [ "$what" = probe-counters ]; then   # CUPTI Host + Range Profiler API facts, alone then beside a session
  timeout 240 python3 dev/probe_counters.py --json "$OUT/probe_counters.json" 2>&1 | tee "$OUT/probe_counters.log" | tail -60
  timeout 240 python3 dev/probe_counters.py --with-flagtree --json "$OUT/probe_counters_ft.json" > "$OUT/probe_counters_ft.log" 2>&1
  grep -E '^\[|SUMMARY' "$OUT/probe_counters_ft.log" | tail -25
fi
if [ "$what" = counters ] || [ "$what" = all ]; then   # counters GPU tests, then their cost
  FLAGTREE_GPU_TESTS=1 timeout 300 python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_counters_gpu.py 2>&1 | tee "$OUT/pytest_counters.log" | tail -25
  timeout 240 python3 bench/counters_cost.py --out "$OUT" 2>&1 | tee "$OUT/counters_cost.log" | tail -14
fi
if [ "$what" = handover ]; then   # hand-over probe, its GPU tests, session cost
  timeout 400 python3 dev/probe_handover.py 2>&1 | tee "$OUT/probe_handover.log" | tail -20
  FLAGTREE_GPU_TESTS=1 timeout 300 python3 -m pytest -q -rxXs -p no:cacheprovider tests/gpu/test_handover_gpu.py 2>&1 | tee "$OUT/pytest_handover.log" | tail -15
  timeout 500 python3 bench/session_cost.py --sessions 20 --out "$OUT" 2>&1 | tee "$OUT/session_cost.log" | tail -14
fi
if [ "$what" = finalize ]; then   # where a device_timer session's start and finalize go: cProfile with the native calls shown, then py-spy's native stacks under finalize
  timeout 100 python3 dev/probe_fixed_costs.py device_timer --sessions 4 > "$OUT/fixed_costs.log" 2>&1; grep "device_timer session" "$OUT/fixed_costs.log"; grep -A10 "by own time" "$OUT/fixed_costs.log" | tail -10 | cut -c1-120
  timeout 200 /tmp/site/bin/py-spy record --native --rate 1000 --format raw -o /tmp/finalize_stacks.txt -- python3 dev/probe_finalize_stacks.py --sessions 300 > /dev/null 2>&1
  python3 dev/probe_finalize_stacks.py --summarize /tmp/finalize_stacks.txt --under "_finalize_locked (" | cut -c1-170; gzip -c /tmp/finalize_stacks.txt > "$OUT/finalize_stacks.txt.gz"
fi
if [ "$what" = fixed ]; then   # where the fixed costs go, then the benches
  FLAGTREE_GPU_TESTS=1 timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_instrumentation_gpu.py tests/gpu/test_pcsampling_gpu.py 2>&1 | tee "$OUT/pytest_fixed.log" | tail -8
  timeout 200 python3 dev/probe_fixed_costs.py pcsampling 2>&1 | tee "$OUT/probe_pcsampling_cost.log" | grep -v "^ " | tail -40
  timeout 200 python3 dev/probe_fixed_costs.py instrumentation 2>&1 | tee "$OUT/probe_instrumentation_cost.log" | grep -v "^ " | tail -12
  timeout 200 python3 bench/instrumentation.py --reps 5 --out "$OUT" 2>&1 | tee "$OUT/bench_instrumentation.log" | tail -25
  timeout 200 python3 bench/session_cost.py --first 7 --profile-first --out "$OUT" > "$OUT/session_first.log" 2> "$OUT/session_first.err"; tail -30 "$OUT/session_first.log"
fi
if [ "$what" = pcbuf ]; then   # PC sampling's Start/Stop cost against its buffer sizes; the first session
  timeout 240 python3 dev/probe_fixed_costs.py pcsampling --sessions 2 --no-profile --buffers "${PCBUF:-128/16,32/16,8/16,32/4}" 2>&1 | tee "$OUT/probe_pcbuf.log" | grep -v "^ " | tail -40
  timeout 200 python3 bench/session_cost.py --first 5 --profile-first > "$OUT/session_first.log" 2> "$OUT/session_first.err"; tail -45 "$OUT/session_first.log"; grep -A28 "first start" "$OUT/session_first.err" | cut -c1-160
fi
if [ "$what" = control ]; then   # a session range bracketed by Enable/Disable vs Start/Stop
  timeout 200 python3 dev/probe_fixed_costs.py pcsampling --sessions 3 --no-profile --modes "pcsampling:control=start_stop;pcsampling" 2>&1 | tee "$OUT/probe_control.log" | grep -v "^ " | tail -16
  FLAGTREE_GPU_TESTS=1 timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_pcsampling_gpu.py 2>&1 | tee "$OUT/pytest_pcsampling.log" | tail -4
  timeout 250 python3 bench/pcsampling_bench.py --modes pcsampling pcsampling:control=start_stop pcsampling:range=launch 2>&1 | tee "$OUT/pcsampling_bench.log" | tail -5
fi
if [ "$what" = costs ]; then   # the fixed-cost benches, results saved under $OUT
  timeout 200 python3 bench/session_cost.py --first 7 --out "$OUT" > "$OUT/session_first.log" 2>&1; tail -42 "$OUT/session_first.log" | tr -d '\n' | sed 's/  */ /g'; echo
  timeout 200 python3 bench/instrumentation.py --reps 5 --out "$OUT" > "$OUT/bench_instrumentation.log" 2>&1; grep -E "ratio|finalize" "$OUT/bench_instrumentation.log" | head -8
  timeout 180 python3 bench/pcsampling_bench.py > "$OUT/pcsampling_bench.log" 2>&1; tail -6 "$OUT/pcsampling_bench.log"
fi
if [ "$what" = firstdetail ]; then   # the first session's pieces, then the bench
  timeout 120 python3 dev/probe_first_session.py --detail --runs 4 2>&1 | tail -4
  timeout 300 python3 bench/session_cost.py --first "${FIRST:-12}" --profile-first --out "$OUT" > "$OUT/session_first.log" 2> "$OUT/session_first.err"
  python3 -c "import json,glob;d=json.load(open(sorted(glob.glob('$OUT/session_first-*.json'))[-1]));o=d['ours'];c=d['cupti'];print('ours',{k:o[k] for k in ('start','work','finalize','whole')},'cupti',{k:c[k] for k in ('start','work','finalize','whole')},'diff',d.get('ours_minus_cupti_ms'));print({k:round(v,2) for k,v in o['breakdown_ms'].items()});print('ours each',o['whole_each'],'cupti each',c['whole_each'])"
  grep -A32 "first start" "$OUT/session_first.err" | cut -c1-150 | grep -v "^ *$" | head -34
fi
if [ "$what" = firststart ]; then   # the first start's and finalize's pieces, then the bench
  timeout 200 python3 dev/probe_first_session.py --start --runs "${RUNS:-5}" 2>&1 | tail -3
  timeout 360 python3 bench/session_cost.py --first "${FIRST:-12}" --out "$OUT" > "$OUT/session_first.log" 2> "$OUT/session_first.err"
  python3 -c "import json,glob;d=json.load(open(sorted(glob.glob('$OUT/session_first-*.json'))[-1]));o=d['ours'];c=d['cupti'];print('ours',{k:o[k] for k in ('start','work','finalize','whole','whole_without_subscribe')},'cupti',{k:c[k] for k in ('start','work','finalize','whole','whole_without_subscribe')},'diff',d.get('ours_minus_cupti_ms'),'without subscribe',d.get('ours_minus_cupti_without_subscribe_ms'));print('ours',{k:round(v,2) for k,v in o['breakdown_ms'].items()});print('cupti',{k:round(v,2) for k,v in c['breakdown_ms'].items()})"
fi
if [ "$what" = first ]; then   # the first session of a process
  timeout 120 python3 dev/probe_first_session.py --runs 3 2>&1 | tail -6
  timeout 200 python3 bench/session_cost.py --first 7 --out "$OUT" > "$OUT/session_first.log" 2>&1
  python3 -c "import json,glob;d=json.load(open(sorted(glob.glob('$OUT/session_first-*.json'))[-1]));o=d['ours'];c=d['cupti'];print('ours',{k:o[k] for k in ('start','work','finalize','whole')},'cupti',{k:c[k] for k in ('start','work','finalize','whole')},'diff',d.get('ours_minus_cupti_ms'));print({k:round(v,2) for k,v in o['breakdown_ms'].items()})"
fi
