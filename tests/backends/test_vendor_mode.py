"""The vendor backends' mode grammar (cann, mthreads, tianshu), as the prior art spells it."""
import pytest

from flagtree.profiler.backends.vendor.mode_options import VendorMode, parse_bool, parse_vendor_mode

METRICS = ("aicore", "bandwidth")
OPTIONS = {"device_id": int, "mstx_enabled": lambda v: parse_bool(v, "mstx_enabled")}


def parse(mode):
    return parse_vendor_mode(mode, "cann", METRICS, OPTIONS)


def test_none_is_the_default_mode():
    assert parse(None) == VendorMode(True, (), {})


def test_the_prior_arts_example_parses():
    got = parse("runtime_base:device_id=0:vendor_metrics=aicore,bandwidth:mstx_enabled=true")
    assert got.runtime_base is True
    assert got.vendor_metrics == ("aicore", "bandwidth")
    assert got.options == {"device_id": 0, "mstx_enabled": True}
    assert got.canonical() == "runtime_base=on:vendor_metrics=aicore,bandwidth:device_id=0:mstx_enabled=true"
    assert parse(got.canonical()) == got  # the canonical string parses back to the same mode


def test_runtime_base_off_and_repeated_metrics():
    got = parse("runtime_base=off:vendor_metrics=bandwidth,bandwidth")
    assert got.runtime_base is False and got.vendor_metrics == ("bandwidth",)


@pytest.mark.parametrize("mode, words", [
    ("vendor_metrics=aicore,flops", ["unknown vendor metric 'flops'", "aicore, bandwidth"]),
    ("colour=red", ["unknown option 'colour'", "device_id=<value>"]),
    ("fast", ["unknown mode token 'fast'", "runtime_base[=on|off]"]),
    ("device_id=zero", ["bad device_id"]),
    ("runtime_base=maybe", ["runtime_base must be on or off"]),
])
def test_bad_modes_name_the_token_and_the_valid_forms(mode, words):
    with pytest.raises(ValueError) as error:
        parse(mode)
    for word in words:
        assert word in str(error.value)


def test_a_mode_that_is_not_a_string_is_an_error():
    with pytest.raises(ValueError, match="mode must be a string"):
        parse(3)
