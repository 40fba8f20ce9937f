#!/usr/bin/env bash
# The CPU test suite against an AddressSanitizer build of the native core and of the stand-in
# libraries (found a use-after-free in the Chrome trace writer and a race in three stand-ins).
# Python itself is not instrumented: libasan (and libstdc++, for its exception interceptor) are
# preloaded. Reports go to build/asan/report.<pid>; the script fails if there is any.
#   bash dev/asan_tests.sh [pytest args...]        (~10 min on the 2-core machine)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/asan/build.ninja ] || ! grep -q '^FLAGTREE_PROFILER_TESTING:BOOL=ON' build/asan/CMakeCache.txt; then
  cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="-fsanitize=address -fno-omit-frame-pointer" \
    -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=address" -DPython_EXECUTABLE="$(command -v python3)" \
    -DFLAGTREE_PROFILER_TESTING=ON >/dev/null
fi
cmake --build build/asan -j2 >build/asan/last.log 2>&1 || { cat build/asan/last.log; exit 1; }
rm -rf build/asan/src build/asan/report.*
cp -r src build/asan/src
cp build/asan/_native*.so build/asan/src/flagtree/profiler/
export CC="gcc -fsanitize=address -fno-omit-frame-pointer -g"  # the stand-ins (tests/standins/build.py)
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
export ASAN_OPTIONS="detect_leaks=0:log_path=$PWD/build/asan/report"
PYTHONPATH="$PWD/build/asan/src" python3 -m pytest -q -p no:cacheprovider tests "$@" || status=$?
if ls build/asan/report.* >/dev/null 2>&1; then
  echo "AddressSanitizer reports:"; head -30 build/asan/report.*; exit 1
fi
exit "${status:-0}"
