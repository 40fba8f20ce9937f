"""The command's own lines on stderr: one prefix, control characters escaped."""
import sys

from ..common.safe_text import safe

PROG = "flagtree-profiler"


def message(error):
    """The error's text without the package's own prefix: the command adds its own."""
    text = str(error)
    while text.startswith("flagtree.profiler: "):
        text = text[len("flagtree.profiler: "):]
    return text


def escape(text):
    """`text` with control characters escaped, for a terminal."""
    return safe(text)


def say(line):
    """One line on stderr; what it names (the profile's name, a path, an error's text) may hold
    anything, so control characters are escaped (a terminal must not act on them)."""
    sys.stdout.flush()  # keep the target's output ahead of ours when both go to a terminal
    print(f"{PROG}: {safe(line)}", file=sys.stderr, flush=True)
