#!/usr/bin/env bash
# Developer loop without pip: builds the native core into build/dev and drops it into src/, so
# that `PYTHONPATH=$PWD/src python -m pytest -q tests` runs this checkout (subprocess tests too,
# since PYTHONPATH is absolute). Incremental: a rebuild after one edited file takes seconds.
# Built with FLAGTREE_PROFILER_TESTING=ON (the tests' _native.testing and the bench floor).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/dev/build.ninja ] || ! grep -q '^FLAGTREE_PROFILER_TESTING:BOOL=ON' build/dev/CMakeCache.txt; then
  cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v python3)" \
    -DFLAGTREE_PROFILER_TESTING=ON >/dev/null
fi
if ! cmake --build build/dev -j2 >build/dev/last.log 2>&1; then cat build/dev/last.log; exit 1; fi
grep -E "warning:" build/dev/last.log || true
cp build/dev/_native*.so src/flagtree/profiler/
