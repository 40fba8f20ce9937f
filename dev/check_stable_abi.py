"""Compiles every native source the wheels build on the stable ABI (all but the viewer's, which
CMakeLists.txt builds version-specific) with -fsyntax-only against Python 3.12's headers and
Py_LIMITED_API=3.12, as the abi3 wheel does: a call the limited API lacks (PyTuple_GET_ITEM, say)
is found here instead of by an install on the GPU machine. Uses the compile commands of the dev
build (bash dev/build_native.sh first).

    python dev/check_stable_abi.py [--include /path/to/include/python3.12]
"""
import argparse
import glob
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRELUDE = os.path.join(ROOT, "csrc", "core", "limited_api_prelude.h")


def python312_include():
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/include/python3.12")))
    found += sorted(glob.glob("/usr/include/python3.12")) + sorted(glob.glob("/usr/local/include/python3.12"))
    return found[0] if found else None


def syntax_command(entry, include):
    args, out, skip = shlex.split(entry["command"]), [], False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-MF", "-MT"):
            skip = True
            continue
        if arg in ("-c", "-MD"):
            continue
        if arg.startswith("-I") and "include/python3" in arg:
            arg = "-I" + include
        out.append(arg)
    return out + ["-fsyntax-only", "-DPy_LIMITED_API=0x030C0000", "-include", PRELUDE]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--include", default=python312_include(), help="Python 3.12's include folder")
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "dev"))
    args = parser.parse_args()
    if not args.include:
        sys.exit("no Python 3.12 headers found: pass --include")
    commands = json.loads(subprocess.run(["ninja", "-C", args.build, "-t", "compdb"], check=True,
                                         capture_output=True, text=True).stdout)
    sources = [e for e in commands if os.sep + "csrc" + os.sep in e["file"] and os.sep + "viewer" + os.sep not in e["file"]
               and " -c " in e["command"]]  # compiles only (the compdb lists links and phony steps too)
    failed = 0
    for entry in sources:
        done = subprocess.run(syntax_command(entry, args.include), cwd=entry["directory"], capture_output=True, text=True)
        if done.returncode:
            failed += 1
            errors = [line for line in done.stderr.splitlines() if "error" in line]
            print(f"{os.path.relpath(entry['file'], ROOT)}: {errors[0] if errors else done.stderr[-300:]}")
    print(f"{len(sources)} sources checked on the 3.12 stable ABI, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
