"""Code that must run once a module has been imported, where it may be imported later: a finder
first on ``sys.meta_path`` that lets the finders after it import the module, then calls back
with the executed module (a launch door, a hook, a wrapper of another tool's function)."""
import importlib.util
import sys


class AfterImport:
    """A meta path finder that calls `opened(module)` once module `name` has been executed (the
    import itself is left to the finders after it). With `once`, it leaves sys.meta_path at that
    import."""

    def __init__(self, name, opened, once=False):
        self.name, self.opened, self.once, self._busy = name, opened, once, False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or self._busy:
            return None
        if self.once and self in sys.meta_path:
            sys.meta_path.remove(self)
        self._busy = True  # the find_spec below asks sys.meta_path again, this finder included
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute, opened = spec.loader.exec_module, self.opened

        def exec_module(module):
            execute(module)
            opened(module)

        spec.loader.exec_module = exec_module
        return spec


def watch(name, opened, once=False):
    """Puts an AfterImport of module `name` calling `opened` first on sys.meta_path, unless one
    calling `opened` is there already; returns the new finder, or None."""
    if any(isinstance(finder, AfterImport) and finder.opened == opened for finder in sys.meta_path):
        return None
    finder = AfterImport(name, opened, once)
    sys.meta_path.insert(0, finder)
    return finder
