import pytest

from flagtree.profiler.kernel_scopes.options import InstrumentationOptions, options_from_compiler_mode, parse_mode


def test_defaults_and_canonical_form(monkeypatch):
    monkeypatch.delenv("FLAGTREE_PROFILER_INSTRUMENT_TRITON", raising=False)
    options = parse_mode(None)
    assert (options.granularity, options.buffer_type, options.buffer_strategy, options.clock, options.triton) == (
        "warp", "shared", "circular", 64, False)
    assert parse_mode(options.canonical()) == options
    assert "," not in options.compiler_mode()  # Triton splits instrumentation modes on commas


def test_the_compiler_mode_spells_what_differs_from_the_defaults_and_reads_back(monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_INSTRUMENT_TRITON", "1")  # a compiled kernel's options ignore it
    plain, changed = InstrumentationOptions(), InstrumentationOptions(buffer_size=4096, clock=32)
    assert plain.compiler_mode() == "ftis:" and changed.compiler_mode() == "ftis:buffer_size=4096:clock=32"
    for options in (plain, changed, InstrumentationOptions(triton=True, buffer_type="global")):
        assert options_from_compiler_mode(options.compiler_mode() + "+ftdt3:32:262144:0") == options
    # as kernels compiled by earlier versions carry it in Triton's disk cache
    old = "flagtree-instrumentation:granularity=warp:buffer_type=shared:buffer_strategy=circular:buffer_size=512:clock=64:triton=on"
    assert options_from_compiler_mode(old) == InstrumentationOptions(buffer_size=512, triton=True)
    assert options_from_compiler_mode("ftdt3:32:262144:0") is None and options_from_compiler_mode(None) is None


def test_options_parse(monkeypatch):
    monkeypatch.delenv("FLAGTREE_PROFILER_INSTRUMENT_TRITON", raising=False)
    options = parse_mode("buffer_size=4096:buffer_type=global:clock=32:triton=on:pool_mb=64")
    assert (options.buffer_size, options.buffer_type, options.clock, options.triton, options.pool_mb) == (
        4096, "global", 32, True, 64)


def test_env_opts_triton_kernels_in(monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_INSTRUMENT_TRITON", "1")
    assert parse_mode("").triton is True
    assert parse_mode("triton=off").triton is False  # the mode wins over the environment


@pytest.mark.parametrize("mode, says", [("granularity=cta", "granularity must be one of warp, got 'cta'"),
                                        ("buffer_size=-1", "buffer_size must be between 0 and"),
                                        ("colour=red", "unknown option 'colour'"), ("clock", "clock needs a value"),
                                        ("clock=16", "clock must be one of 64, 32"),
                                        ("buffer_strategy=flush", "buffer_strategy must be one of circular")])
def test_bad_modes_name_the_problem_and_the_forms(mode, says):
    with pytest.raises(ValueError) as error:
        parse_mode(mode)
    assert says in str(error.value) and "supported forms" in str(error.value)
