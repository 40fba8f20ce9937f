"""`flagtree-profiler pytest`: each test runs inside a scope named by its node id
(`test_file.py::test_name`), setup and teardown included, so that in the default (shadow) context
every test's kernels sit under their test instead of all together under ROOT. The python context
needs none: the call stack already names the test."""
from ..scope import scope


def plugin():
    """The pytest plugin object handed to pytest.main."""
    import pytest  # deferred: only pytest targets need it

    class TestScopes:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            with scope(item.nodeid):
                yield

    return TestScopes()
