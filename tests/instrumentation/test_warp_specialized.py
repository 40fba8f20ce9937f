"""A warp-specialized Hopper kernel under backend="instrumentation" (sm_90 compile, no GPU):
its block holds num_warps + the partitions' warps (12 here), and Triton's lowering needs the
block's record buffer to split into a power-of-two segment per warp: the default 1024-byte buffer
failed the compile ("buffer-size per segment must be power of 2"); the hook now sizes it per
module."""
import json
import os
import subprocess
import sys

import pytest

from flagtree.profiler.kernel_scopes.compiler_hook import block_buffer_bytes, total_warps
from flagtree.profiler.kernel_scopes.warp_specialized import hoist_records
from support.triton_needs import skip_without_compiler_hooks

HERE = os.path.dirname(__file__)


def test_block_buffer_splits_into_power_of_two_segments():
    assert block_buffer_bytes(1024, 4) == 1024  # the common case is unchanged
    assert block_buffer_bytes(1024, 12) == 768  # 12 x 64: the largest such size <= 1024
    assert block_buffer_bytes(2048, 12) == 1536
    assert block_buffer_bytes(0, 12) == 0  # Triton chooses
    for warps in range(1, 33):
        size = block_buffer_bytes(1024, warps)
        per = size // warps
        assert size % warps == 0 and per & (per - 1) == 0 and (size <= 1024 or per == 8)


def test_total_warps_counts_the_partitions():
    module = ('module attributes {"ttg.num-warps" = 4 : i32} {\n  ttg.warp_specialize(%a) attributes {}\n'
              '  default {\n  }\n  partition0(%x: i32) num_warps(4) {\n  }\n  partition1(%x: i32) num_warps(2) {\n'
              '  } : (i32) -> ()\n}')
    assert total_warps(module) == 12  # 4 + 4 + 2, in whole warp groups
    assert total_warps('module attributes {"ttg.num-warps" = 8 : i32} {\n}') == 8


@pytest.fixture(scope="module")
def warp_specialized(tmp_path_factory):
    skip_without_compiler_hooks()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton_cache"))
    done = subprocess.run([sys.executable, os.path.join(HERE, "warp_specialized_case.py")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_warp_specialized_kernel_compiles_with_its_scopes(warp_specialized):
    case = warp_specialized["triton"]
    assert case["warp_specialize_ops"] == 1 and case["num_warps"] == 12
    assert case["records"] == 4 and case["clock_reads"] > 0
    assert sorted(case["scope_names"].values()) == ["epilogue", "mainloop"]
    assert case["profile_scratch_size"] > 0
    # Triton's partitioner leaves a tl.range(warp_specialize=True) loop's scope records in front
    # of the specialized region (README, Instrumentation): they compile but time almost nothing.
    assert case["records_before_warp_specialize"] == 4


def test_a_scope_inside_the_warp_specialized_loop_is_kept_and_the_loop_still_specialized(warp_specialized):
    case = warp_specialized["loop_scope"]
    # The partitioner drops records left inside the loop (no partition gets them): moved out of
    # it, they reach the lowering in front of the specialized region, which is still made.
    assert case["warp_specialize_ops"] == 1 and case["num_warps"] == 12
    assert sorted(case["scope_names"].values()) == ["loop"]
    assert case["records"] == 2 and case["records_before_warp_specialize"] == 2


LOOPS = """\
    %x = arith.constant 0 : i32 loc(#loc1)
    %acc = scf.for %k = %a to %b step %c iter_args(%s = %x) -> (i32)  : i32 {
      proton.record start "loop" loc(#loc2)
      %y = scf.for %j = %a to %b step %c iter_args(%t = %s) -> (i32)  : i32 {
        proton.record start "inner" loc(#loc3)
        proton.record end "inner" loc(#loc4)
        scf.yield %t : i32 loc(#loc5)
      } loc(#loc6)
      proton.record end "loop" loc(#loc7)
      scf.yield %y : i32 loc(#loc8)
    } {tt.num_stages = 3 : i32, tt.warp_specialize} loc(#loc9)
    scf.for %k = %a to %b step %c  : i32 {
      proton.record start "plain" loc(#loc10)
      proton.record end "plain" loc(#loc11)
    } loc(#loc12)"""


def test_records_move_out_of_warp_specialized_loops_only():
    lines = hoist_records(LOOPS).split("\n")
    assert [line.strip() for line in lines if "proton.record" in line or "scf.for" in line or "} " in line] == [
        'proton.record start "loop" loc(#loc2)', 'proton.record start "inner" loc(#loc3)',
        "%acc = scf.for %k = %a to %b step %c iter_args(%s = %x) -> (i32)  : i32 {",
        "%y = scf.for %j = %a to %b step %c iter_args(%t = %s) -> (i32)  : i32 {",
        "} loc(#loc6)",
        "} {tt.num_stages = 3 : i32, tt.warp_specialize} loc(#loc9)",
        'proton.record end "inner" loc(#loc4)', 'proton.record end "loop" loc(#loc7)',
        "scf.for %k = %a to %b step %c  : i32 {",
        'proton.record start "plain" loc(#loc10)', 'proton.record end "plain" loc(#loc11)', "} loc(#loc12)"]
    moved = [line for line in lines if '"loop"' in line or '"inner"' in line]
    assert all(line.startswith("    proton.record") for line in moved)  # at the loop's own depth
    assert hoist_records(LOOPS.replace(", tt.warp_specialize", "")) is None  # nothing to move


def test_gluon_partitions_keep_their_own_scopes(warp_specialized):
    case = warp_specialized["gluon"]
    assert case["num_warps"] == 8  # 4 + 1 worker warp, in whole warp groups
    assert sorted(case["scope_names"].values()) == ["default_copy", "worker_copy"]
    assert case["records"] == 4 and case["records_before_warp_specialize"] == 0
