// Included ahead of every source in a stable-ABI build (CMakeLists.txt): on the limited API
// Python.h no longer includes <stdio.h>, and nanobind's headers use stderr. libstdc++ brings it
// in by the way, libc++ (the wheels' zig toolchain) does not. Python.h stays first, as it must.
#pragma once
#include <Python.h>
#include <stdio.h>
