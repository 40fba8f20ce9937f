"""Exact text output of the viewer: tree, depth, threshold, filters, sorting, names."""

import textwrap

from viewer_helpers import fixture

NESTED = fixture("nested_scopes.hatchet")


def expect(text):
    return textwrap.dedent(text).lstrip("\n")


def test_default_metric_is_time_in_the_unit_each_value_reads_best_in(viewer):
    status, out, err = viewer("-d", "1", NESTED)
    assert (status, err) == (0, "")
    assert out == expect("""
             time
        10.000 ms  ROOT
         8.500 ms  |- /home/u/app.py:42@main
         1.500 ms  `- /home/u/app.py:80@save
    """)


def test_full_tree_sorted_by_first_metric(viewer):
    status, out, _ = viewer("-m", "time/ms,count,avg_time/us", NESTED)
    assert status == 0
    assert out == expect("""
        time/ms  count  avg_time/us
         10.000     10     1000.000  ROOT
          8.500      9      944.444  |- /home/u/app.py:42@main
          4.500      3     1500.000  |  |- backward
          4.000      2     2000.000  |  |  |- attn_bwd
          0.500      1      500.000  |  |  `- /home/u/model.py:7@grad_fn
          0.500      1      500.000  |  |     `- reduce_kernel
          4.000      6      666.667  |  `- forward
          3.000      4      750.000  |     |- layernorm_kernel
          1.000      2      500.000  |     `- attn_fwd
          1.500      1     1500.000  `- /home/u/app.py:80@save
          1.500      1     1500.000     `- copy_kernel
    """)


def test_sort_uses_first_metric(viewer):
    _, out, _ = viewer("-m", "count,time/ms", "-d", "3", "-i", "forward", NESTED)
    assert out == expect("""
        count  time/ms
            6    4.000  ROOT
            6    4.000  `- /home/u/app.py:42@main
            6    4.000     `- forward
            4    3.000        |- layernorm_kernel
            2    1.000        `- attn_fwd
    """)


def test_depth_zero_prints_only_root(viewer):
    _, out, _ = viewer("-m", "time/ms", "-d", "0", NESTED)
    assert out == "time/ms\n 10.000  ROOT\n"


def test_threshold_and_depth(viewer):
    _, out, _ = viewer("-m", "time/ms", "-t", "0.1", "-d", "2", NESTED)
    assert out == expect("""
        time/ms
         10.000  ROOT
          8.500  |- /home/u/app.py:42@main
          4.500  |  |- backward
          4.000  |  `- forward
          1.500  `- /home/u/app.py:80@save
          1.500     `- copy_kernel
    """)


def test_threshold_hides_subtrees_below_share(viewer):
    _, out, _ = viewer("-m", "time/%", "-t", "0.1", NESTED)
    assert out == expect("""
         time/%
        100.000  ROOT
         85.000  |- /home/u/app.py:42@main
         45.000  |  |- backward
         40.000  |  |  `- attn_bwd
         40.000  |  `- forward
         30.000  |     |- layernorm_kernel
         10.000  |     `- attn_fwd
         15.000  `- /home/u/app.py:80@save
         15.000     `- copy_kernel
    """)


def test_include_keeps_paths_and_recomputes_ancestors(viewer):
    _, out, _ = viewer("-m", "time/ms", "-i", "attn", NESTED)
    assert out == expect("""
        time/ms
          5.000  ROOT
          5.000  `- /home/u/app.py:42@main
          4.000     |- backward
          4.000     |  `- attn_bwd
          1.000     `- forward
          1.000        `- attn_fwd
    """)


def test_include_keeps_descendants_of_match(viewer):
    _, out, _ = viewer("-m", "time/ms", "-i", "^backward$", NESTED)
    assert out == expect("""
        time/ms
          4.500  ROOT
          4.500  `- /home/u/app.py:42@main
          4.500     `- backward
          4.000        |- attn_bwd
          0.500        `- /home/u/model.py:7@grad_fn
          0.500           `- reduce_kernel
    """)


def test_include_without_match_leaves_root(viewer):
    _, out, _ = viewer("-m", "time/ms", "-i", "nothing_matches", NESTED)
    assert out == "time/ms\n      -  ROOT\n"


def test_exclude_drops_subtrees_and_their_time(viewer):
    _, out, _ = viewer("-m", "time/ms", "-e", "forward|save", NESTED)
    assert out == expect("""
        time/ms
          4.500  ROOT
          4.500  `- /home/u/app.py:42@main
          4.500     `- backward
          4.000        |- attn_bwd
          0.500        `- /home/u/model.py:7@grad_fn
          0.500           `- reduce_kernel
    """)


def test_include_and_exclude_together(viewer):
    _, out, _ = viewer("-m", "time/ms", "-i", "app.py", "-e", "grad|layernorm", "-d", "2", NESTED)
    assert out == expect("""
        time/ms
          6.500  ROOT
          5.000  |- /home/u/app.py:42@main
          4.000  |  |- backward
          1.000  |  `- forward
          1.500  `- /home/u/app.py:80@save
          1.500     `- copy_kernel
    """)


def test_print_sorted_lists_leaves_with_paths(viewer):
    _, out, _ = viewer("--print-sorted", "-m", "avg_time/us,time/ns", "-f", "file:function:line", NESTED)
    assert out == expect("""
        avg_time/us  time/ns
           2000.000  4000000  app.py:main:42 -> backward -> attn_bwd
           1500.000  1500000  app.py:save:80 -> copy_kernel
            750.000  3000000  app.py:main:42 -> forward -> layernorm_kernel
            500.000  1000000  app.py:main:42 -> forward -> attn_fwd
            500.000   500000  app.py:main:42 -> backward -> model.py:grad_fn:7 -> reduce_kernel
    """)


def test_print_sorted_with_depth_treats_cut_nodes_as_leaves(viewer):
    _, out, _ = viewer("--print-sorted", "-m", "time/ms", "-d", "2", NESTED)
    assert out == expect("""
        time/ms
          4.500  /home/u/app.py:42@main -> backward
          4.000  /home/u/app.py:42@main -> forward
          1.500  /home/u/app.py:80@save -> copy_kernel
    """)


def test_print_sorted_includes_kernels_with_children(viewer):
    _, out, _ = viewer("--print-sorted", "-m", "time/ms,cycles", NESTED, fixture("cycles.hatchet"))
    assert out == expect("""
        time/ms  cycles
          4.000       -  /home/u/app.py:42@main -> backward -> attn_bwd
          3.000       -  /home/u/app.py:42@main -> forward -> layernorm_kernel
          1.500       -  /home/u/app.py:80@save -> copy_kernel
          1.000    4000  /home/u/app.py:42@main -> forward -> attn_fwd
          0.500       -  /home/u/app.py:42@main -> backward -> /home/u/model.py:7@grad_fn -> reduce_kernel
              -    1200  /home/u/app.py:42@main -> forward -> attn_fwd -> load_q
              -    2800  /home/u/app.py:42@main -> forward -> attn_fwd -> mma
    """)


def test_print_sorted_threshold(viewer):
    _, out, _ = viewer("--print-sorted", "-m", "time/%", "-t", "0.3", NESTED)
    assert out == expect("""
        time/%
        40.000  /home/u/app.py:42@main -> backward -> attn_bwd
        30.000  /home/u/app.py:42@main -> forward -> layernorm_kernel
    """)


def test_frame_format_function_line(viewer):
    _, out, _ = viewer("-f", "function:line", "-m", "cpu_time/us", NESTED)
    assert out == expect("""
        cpu_time/us
           5500.000  ROOT
           5300.000  |- main:42
            300.000  |  |- backward
            300.000  |  |  |- grad_fn:7
                  -  |  |  |  `- reduce_kernel
                  -  |  |  `- attn_bwd
                  -  |  `- forward
                  -  |     |- attn_fwd
                  -  |     `- layernorm_kernel
            200.000  `- save:80
                  -     `- copy_kernel
    """)


def test_frame_format_file_function(viewer):
    _, out, _ = viewer("-f", "file:function", "-m", "time/ms", "-d", "1", NESTED)
    assert out.splitlines()[2:] == ["  8.500  |- app.py:main", "  1.500  `- app.py:save"]


def test_frame_format_file_function_line(viewer):
    _, out, _ = viewer("-f", "file:function:line", "-m", "time/ms", "-d", "1", NESTED)
    assert out.splitlines()[2:] == ["  8.500  |- app.py:main:42", "  1.500  `- app.py:save:80"]


def test_frame_format_full_is_default(viewer):
    _, full, _ = viewer("-f", "full", NESTED)
    _, default, _ = viewer(NESTED)
    assert full == default
    assert "/home/u/app.py:42@main" in full

