"""The `flagtree-profiler` command (console script and ``python -m flagtree.profiler[.cli]``).

command.py parses the options and runs the target under one session (session.py's command
session functions); target.py runs a script, module or pytest as Python would; ixkn_mode.py is
``--ixkn`` (the target under Iluvatar's ixkn-cli).
"""
from .command import main

__all__ = ["main"]
