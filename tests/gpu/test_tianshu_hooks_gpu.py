"""backend="tianshu" on a GPU through Triton's REAL launch hooks (the CoreX path is the same
Triton launcher): each launch recorded once with its context, host-time labels, launch metadata
of hook="triton" consumed, streams told apart, and an ixKN CSV imported in process. Runs on the
NVIDIA machine (no Iluvatar hardware exists here); a fresh interpreter without TRITON_INTERPRET."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is false)", allow_module_level=True)

SCRIPT = textwrap.dedent(r'''
    import os, sys
    os.environ.pop("TRITON_INTERPRET", None)
    import torch, triton, triton.language as tl
    import flagtree.profiler as profiler

    OUT, TIME_SOURCE = sys.argv[1], sys.argv[2]

    def meta(grid, metadata, args):
        return {"name": "add_%d" % args["n"], "flops32": args["n"]}

    @triton.jit(launch_metadata=meta)
    def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)

    x = torch.arange(256, device="cuda", dtype=torch.float32)
    out = torch.empty_like(x)
    add_kernel[(4,)](x, out, 256, BLOCK=64)  # compile outside the session
    torch.cuda.synchronize()
    csv = os.path.join(OUT, "ixkn.csv")
    with open(csv, "w") as f:
        f.write('"Kernel ID","Process ID","Process Name","Kernel Name","Context","Stream","Section","Metrics","Value"\n')
        for k in range(1, 13):
            f.write('"%d","%d","python","add_kernel","1","1","Occupancy","Achieved Occupancy","%d %%"\n'
                    % (k, os.getpid(), k))
    profiler.start(os.path.join(OUT, "t"), backend="tianshu", hook="triton", mode="time_source=%s:ixkn_import_path=%s" % (TIME_SOURCE, csv))
    with profiler.scope("default_stream"):
        for _ in range(10):
            add_kernel[(4,)](x, out, 256, BLOCK=64)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side), profiler.scope("side_stream"):
        add_kernel[(4,)](x, out, 256, BLOCK=64)
    torch.cuda.synchronize()
    profiler.finalize()
    assert torch.allclose(out, x + 1)
''')


def _run(tmp_path, time_source):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, str(script), str(tmp_path), time_source], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_real_launch_hooks_record_each_launch_host_timed(tmp_path):
    _run(tmp_path, "host")
    root = json.load(open(tmp_path / "t.hatchet"))[0]
    scopes = {c["frame"]["name"]: c for c in root["children"]}
    default = scopes["default_stream"]["children"][0]
    assert default["frame"]["name"] == "add_256"  # hook="triton"'s name override reached the record
    m = default["metrics"]
    assert m["count"] == 10 and m["host_timed_launches"] == 10 and m["device_type"] == 5
    assert m["flops32"] == 10 * 256
    assert m["tianshu.occupancy.achieved_occupancy (%)"] == pytest.approx(5.5)  # mean of kernels 1..10
    assert scopes["side_stream"]["children"][0]["metrics"]["count"] == 1
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "host" and meta["host_timed_launches"] == 11
    assert meta["vendor_rows_by_rule"] == {"name_order": 11} and meta["vendor_rows_unmatched"] == 1


def test_auto_takes_device_times_where_triton_supports_the_device_timer_route(tmp_path):
    _run(tmp_path, "auto")  # NVIDIA's Triton supports the route (PTX stamps)
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "device_timer" and "cuda:" in meta["time_source_reason"]
    assert meta["device_timer_records"] == 11 and meta["device_timer_untimed"] == 0
    root = json.load(open(tmp_path / "t.hatchet"))[0]
    scopes = {c["frame"]["name"]: c for c in root["children"]}
    m = scopes["default_stream"]["children"][0]["metrics"]
    assert m["count"] == 10 and "host_timed_launches" not in m
    assert scopes["side_stream"]["children"][0]["metrics"]["count"] == 1
