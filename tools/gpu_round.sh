#!/usr/bin/env bash
# One GPU round on the GPU machine (see shared/DEVICE.md): install, GPU tests, benchmarks.
# Usage (device tool, with carry [".whl"]): bash tools/gpu_round.sh [tests|bench|scale|probe|pcsampling|all] [pytest args...]
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
python3 -m pip install -q --no-build-isolation --no-deps . > "$OUT/install.log" 2>&1 || { tail -30 "$OUT/install.log"; exit 1; }
echo "install: $(( $(date +%s) - t0 )) s"
python3 - <<'PY' | tee "$OUT/env.txt"
import torch, triton, flagtree.profiler as p
from flagtree.profiler import _native
from flagtree.profiler.backends.nvidia import cupti_candidates
print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))
print("driver", _native.cuda_driver_version(), "cupti candidates", cupti_candidates(13)[:4])
print("loaded cupti:", [l.split()[-1] for l in open("/proc/self/maps") if "libcupti" in l][:3])
PY
if [ "$what" = tests ] || [ "$what" = all ]; then
  FLAGTREE_GPU_TESTS=1 timeout 400 python3 -m pytest -q -p no:cacheprovider tests/gpu "$@" 2>&1 | tee "$OUT/pytest_gpu.log" | tail -40
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  timeout 420 python3 bench/run_all.py --out "$OUT" "$@" 2>&1 | tee "$OUT/bench.log" | tail -40
  timeout 150 python3 bench/scale.py 2>&1 | tee "$OUT/scale.json" | tail -3
fi
if [ "$what" = probe ] || [ "$what" = probe-pcsampling ]; then  # CUPTI PC-sampling API check (issue #7)
  timeout 590 python3 tools/probe_pcsampling.py --out "$OUT" 2>&1 | tee "$OUT/probe_pcsampling.log" | tail -60
fi
if [ "$what" = pcsampling ]; then  # issue #7: PC-sampling GPU tests and overhead
  FLAGTREE_GPU_TESTS=1 timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_pcsampling_gpu.py 2>&1 | tee "$OUT/pytest_pcsampling.log" | tail -30
  timeout 280 python3 bench/pcsampling_bench.py "$@" 2>&1 | tee "$OUT/pcsampling_bench.log" | tail -12
fi
if [ "$what" = scale ]; then
  timeout 300 python3 bench/scale.py "$@" 2>&1 | tee "$OUT/scale.log" | tail -5
fi
