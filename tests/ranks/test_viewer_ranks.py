"""The cross-rank tree: hand-made rank profiles whose per-rank figures are known, through the
viewer's command line in this process."""
import json

import pytest

from flagtree.profiler.viewer.cli import main

TIME = "time (ns)"
# per-rank exclusive times of the kernel under `step`; rank 2 also runs `only2`
KERNEL_NS = {0: 100, 1: 100, 2: 400, 3: 200}


def node(name, metrics=None, *children, kind="scope"):
    return {"frame": {"name": name, "type": "function", "kind": kind}, "metrics": dict(metrics or {}),
            "children": list(children)}


def rank_tree(rank, kernel_ns):
    kids = [node("kern", {TIME: kernel_ns, "count": 2, "device_id": 0, "device_type": 1}, kind="kernel")]
    if rank == 2:
        kids.append(node("only2", {TIME: 50, "count": 1, "device_id": 0, "device_type": 1}, kind="kernel"))
    return node("ROOT", {}, node("step", {}, *kids), kind="root")


def write(path, tree, meta=None):
    path.write_text(json.dumps([tree, {}]))
    if meta is not None:
        base = str(path)[: -len(".hatchet")]
        with open(base + ".meta.json", "w") as out:
            json.dump(meta, out)


@pytest.fixture
def rank_files(tmp_path):
    folder = tmp_path / "profiles"
    folder.mkdir()
    for rank, ns in KERNEL_NS.items():
        meta = {"rank": rank, "lost_launches": 2 if rank == 1 else 0, "dropped_records": 1 if rank == 1 else 0}
        if rank == 1:  # rank 1 wrote two parts (periodic flushes); they add up in rank 1
            write(folder / "run.rank1.part1.hatchet", rank_tree(1, ns // 4))
            write(folder / "run.rank1.part2.hatchet", rank_tree(1, ns - ns // 4))
            (folder / "run.rank1.meta.json").write_text(json.dumps(meta))
        else:
            write(folder / f"run.rank{rank}.hatchet", rank_tree(rank, ns), meta)
    return folder


def view(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def rows(text):
    """{node name: [cells]} from the tree (or sorted) view; header first."""
    lines = text.splitlines()
    header = lines[0].split()
    table = {}
    for line in lines[1:]:
        if line.startswith("ranks:"):
            break
        cells = line.split()
        table[cells[-1]] = dict(zip(header, cells[: len(header)]))
    return table


def test_sum_and_statistics_per_node(capsys, rank_files):
    files = sorted(rank_files.glob("run.rank*.hatchet"))
    status, out, err = view(capsys, "-m", "time/ns,time/ns:max,time/ns:min,time/ns:mean,time/ns:imbalance",
                            *files)
    assert status == 0, err
    assert out.splitlines()[0].split() == ["time/ns", "time/ns:max", "time/ns:slowest", "time/ns:min",
                                           "time/ns:mean", "time/ns:imbalance"]
    table = rows(out)
    step = table["step"]
    assert step["time/ns"] == "850"  # the sum over ranks
    assert (step["time/ns:max"], step["time/ns:slowest"], step["time/ns:min"]) == ("450", "2", "100")
    assert float(step["time/ns:mean"]) == 212.5
    assert float(step["time/ns:imbalance"]) == pytest.approx((450 - 212.5) / 212.5, abs=1e-3)
    only2 = table["only2"]  # the ranks that never ran it count as 0 there: all the work in one rank
    assert (only2["time/ns:max"], only2["time/ns:slowest"], only2["time/ns:min"]) == ("50", "2", "0")
    assert float(only2["time/ns:imbalance"]) == 3.0
    assert table["kern"]["time/ns"] == "800" and table["kern"]["time/ns:max"] == "400"


def test_print_sorted_by_imbalance_puts_the_straggler_first(capsys, rank_files):
    status, out, err = view(capsys, "--print-sorted", "-m", "time/ns:imbalance,avg_time/ns:max", rank_files)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["time/ns:imbalance", "time/ns:slowest", "avg_time/ns:max", "avg_time/ns:slowest"]
    assert lines[1].endswith("step -> only2") and lines[2].endswith("step -> kern")
    assert lines[1].split()[:4] == ["3.000", "2", "50", "2"]
    # avg_time per rank skips the ranks without launches there; rank 2: 400 ns over 2 launches
    assert lines[2].split()[:4] == ["1.000", "2", "200", "2"]


def test_losses_are_listed_per_rank_and_summed(capsys, rank_files):
    status, out, _ = view(capsys, "-m", "time/ns", rank_files)
    assert status == 0
    tail = out[out.index("ranks:"):].splitlines()
    assert tail[0] == "ranks: 4 (0-3) from 5 files; records lost:"
    assert tail[1:] == ["  rank 1: 2 lost launches, 1 dropped records",
                        "  total: 2 lost launches, 1 dropped records"]
    assert rows(out)["kern"]["time/ns"] == "800"  # the two parts of rank 1 added up


def test_rank_comes_from_the_metadata_when_the_name_has_none(capsys, tmp_path):
    write(tmp_path / "a.hatchet", rank_tree(0, 10), {"rank": 5})
    write(tmp_path / "b.hatchet", rank_tree(0, 30), {"rank": 6})
    status, out, err = view(capsys, "-m", "time/ns:max", tmp_path / "a.hatchet", tmp_path / "b.hatchet")
    assert status == 0, err
    assert rows(out)["kern"]["time/ns:slowest"] == "6"
    assert "ranks: 2 (5-6) from 2 files; no records lost" in out


@pytest.mark.parametrize("argv, message", [
    (["-m", "util:max"], "has no per-rank form"),
    (["-m", "time/ns:max", "--diff-profile", "x.hatchet"], "does not combine with a rank merge"),
    (["-m", "nosuch:max"], "metric 'nosuch' is not in profile"),
])
def test_rank_merge_errors(capsys, rank_files, argv, message):
    status, _, err = view(capsys, *argv, rank_files)
    assert status == 2 and message in err, err


def test_empty_folder_is_an_error(capsys, tmp_path):
    status, _, err = view(capsys, tmp_path)
    assert status == 2 and "a folder with no .hatchet profiles in it" in err


def test_list_mentions_the_rank_suffixes(capsys, rank_files):
    status, out, _ = view(capsys, "-l", rank_files)
    assert status == 0 and "time (ns)" in out and ":imbalance" in out


def test_the_fold_split_over_workers_equals_the_fold_in_one(tmp_path):
    from flagtree.profiler.viewer.rank_merge import merge_files

    files = []
    for rank in range(8):  # trees that differ per rank: extra nodes appear in later ranks only
        extra = [node(f"x{k}", {TIME: rank * 10 + k}) for k in range(rank % 3)]
        tree = node("ROOT", {}, node("step", {TIME: rank}, *extra), node(f"r{rank}", {"count": rank}))
        path = tmp_path / f"run.rank{rank}.hatchet"
        write(path, tree)
        files.append((str(path), rank))

    def by_path(merge):
        root, row_of = merge.tree()
        out = {}
        stack = [root]
        while stack:
            n = stack.pop()
            stack.extend(n.children.values())
            out[tuple(n.path_names())] = (n.metrics, [merge.per_rank[k][row_of[n]].tolist() for k in merge.keys])
        return out

    one = merge_files(files, [TIME, "count"], workers=1)
    split = merge_files(files, [TIME, "count"], workers=3)
    assert by_path(split) == by_path(one)
    # x1 only in ranks 2 and 5 (rank % 3 == 2)
    assert by_path(one)[("step", "x1")] == ({TIME: 21 + 51}, [[0, 0, 21, 0, 0, 51, 0, 0], [0] * 8])


def test_without_numpy_the_viewer_works_and_a_rank_merge_says_what_it_needs(capsys, rank_files, monkeypatch,
                                                                           tmp_path):
    import sys

    write(tmp_path / "plain.hatchet", rank_tree(0, 100))
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy now raises ImportError
    status, out, err = view(capsys, "-m", "time/ns", tmp_path / "plain.hatchet")
    assert status == 0 and rows(out)["kern"]["time/ns"] == "100", err
    status, _, err = view(capsys, "-m", "time/ns:max", rank_files)
    assert status == 2 and "merging ranks needs numpy" in err
