"""Helpers shared by the tests (and the benches and probes that reuse the tests' kernels):
json_check (strict, deep JSON checks), kernels and instrumented_kernels (the Triton kernels the
tests run), profiles (reading written profiles), threads, package_path. tests/conftest.py puts
tests/ on sys.path, so they are imported as ``support.<module>``."""
