"""--speedscope and --collapsed on 10,000- and 100,000-deep chains: linear files and memory for
speedscope, a streamed (bounded-memory) folded file, and a refusal that names the size above
--collapsed-limit. Each run is a child process, so its peak memory is its own."""

import json
import os
import subprocess
import sys

import pytest

from test_flame_exports import check_speedscope

jsonschema = pytest.importorskip("jsonschema")


def write_chain(path, depth):
    """ROOT > s1 > ... > s<depth-1> > k: every node weighs 1 ns by itself, the kernel 1000."""
    with open(path, "w") as out:
        out.write("[")
        for level in range(depth):
            name = "ROOT" if level == 0 else f"s{level}"
            out.write('{"frame": {"name": "%s"}, "metrics": {"time (ns)": 1}, "children": [' % name)
        out.write('{"frame": {"name": "k"}, "metrics": {"time (ns)": 1000, "count": 1, '
                  '"device_id": 0, "device_type": 1}, "children": []}')
        out.write("]}" * depth + ", {}]")
    return str(path)


@pytest.fixture
def in_process(viewer):
    return viewer  # conftest's in-process runner (this module's viewer() is a child process)


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chains")
    return {depth: write_chain(folder / f"chain{depth}.hatchet", depth) for depth in (10_000, 100_000)}


# The child reports its own peak (VmHWM, which exec resets): a child's ru_maxrss would start at
# this test process's size.
_CHILD = ("import sys\n"
          "from flagtree.profiler.viewer.cli import main\n"
          "status = main(sys.argv[1:])\n"
          "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
          "sys.stderr.write(f'peak {int(peak) * 1024}\\n')\n"
          "sys.exit(status)\n")


def viewer(*argv):
    """(exit status, stdout, stderr, peak resident bytes) of the viewer in a child process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _CHILD, *map(str, argv)], capture_output=True,
                          text=True, env=env, timeout=300)
    err, _, peak = done.stderr.rpartition("peak ")
    return done.returncode, done.stdout, err, int(peak)


def replay(profile, frames):
    """(deepest stack, total time, time with 'k' on top) of an evented profile, in one pass."""
    depth = deepest = total = in_k = 0
    last, top = profile["startValue"], []
    for event in profile["events"]:
        spent = event["at"] - last
        total += spent if depth else 0
        in_k += spent if top and top[-1] == "k" else 0
        last = event["at"]
        if event["type"] == "O":
            top.append(frames[event["frame"]])
        else:
            top.pop()
        depth = len(top)
        deepest = max(deepest, depth)
    return deepest, total, in_k


def test_speedscope_of_a_100000_deep_chain_is_linear(chains, tmp_path):
    path, out = chains[100_000], tmp_path / "deep.speedscope.json"
    status, _, err, peak = viewer("--speedscope", out, path)
    assert status == 0, err
    size = os.path.getsize(path)
    assert os.path.getsize(out) < 3 * size  # two events a node: no repeated prefixes
    document = json.loads(out.read_text())
    check_speedscope(document, schema=False)  # the schema check is the small tests' job
    (device,) = [p for p in document["profiles"] if p["name"].startswith("CUDA:0")]
    (host,) = [p for p in document["profiles"] if p["name"].startswith("host")]
    frames = [f["name"] for f in document["shared"]["frames"]]
    assert replay(device, frames) == (100_000, 1000, 1000)  # the kernel under 99,999 scopes
    assert replay(host, frames) == (99_999, 100_000, 0)  # every scope's 1 ns, no kernel
    assert peak < 20 * size, peak


def test_collapsed_of_a_100000_deep_chain_is_refused_with_its_size(chains, tmp_path):
    out = tmp_path / "deep.folded"
    status, stdout, err, _ = viewer("--collapsed", out, chains[100_000])
    assert status == 2 and not out.exists() and "Traceback" not in err
    assert "would be 33,940,438,394 bytes (31.6 GiB, 100,001 lines" in err
    assert "--collapsed-limit" in err and "--speedscope" in err
    assert "out of memory" not in err
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_collapsed_of_a_10000_deep_chain_streams_with_bounded_memory(chains, tmp_path):
    path, out = chains[10_000], tmp_path / "deep.folded"
    status, _, err, _ = viewer("--collapsed-limit", "10M", "--collapsed", out, path)
    assert status == 2 and not out.exists()
    stated = int(err.split("would be ", 1)[1].split(" bytes", 1)[0].replace(",", ""))
    status, _, err, peak = viewer("--collapsed", out, path)
    assert status == 0, err
    assert os.path.getsize(out) == stated > 100 * os.path.getsize(path)
    assert peak < os.path.getsize(out) / 3, peak  # the file was never held in memory
    with open(out, "rb") as folded:
        first, count = folded.readline(), 1
        deepest = first
        for line in folded:
            count += 1
            deepest = line if len(line) > len(deepest) else deepest
    assert first == b"ROOT 1\n" and count == 10_001
    assert deepest.endswith(b";s9999;k 1000\n") and deepest.count(b";") == 9_999


def test_collapsed_limit_takes_sizes_and_refuses_nonsense(in_process, tmp_path, chains):
    out = tmp_path / "x.folded"
    status, _, err = in_process("--collapsed-limit", "lots", "--collapsed", out, chains[10_000])
    assert status == 2 and "invalid --collapsed-limit 'lots'" in err
    status, _, err = in_process("--collapsed-limit", "1K", "--collapsed", out, chains[10_000])
    assert status == 2 and "over --collapsed-limit 1.0 KiB" in err


def test_running_out_of_memory_in_an_export_is_not_called_reading(in_process, tmp_path, chains, monkeypatch):
    from flagtree.profiler.viewer import speedscope

    def exhausted(out, weights):
        raise MemoryError

    monkeypatch.setattr(speedscope, "write_document", exhausted)
    out = tmp_path / "x.json"
    status, _, err = in_process("--speedscope", out, chains[10_000])
    assert status == 2 and not out.exists()
    assert f"out of memory writing --speedscope '{out}'" in err and "reading" not in err
