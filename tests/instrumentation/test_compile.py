"""backend="instrumentation" at compile time, with Triton's real compiler (sm_90 target, no GPU):
kernels compiled inside the hook carry clock reads and scope records, kernels outside do not,
the two never share a cache entry, and the hook leaves Triton as it found it."""
def test_kernel_compiled_in_hook_has_scope_records_and_clock_reads(compiled):
    case = compiled["cases"]["triton_on"]
    assert case["records"] == 4  # enter/exit of "load" and of "store"
    assert case["clock_reads"] > 0
    assert case["profile_scratch_size"] > 0
    assert sorted(case["scope_names"].values()) == ["load", "store"]


def test_kernel_compiled_outside_is_untouched(compiled):
    for name in ("plain", "plain_again", "gluon_plain"):
        case = compiled["cases"][name]
        assert case["records"] == 0 and case["clock_reads"] == 0 and case["profile_scratch_size"] == 0


def test_instrumented_and_plain_binaries_have_different_cache_keys(compiled):
    cases = compiled["cases"]
    assert cases["plain"]["hash"] == cases["plain_again"]["hash"]
    hashes = {cases[n]["hash"] for n in ("plain", "triton_on", "triton_off", "small_buffer")}
    assert len(hashes) == 4  # options that change the binary change the key too


def test_triton_kernels_need_opt_in_and_say_so(compiled):
    off = compiled["cases"]["triton_off"]
    assert off["records"] == 0 and off["profile_scratch_size"] == 0
    assert any("triton=on" in w for w in off["warnings"])


def test_gluon_kernels_are_instrumented_by_default(compiled):
    case = compiled["cases"]["gluon_on"]
    assert case["records"] == 2 and case["scope_names"] == {"0": "copy"}


def test_nested_scopes_keep_their_parent(compiled):
    case = compiled["cases"]["nested"]
    names = case["scope_names"]
    inner = next(k for k, v in names.items() if v == "inner")
    outer = next(k for k, v in names.items() if v == "outer")
    assert case["scope_parents"] == {inner: int(outer)}


def test_buffer_size_option_reaches_the_compiler(compiled):
    assert compiled["cases"]["small_buffer"]["profile_scratch_size"] < compiled["cases"]["triton_on"][
        "profile_scratch_size"]


def test_hook_restores_triton_state(compiled):
    assert compiled["after"]["knob"] == compiled["before"]["knob"] == ""
    assert compiled["after"]["class_attribute"] == compiled["before"]["class_attribute"]
    assert compiled["after"]["registered_points"] == []
