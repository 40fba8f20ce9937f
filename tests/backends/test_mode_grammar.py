"""The one mode grammar (backends/mode.py): its vendor form (cann, mthreads, tianshu), the forms
the other backends declare, one set of switch words and one error wording."""
import os
import re

import pytest

from flagtree.profiler.backends import get_backend
from flagtree.profiler.backends.mode import (FALSE_WORDS, TRUE_WORDS, ModeGrammar, Option, VendorMode,
                                             vendor_grammar, vendor_mode)

GRAMMAR = vendor_grammar(("aicore", "bandwidth"), (Option("device_id", "int", low=0),
                                                   Option("mstx_enabled", "switch", spelled=("true", "false"))))


def parse(mode):
    return vendor_mode(GRAMMAR.parse(mode, "cann"))


def test_none_is_the_default_mode():
    assert parse(None) == VendorMode(True, (), {})
    assert parse(None).canonical() == "runtime_base=on"


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


@pytest.mark.parametrize("word", TRUE_WORDS + FALSE_WORDS)
def test_one_set_of_switch_words(word):
    assert parse(f"mstx_enabled={word.upper()}").options["mstx_enabled"] is (word in TRUE_WORDS)


@pytest.mark.parametrize("mode, words", [
    ("vendor_metrics=aicore,flops", ["unknown vendor metric 'flops'", "aicore, bandwidth"]),
    ("colour=red", ["unknown option 'colour'", "device_id=<n>"]),
    ("fast", ["unknown word 'fast'", "runtime_base[=on|off]"]),
    ("device_id=zero", ["device_id must be an integer"]),
    ("device_id=-1", ["device_id must be between 0"]),
    ("runtime_base=maybe", ["runtime_base must be on or off"]),
    ("mstx_enabled", ["mstx_enabled needs a value"]),
])
def test_bad_modes_name_the_token_and_the_valid_forms(mode, words):
    with pytest.raises(ValueError) as error:
        parse(mode)
    text = str(error.value)
    assert text.startswith(f"backend 'cann' does not support mode {mode!r}: ")
    assert text.endswith("supported forms: runtime_base[=on|off]:vendor_metrics=aicore,bandwidth:device_id=<n>:"
                          "mstx_enabled=on|off")
    for word in words:
        assert word in text


def test_a_mode_that_is_not_a_string_is_an_error():
    with pytest.raises(ValueError, match="a mode must be a string"):
        parse(3)


HEADED = ModeGrammar((Option("interval", "int", default=10, low=5, high=31),
                      Option("range", "choice", default="session", choices=("session", "launch"))),
                     head="pcsampling", separator=",")


def test_commas_and_colons_separate_options_alike_and_the_head_is_required():
    for mode in ("pcsampling:interval=9,range=launch", "pcsampling:interval=9:range=launch",
                 "pcsampling,range=launch,interval=9"):
        parsed = HEADED.parse(mode, "cupti")
        assert parsed.values == {"interval": 9, "range": "launch"} and parsed.given == {"interval", "range"}
        assert parsed.canonical() == "pcsampling:interval=9,range=launch"
    with pytest.raises(ValueError, match="must start with 'pcsampling'"):
        HEADED.parse("interval=9", "cupti")
    with pytest.raises(ValueError, match="range must be one of session, launch, got 'all'"):
        HEADED.parse("pcsampling:range=all", "cupti")


def test_a_list_keeps_its_items_in_order_and_refuses_an_empty_one():
    grammar = ModeGrammar((Option("metrics", "list", bare=("a", "b"), label="metric name"),))
    assert grammar.parse("metrics", "nvidia")["metrics"] == ("a", "b")
    assert grammar.parse("metrics= y ,x,y", "nvidia")["metrics"] == ("y", "x")
    with pytest.raises(ValueError, match="empty metric name"):
        grammar.parse("metrics=a,,b", "nvidia")


def test_a_backend_without_options_takes_no_mode():
    with pytest.raises(ValueError, match="unknown word 'fast'; supported forms: none \\(leave mode unset\\)"):
        ModeGrammar().parse("fast", "interpreter")
    assert ModeGrammar().parse(None, "interpreter").text is None


def test_a_text_value_keeps_its_commas():
    grammar = ModeGrammar((Option("path"), Option("device_id", "int")))
    parsed = grammar.parse("path=/runs/a,b.csv,device_id=2", "tianshu")
    assert parsed.values == {"path": "/runs/a,b.csv", "device_id": 2}
    with pytest.raises(ValueError, match="path needs a value"):
        grammar.parse("path=", "tianshu")


def test_the_backends_page_shows_the_error_a_backend_really_gives():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "docs", "reference", "backends.md")) as f:
        shown = re.search(r"worded one way for all: `([^`]*)`", f.read()).group(1)
    with pytest.raises(ValueError) as error:
        get_backend("cann").check_mode("colour=red")
    assert " ".join(shown.split()) == str(error.value)
