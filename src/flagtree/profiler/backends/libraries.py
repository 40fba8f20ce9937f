"""Finding vendor libraries without loading them: copies already mapped into this process, and
whether a candidate path could load."""
import os
import re
from ..native_core import native


def loaded_library(file_prefix):
    """Path of a library already mapped into this process whose file name starts with
    `file_prefix` (e.g. "libcupti.so"), or None. Two copies of one vendor library in a process
    fight over its single subscriber, so an already-loaded copy is always preferred. The dynamic
    loader's own list is asked: reading /proc/self/maps, thousands of lines in a process with
    torch, would lengthen the first session (docs/performance.md)."""
    return native.core.loaded_library_path(file_prefix)


def could_load(path):
    """True when `path` is an existing file, or a bare soname the loader's cache knows."""
    if os.sep in path:
        return os.path.isfile(path)
    import ctypes.util  # deferred: it loads subprocess, a cost every import of the package would pay

    stem = re.sub(r"^lib|\.so.*$", "", path)
    return ctypes.util.find_library(stem) is not None


def library_candidates(library, variable, explicit, places, loader_names=()):
    """[(where, path)] in the documented search order, path None where that place is not set:
    `explicit` (the value of `variable`: the library file or its folder), a copy already loaded
    in the process, each (where, folder or None) of `places`, then the loader path (`library`
    and `loader_names`). A path met twice is tried once."""
    if explicit and os.path.isdir(explicit):
        explicit = os.path.join(explicit, library)
    found = [(variable, explicit or None), ("already loaded", loaded_library(library))]
    found += [(where, os.path.join(folder, library) if folder else None) for where, folder in places]
    found += [("loader path", name) for name in (library, *loader_names)]
    seen, out = set(), []
    for where, path in found:
        if path is not None and path in seen:
            continue
        seen.add(path)
        out.append((where, path))
    return out


def acquire_first(candidates, acquire, not_found):
    """Calls acquire(path) for each (where, path) of `candidates` (library_candidates' form) until
    one loads. Returns None when one did, else the "where: why not" lines of every place tried.
    `not_found` is the exception a candidate that cannot load raises (the next one is tried); any
    other RuntimeError (e.g. SubscriberTaken: another tool holds the library) stops the search and
    propagates with its type kept."""
    tried = []
    for where, path in candidates:
        if path is None:
            if where != "already loaded":
                tried.append(f"{where}: not set")
            continue
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{where}: {path} does not exist")
            continue
        try:
            acquire(path)
        except not_found as error:
            tried.append(f"{where}: {error}")
            continue
        except RuntimeError as error:
            raise type(error)(f"flagtree.profiler: {error}") from None
        return None
    return tried
