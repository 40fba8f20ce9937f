"""What a backend's extension of `flagtree-profiler` provides and gets: the contract through which
the generic command knows backend options (``--ixkn`` is tianshu's, ``--list-metrics`` nvidia's)
without naming a backend.

A backend registers its extension's module (register_backend(..., cli_extension=...)); the
module provides:

* ``OPTION``: the option that asks for it (named when two extensions are asked for at once);
* ``VALUE_OPTIONS``: its options that take a value (the command splits its own options from the
  target's with them), and ``NEEDS_TARGET``: whether a command line that requests it names a target;
* ``add_options(parser)``: adds its options to the command's argparse parser;
* ``requested(options)``: whether the parsed options ask for it;
* ``main(invocation)``: runs the command instead of the plain one (an Invocation), returning the
  exit status.
"""
import importlib
from dataclasses import dataclass

from .. import backends


@dataclass(frozen=True)
class Invocation:
    """One run of the command as an extension gets it: the parsed options, what the target is
    (kind: "script", "module", "pytest", or None when none was given), its arguments and the
    output name; say(line) writes one escaped `flagtree-profiler:` line, message(error) is an
    error's text without the package's prefix, escape(text) escapes control characters."""
    options: object
    kind: str
    target: str
    args: list
    name: str
    say: object
    message: object
    escape: object


def extensions():
    """The extension modules of every registered backend that has one, in registration order."""
    found = []
    for registration in backends.registrations().values():
        if registration.cli_extension:
            found.append(importlib.import_module(registration.cli_extension, backends.__name__))
    return found
