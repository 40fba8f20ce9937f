import pytest

from flagtree.profiler.kernel_scopes.options import parse_mode


def test_defaults_and_canonical_form(monkeypatch):
    monkeypatch.delenv("FLAGTREE_PROFILER_INSTRUMENT_TRITON", raising=False)
    options = parse_mode(None)
    assert (options.granularity, options.buffer_type, options.buffer_strategy, options.clock, options.triton) == (
        "warp", "shared", "circular", 64, False)
    assert parse_mode(options.canonical()) == options
    assert "," not in options.compiler_mode()  # Triton splits instrumentation modes on commas


def test_options_parse(monkeypatch):
    monkeypatch.delenv("FLAGTREE_PROFILER_INSTRUMENT_TRITON", raising=False)
    options = parse_mode("buffer_size=4096:buffer_type=global:clock=32:triton=on:pool_mb=64")
    assert (options.buffer_size, options.buffer_type, options.clock, options.triton, options.pool_mb) == (
        4096, "global", 32, True, 64)


def test_env_opts_triton_kernels_in(monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_INSTRUMENT_TRITON", "1")
    assert parse_mode("").triton is True
    assert parse_mode("triton=off").triton is False  # the mode wins over the environment


@pytest.mark.parametrize("mode, says", [("granularity=cta", "granularity='cta'"), ("buffer_size=-1", "outside"),
                                        ("colour=red", "unknown option"), ("clock", "not key=value"),
                                        ("buffer_strategy=flush", "buffer_strategy='flush'")])
def test_bad_modes_name_the_problem_and_the_forms(mode, says):
    with pytest.raises(ValueError) as error:
        parse_mode(mode)
    assert says in str(error.value) and "supported forms" in str(error.value)
