"""Where Proton's users look for Proton's words, ours carry them: an unknown session id's error
says `Session has not been initialized: <id>` beside our own sentence."""
import pytest

import flagtree.profiler as profiler


@pytest.mark.parametrize("call", [profiler.activate, profiler.deactivate, profiler.finalize])
def test_an_unknown_session_id_is_said_in_our_words_and_protons(tmp_path, call):
    session = profiler.start(str(tmp_path / "s"), backend="interpreter")
    try:
        with pytest.raises(ValueError, match=r"no (open )?profiling session 999") as raised:
            call(999)
        assert "Session has not been initialized: 999" in str(raised.value)
    finally:
        profiler.finalize(session)
