#!/usr/bin/env bash
# Developer loop without pip: builds the native core into build/dev and drops it into src/, so
# that `PYTHONPATH=$PWD/src python -m pytest -q tests` runs this checkout (subprocess tests too,
# since PYTHONPATH is absolute). Incremental: a rebuild after one edited file takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/dev/build.ninja ]; then
  cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
fi
cmake --build build/dev -j2 2>&1 | grep -E "warning|error|FAILED" || true
test "${PIPESTATUS[0]}" -eq 0
cp build/dev/_native*.so src/flagtree/profiler/
