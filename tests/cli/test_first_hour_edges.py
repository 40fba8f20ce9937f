"""What a newcomer meets in the first hour: a folder given as the script, session ids that were
never issued, names that are no text, a rank left out, and the help text."""
import os
import re

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import cli
from flagtree.profiler import session as session_module


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def test_a_folder_without_main_is_a_usage_error_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    assert cli.main(["pkg"]) == 2
    err = capsys.readouterr().err
    assert err == "flagtree-profiler: error: can't find '__main__' module in 'pkg' (a folder runs its __main__.py)\n"
    assert sorted(os.listdir(tmp_path)) == ["pkg"]


def test_finalize_refuses_ids_start_never_returned_and_stays_idempotent(tmp_path):
    session = profiler.start(str(tmp_path / "s"))
    with pytest.raises(ValueError, match=r"no open profiling session 999"):
        profiler.activate(999)
    for bad, message in ((999, r"no profiling session 999 was started"), ("x", r"must be an int returned by start"),
                         (True, r"must be an int returned by start")):
        with pytest.raises(ValueError, match=message):
            profiler.finalize(bad)
    assert session_module.open_sessions() == [session]  # a refused call closes nothing
    profiler.finalize(session)
    profiler.finalize(session)  # finalized already: nothing to do, no error
    assert (tmp_path / "s.hatchet").exists()


@pytest.mark.parametrize("call", [lambda: profiler.enter_scope("\ud800"),
                                  lambda: profiler.enter_state("a\udfffb"),
                                  lambda: profiler.scope("ok", {"\ud800": 1.0}).__enter__()])
def test_a_lone_surrogate_name_is_a_clear_error(tmp_path, call):
    profiler.start(str(tmp_path / "u"))
    with pytest.raises(ValueError, match="lone surrogate, which UTF-8 cannot encode") as raised:
        call()
    assert "incompatible function arguments" not in str(raised.value)
    with profiler.scope("still works"):
        pass


def test_a_rank_left_out_is_named_as_such(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLAGTREE_PROFILER_RANKS", "1")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "s.py").write_text("print('ran')\n")
    assert cli.main(["s.py"]) == 0
    captured = capsys.readouterr()
    assert "ran" in captured.out
    assert "flagtree-profiler: FLAGTREE_PROFILER_RANKS=1 leaves rank 0 out: running without profiling" in captured.err
    assert "FLAGTREE_PROFILER_DISABLE" not in captured.err


def test_the_help_names_every_data_kind_and_each_backend_once(capsys):
    assert cli.main(["-h"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "perfetto = NAME.pftrace" in text
    backend_help = text[text.index("-b BACKEND, --backend BACKEND"):text.index("-c {")]
    for name in ("nvidia", "cupti", "cupti_pcsampling", "roctracer", "instrumentation", "cann", "mthreads",
                 "tianshu", "interpreter"):
        assert len(re.findall(rf"(?<![\w_]){name}(?![\w_])", backend_help)) == 1, (name, backend_help)
