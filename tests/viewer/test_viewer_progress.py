"""Progress lines: on a terminal's stderr, past the first delay, naming the step; nothing when
stderr is not a terminal; and the viewer's --html names its steps as it goes."""
import io
import time

from flagtree.profiler import progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_lines_on_a_terminal_name_the_step_and_the_time_so_far():
    out = Terminal()
    with progress.running("cmd", out, first_after=0.05, interval=0.05):
        progress.step("reading run.hatchet")
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert lines and all(line.startswith("cmd: reading run.hatchet (") and line.endswith(" s so far)") for line in lines)
    progress.step("after the block")  # no command running: nothing, no error


def test_nothing_before_the_first_delay_or_off_a_terminal():
    quick, piped = Terminal(), io.StringIO()
    with progress.running("cmd", quick, first_after=5, interval=5):
        progress.step("quick")
    with progress.running("cmd", piped, first_after=0, interval=0.01):
        progress.step("piped")
        time.sleep(0.1)
    assert quick.getvalue() == "" and piped.getvalue() == ""


def test_the_viewer_report_names_its_steps(monkeypatch, tmp_path):
    from flagtree.profiler.viewer.cli import main
    from viewer_helpers import fixture

    seen = []
    monkeypatch.setattr(progress, "step", seen.append)
    assert main(["--html", str(tmp_path / "r.html"), fixture("nested_scopes.hatchet")]) == 0
    assert seen[0].startswith("reading ") and "summing the tree" in seen and seen[-1] == "writing the page"
