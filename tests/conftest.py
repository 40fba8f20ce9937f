"""Test-wide setup. CPU tests run real Triton kernels in Triton's interpreter mode, which must
be switched on before triton is first imported; the GPU round (tests/gpu on the GPU machine)
sets FLAGTREE_GPU_TESTS=1 to keep real launches."""
import os
import sys

if os.environ.get("FLAGTREE_GPU_TESTS") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")

sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402

# What the tests drive the native core with by hand (flagtree.profiler._native.testing) is built only
# with the CMake option FLAGTREE_PROFILER_TESTING; a test that needs it fails, never skips, and says how.
NATIVE_TESTING_BUILD = ('this build of the native core has no _native.testing (the CMake option '
                        'FLAGTREE_PROFILER_TESTING is off): build the test core with '
                        'pip install -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON ".[test]", or dev/build_native.sh')
_NO_TESTING = "has no attribute 'testing'"
_failed_for_testing = []


def native_has_testing():
    from flagtree.profiler import _native

    return hasattr(_native, "testing")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.failed and _NO_TESTING in report.longreprtext and not native_has_testing():
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            crash.message = f"{NATIVE_TESTING_BUILD}; {crash.message}"
        report.sections.append(("_native.testing", NATIVE_TESTING_BUILD))
        _failed_for_testing.append(report.nodeid)


def pytest_terminal_summary(terminalreporter):
    if _failed_for_testing:
        terminalreporter.section("_native.testing missing", red=True)
        terminalreporter.line(f"{len(_failed_for_testing)} tests failed: {NATIVE_TESTING_BUILD}")
