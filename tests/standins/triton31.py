"""A stand-in for the Triton 3.1 that FlagTree ships its iluvatar (CoreX) and mthreads backends
on, shaped after FlagTree's python/triton/compiler/compiler.py (version 3.1.0) and
third_party/iluvatar/backend/driver.py:

* no ``triton.knobs``: the launch hooks are ``CompiledKernel`` class attributes;
* ``CompiledKernel.launch_metadata`` gives None while no enter hook is set, else a LazyDict of
  name, function and stream;
* ``CompiledKernel[grid](*args)`` hands both class-level hooks to the launcher, which calls the
  enter hook with the metadata before the launch and the exit hook after it (when not None).

``install(monkeypatch)`` puts it in sys.modules as ``triton`` (every real ``triton.*`` module set
aside until the test ends) and returns it."""
import sys
import types


class LazyDict:
    def __init__(self, data):
        self.data = data
        self.extras = []

    def get(self):
        for func, args in self.extras:
            self.data = self.data | func(*args)
        self.extras.clear()
        return self.data

    def add(self, func, args):
        self.extras.append((func, args))


def corex_launcher(kernel_body):
    """The iluvatar launcher's order: enter hook, the launch, exit hook."""
    def launch(gx, gy, gz, stream, function, packed_metadata, launch_metadata, enter_hook, exit_hook, *args):
        if enter_hook is not None:
            enter_hook(launch_metadata)
        kernel_body(*args)
        if exit_hook is not None:
            exit_hook(launch_metadata)
    return launch


class CompiledKernel:
    launch_enter_hook = None
    launch_exit_hook = None

    def __init__(self, name, kernel_body):
        self.name = name
        self.function = id(self)
        self.packed_metadata = ()
        self.run = corex_launcher(kernel_body)

    def launch_metadata(self, grid, stream, *args):
        if CompiledKernel.launch_enter_hook is None:
            return None
        return LazyDict({"name": self.name, "function": self.function, "stream": stream})

    def __getitem__(self, grid):
        def runner(*args, stream=0x31):
            launch_metadata = self.launch_metadata(grid, stream, *args)
            self.run(grid[0], grid[1], grid[2], stream, self.function, self.packed_metadata, launch_metadata,
                     CompiledKernel.launch_enter_hook, CompiledKernel.launch_exit_hook, *args)
        return runner


def install(monkeypatch):
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        monkeypatch.delitem(sys.modules, name)
    triton = types.ModuleType("triton")
    triton.__version__ = "3.1.0"
    compiler = types.ModuleType("triton.compiler")
    compiler.CompiledKernel = CompiledKernel
    compiler.LazyDict = LazyDict
    triton.compiler = compiler
    monkeypatch.setitem(sys.modules, "triton", triton)
    monkeypatch.setitem(sys.modules, "triton.compiler", compiler)
    return triton
