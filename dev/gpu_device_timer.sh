#!/usr/bin/env bash
# One GPU round for backend="device_timer": install, GPU tests, benchmark; logs under $OUT.
# Run from the checkout's root on the GPU machine (wheels of llnl-hatchet in ../.whl).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site ../.whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-build-isolation --no-deps -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON . >"$OUT/install.log" 2>&1 || { tail -40 "$OUT/install.log"; exit 1; }
cd /tmp  # import the installed package, not the source tree
ROOT=$OLDPWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/machine.txt" 2>&1
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  FLAGTREE_GPU_TESTS=1 PYTHONUNBUFFERED=1 timeout 300 python3 -m pytest -q -p no:cacheprovider \
    "$ROOT/tests/gpu/test_device_timer_gpu.py" ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/gpu-tests.log" | tail -40
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  PYTHONUNBUFFERED=1 timeout 240 python3 "$ROOT/bench/device_timer.py" --reps "${REPS:-5}" --out "$OUT" \
    >"$OUT/bench.log" 2>"$OUT/bench.err"; echo "bench rc=$?"; tail -5 "$OUT/bench.err"; cat "$OUT/bench.log"
fi
