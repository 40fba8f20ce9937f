"""Test-wide setup. CPU tests run real Triton kernels in Triton's interpreter mode, which must
be switched on before triton is first imported; the GPU round (tests/gpu on the GPU machine)
sets FLAGTREE_GPU_TESTS=1 to keep real launches."""
import functools
import os
import re
import sys

import pytest

if os.environ.get("FLAGTREE_GPU_TESTS") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")

sys.path.insert(0, os.path.dirname(__file__))

# What the tests drive the native core with by hand (flagtree.profiler._native.testing) is built only
# with the CMake option FLAGTREE_PROFILER_TESTING; a test that needs it fails, never skips, and says how.
NATIVE_TESTING_BUILD = ('this build of the native core has no _native.testing (the CMake option '
                        'FLAGTREE_PROFILER_TESTING is off): build the test core with '
                        'pip install -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON ".[test]", or dev/build_native.sh')
_NO_TESTING = "has no attribute 'testing'"
# A module that names it (child processes' code included, whose failures do not quote the error).
_USES_TESTING = re.compile(r"\b(_?native|n)\.testing\.")
_failed_for_testing = []


def native_has_testing():
    from flagtree.profiler import _native

    return hasattr(_native, "testing")


@functools.lru_cache(maxsize=None)
def _module_uses_testing(path):
    with open(path, encoding="utf-8") as f:
        return bool(_USES_TESTING.search(f.read()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if not report.failed or native_has_testing():
        return
    if _NO_TESTING in report.longreprtext or _module_uses_testing(str(item.fspath)):
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            crash.message = f"{NATIVE_TESTING_BUILD}; {crash.message}"
        report.sections.append(("_native.testing", NATIVE_TESTING_BUILD))
        _failed_for_testing.append(report.nodeid)


def pytest_terminal_summary(terminalreporter):
    if _failed_for_testing:
        terminalreporter.section("_native.testing missing", red=True)
        terminalreporter.line(f"{len(_failed_for_testing)} tests failed: {NATIVE_TESTING_BUILD}")
