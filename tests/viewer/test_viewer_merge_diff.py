"""Merging several profiles, --diff-profile, --list, Proton files, colour and help."""

import textwrap

from viewer_helpers import H100, fixture, kernel, node, tty_run

NESTED = fixture("nested_scopes.hatchet")
OTHER = fixture("other_run.hatchet")
CYCLES = fixture("cycles.hatchet")
PROTON = fixture("proton_matmul.hatchet")


def expect(text):
    return textwrap.dedent(text).lstrip("\n")


def test_merge_same_file_twice_sums_metrics(viewer):
    _, out, _ = viewer("-f", "file:function", "-m", "time/ms,count", NESTED, NESTED)
    assert out == expect("""
        time/ms  count
         20.000     20  ROOT
         17.000     18  |- app.py:main
          9.000      6  |  |- backward
          8.000      4  |  |  |- attn_bwd
          1.000      2  |  |  `- model.py:grad_fn
          1.000      2  |  |     `- reduce_kernel
          8.000     12  |  `- forward
          6.000      8  |     |- layernorm_kernel
          2.000      4  |     `- attn_fwd
          3.000      2  `- app.py:save
          3.000      2     `- copy_kernel
    """)


def test_merge_time_and_cycles_profiles(viewer):
    status, out, _ = viewer("-m", "time/ms,cycles", NESTED, CYCLES)
    assert status == 0
    assert out == expect("""
        time/ms  cycles
         10.000    4000  ROOT
          8.500    4000  |- /home/u/app.py:42@main
          4.500       -  |  |- backward
          4.000       -  |  |  |- attn_bwd
          0.500       -  |  |  `- /home/u/model.py:7@grad_fn
          0.500       -  |  |     `- reduce_kernel
          4.000    4000  |  `- forward
          3.000       -  |     |- layernorm_kernel
          1.000    4000  |     `- attn_fwd
              -    1200  |        |- load_q
              -    2800  |        `- mma
          1.500       -  `- /home/u/app.py:80@save
          1.500       -     `- copy_kernel
    """)


def test_merge_order_does_not_change_values(viewer):
    _, first, _ = viewer("--print-sorted", "-m", "time/ms,cycles,normalized_cycles", NESTED, CYCLES)
    _, second, _ = viewer("--print-sorted", "-m", "time/ms,cycles,normalized_cycles", CYCLES, NESTED)
    assert first == second
    assert "0.300  /home/u/app.py:42@main -> forward -> attn_fwd -> load_q" in first


def test_duplicate_siblings_in_one_file_merge(viewer, write_profile):
    root = node("ROOT", {}, kernel("k", 100, 1), kernel("k", 300, 2))
    _, out, _ = viewer("-m", "time/ns,count", write_profile([root, {}]))
    assert out == "time/ns  count\n    400      3  ROOT\n    400      3  `- k\n"


def test_diff_profile(viewer):
    _, out, _ = viewer("-m", "time/ms,count,time/%", "--diff-profile", OTHER, NESTED)
    assert out == expect("""
        time/ms (diff)  count (diff)  time/% (diff)
                 0.750             0          0.000  ROOT
                 1.500             1         15.000  |- /home/u/app.py:80@save
                 1.500             1         15.000  |  `- copy_kernel
                -0.750            -1        -15.000  `- /home/u/app.py:42@main
                -0.250            -1         -6.351     |- backward
                 0.000             0         -0.405     |  |- /home/u/model.py:7@grad_fn
                 0.000             0         -0.405     |  |  `- reduce_kernel
                 0.000             0         -3.243     |  |- attn_bwd
                -0.250            -1         -2.703     |  `- new_kernel
                -0.500             0         -8.649     `- forward
                 0.500             0          2.973        |- layernorm_kernel
                -1.000             0        -11.622        `- attn_fwd
    """)


def test_protons_diff_spelling_is_the_diff_and_short_depth_options_still_parse(viewer):
    _, diff, _ = viewer("-m", "time/ms,count,time/%", "--diff-profile", OTHER, NESTED)
    assert viewer("-m", "time/ms,count,time/%", "-diff", OTHER, NESTED)[1] == diff
    assert viewer("-m", "time/ms,count,time/%", f"-diff={OTHER}", NESTED)[1] == diff
    _, depth, _ = viewer("-m", "count", "--depth", "1", NESTED)
    assert viewer("-m", "count", "-d", "1", NESTED)[1] == viewer("-m", "count", "-d1", NESTED)[1] == depth


def test_diff_with_threshold_and_format(viewer):
    _, out, _ = viewer("-m", "time/ms", "--diff-profile", OTHER, "-f", "function:line", "-t", "0.5", NESTED)
    assert out == expect("""
        time/ms (diff)
                 0.750  ROOT
                 1.500  |- save:80
                 1.500  |  `- copy_kernel
                -0.750  `- main:42
                -0.500     `- forward
                 0.500        |- layernorm_kernel
                -1.000        `- attn_fwd
    """)


def test_diff_against_itself_is_zero(viewer):
    _, out, _ = viewer("-m", "time/ns,tflop16/s", "--diff-profile", NESTED, "-d", "1", NESTED)
    assert out == expect("""
        time/ns (diff)  tflop16/s (diff)
                     0             0.000  ROOT
                     0             0.000  |- /home/u/app.py:42@main
                     0                 -  `- /home/u/app.py:80@save
    """)


def test_diff_sorted(viewer):
    _, out, _ = viewer("--print-sorted", "-m", "time/us", "--diff-profile", OTHER, NESTED)
    lines = [line.strip() for line in out.splitlines()]
    assert lines[0] == "time/us (diff)"
    assert lines[1] == "1500.000  /home/u/app.py:80@save -> copy_kernel"
    assert lines[-1] == "-1000.000  /home/u/app.py:42@main -> forward -> attn_fwd"
    assert len(lines) == 7


def test_list_metrics(viewer):
    status, out, _ = viewer("-l", PROTON)
    assert status == 0
    assert out == expect(f"""
        Metrics in {PROTON}:
          bytes
          count
          device_id  (identifier, not shown as a value)
          device_type  (identifier, not shown as a value)
          flops16
          time (ns)
        Derived metrics usable with -m:
          time, time/s, time/ms, time/us, time/ns, time/%, avg_time, avg_time/s, avg_time/ms, avg_time/us, avg_time/ns, flop16/s, gflop16/s, tflop16/s, flop/s, gflop/s, tflop/s, byte/s, gbyte/s, tbyte/s, util
    """)


def test_list_merged_metrics(viewer):
    _, out, _ = viewer("--list", NESTED, CYCLES)
    assert out.splitlines()[0] == f"Metrics in {NESTED}, {CYCLES}:"
    assert "  cycles" in out.splitlines() and "  cpu_time (ns)" in out.splitlines()
    assert "cpu_time/us" in out


def test_proton_profile(viewer):
    status, out, _ = viewer("-m", "time/ms,count,tflop16/s,util", PROTON)
    assert status == 0
    assert out == expect("""
        time/ms  count  tflop16/s   util
          1.250     11    879.609      -
          1.000      1   1099.512      -  |- matmul_8192
          1.000      1   1099.512  1.111  |  `- matmul_kernel
          0.250     10          -  0.716  `- add_kernel
    """).replace("-\n", "-  ROOT\n", 1)


def test_colour_on_terminal(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    status, out = tty_run(monkeypatch, "-m", "time/ms", "-d", "1", PROTON)
    assert status == 0
    assert out.splitlines()[0] == "\x1b[1mtime/ms\x1b[0m"
    assert "\x1b[31m  1.250\x1b[0m  ROOT" in out
    assert "\x1b[31m  1.000\x1b[0m  |- matmul_8192" in out
    assert "\x1b[33m  0.250\x1b[0m  \x1b[36m`- add_kernel\x1b[0m" in out


def test_no_color_env_and_flag(monkeypatch, viewer):
    _, plain, _ = viewer("-m", "time/ms", PROTON)
    monkeypatch.setenv("NO_COLOR", "1")
    assert tty_run(monkeypatch, "-m", "time/ms", PROTON) == (0, plain)
    monkeypatch.delenv("NO_COLOR")
    assert tty_run(monkeypatch, "--no-color", "-m", "time/ms", PROTON) == (0, plain)
    assert "\x1b[" not in plain


def test_diff_colours_sign(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    _, out = tty_run(monkeypatch, "-m", "time/ms", "--diff-profile", OTHER, "-d", "1", NESTED)
    assert "\x1b[31m         1.500\x1b[0m  |- /home/u/app.py:80@save" in out
    assert "\x1b[32m        -0.750\x1b[0m  `- /home/u/app.py:42@main" in out


def test_help_documents_options_with_examples(viewer):
    status, out, _ = viewer("-h")
    assert status == 0
    for option in ("--metrics", "--include", "--exclude", "--depth", "--threshold",
                   "--print-sorted", "--list", "--format", "--diff-profile", "--no-color"):
        assert option in out
    assert "examples:" in out
    assert "flagtree-profiler-viewer -m time/ms --diff-profile before.hatchet after.hatchet" in out


def test_python_dash_m_entry_point():
    import os
    import subprocess
    import sys
    from pathlib import Path

    from support.package_path import PACKAGE_ROOT

    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "flagtree.profiler.viewer", "-m", "count", PROTON],
                          capture_output=True, text=True, env=env, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[1] == "   11  ROOT"


def test_device_info_written_by_hand_is_used(viewer, write_profile):
    path = write_profile([node("ROOT", {}, kernel("k", 1_000_000, flops16=989_400_000_000)), H100])
    _, out, _ = viewer("-m", "util", path)
    assert out == " util\n    -  ROOT\n1.000  `- k\n"  # util on kernels only
