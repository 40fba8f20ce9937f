"""The viewer's read of a tree's inductor_kernels: from the root's members only, past its first
read when the table is long, nothing from a FIFO (the tree's reader took its one stream), and
only entries of the documented shape."""
import json
import os

from flagtree.profiler.viewer.fused import read_fused

FACTS = {"fused_aten": ["aten.add"], "fused_nodes": ["add"]}


def _tree(path, table, extra=None):
    root = {"run_id": "0" * 32, "inductor_kernels": table, **(extra or {}),
            "frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": []}
    path.write_text(json.dumps([root, {}]))
    return str(path)


def test_a_table_longer_than_the_first_read_is_read_whole(tmp_path):
    table = {f"triton_poi_fused_add_{i}": FACTS for i in range(3000)}
    path = _tree(tmp_path / "run.hatchet", table)
    assert os.path.getsize(path) > 1 << 16
    assert read_fused(path) == table


def test_members_after_the_frame_and_malformed_entries_are_not_taken(tmp_path):
    path = tmp_path / "run.hatchet"
    root = {"frame": {"name": "ROOT"}, "inductor_kernels": {"k": FACTS}, "children": []}
    path.write_text(json.dumps([root, {}]))
    assert read_fused(str(path)) == {}
    bad = {"k": FACTS, "n": {"fused_aten": "aten.add"}, "m": {"fused_nodes": [1]}, "o": []}
    assert read_fused(_tree(tmp_path / "bad.hatchet", bad)) == {"k": FACTS}
    (tmp_path / "cut.hatchet").write_text('[{"inductor_kernels": {"k": {"fused_aten": ["a')
    assert read_fused(str(tmp_path / "cut.hatchet")) == {}


def test_a_fifo_is_not_opened_again(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_fused(str(fifo)) == {}  # opening it would wait for a writer forever


def test_the_native_fast_reader_still_takes_a_tree_with_the_table(tmp_path):
    """The table is a root member the fast reader skips: big profiles keep the fast path."""
    from flagtree.profiler.viewer.native_read import read_native  # deferred: the viewer's reader modules
    from flagtree.profiler.viewer.reader import FIRST_READ, NATIVE_READ  # deferred: as above

    path = _tree(tmp_path / "run.hatchet", {"k": {**FACTS, "source_lines": ["/m/model.py:3 in forward"]}})
    with open(path, "rb") as handle:
        root, _, _ = read_native(NATIVE_READ, handle, set(), FIRST_READ)
    assert root.name == "ROOT"
