"""The `flagtree-profiler` command (console script and ``python -m flagtree.profiler[.cli]``).

command.py runs the target under one session (session.py's command session functions);
options.py reads the command line; interpret.py chooses Triton's interpreter without a GPU;
finish.py writes the profile however the target ends; output.py writes the command's lines;
target.py runs a script, module or pytest as Python would; extension.py is the contract through
which backends add options (tianshu's ``--ixkn``, nvidia's ``--list-metrics``).
"""
from .command import main

__all__ = ["main"]
