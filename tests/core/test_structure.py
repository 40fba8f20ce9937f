"""The structure of the package, read from its source: one test function per rule."""
import ast
import os

from flagtree.profiler import backends
from flagtree.profiler.backends.base import Backend
from flagtree.profiler.backends.mode import FALSE_WORDS, TRUE_WORDS, ModeGrammar
from support.import_graph import import_graph, package_modules

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")
BACKENDS = "flagtree.profiler.backends"
# Modules of backends/ that every backend shares (the contract and the shared tracer dialect).
SHARED = {BACKENDS, f"{BACKENDS}.base", f"{BACKENDS}.mode", f"{BACKENDS}.libraries", f"{BACKENDS}.dialect"}
# (importing folder, imported folder) pairs still crossing into private modules: the kernel-side
# scopes and their compiler route, which device_timer and tianshu take from instrumentation/.
# Moves to the shared kernel-scopes package.
KNOWN_CROSSINGS = {("device_timer", "instrumentation"), ("tianshu", "instrumentation")}


def _folder(module):
    """The backend folder a module of backends/ belongs to, or None for a shared module."""
    if module in SHARED or not module.startswith(BACKENDS + "."):
        return None
    return module[len(BACKENDS) + 1:].split(".")[0]


def _public_modules():
    """Each backend folder's package, and the modules the registry names for its backends."""
    public = set()
    for registration in backends.registrations().values():
        if isinstance(registration.factory, str):
            module = registration.factory.partition(":")[0]
            public.add(BACKENDS + module if module.startswith(".") else module)
    return public


def test_no_backend_imports_another_backends_private_module():
    graph, _ = import_graph(SRC)
    public = _public_modules()
    crossings = set()
    for module, targets in graph.items():
        mine = _folder(module)
        if mine is None:
            continue
        for target in targets:
            theirs = _folder(target)
            if theirs is None or theirs == mine:
                continue
            if target == f"{BACKENDS}.{theirs}" or target in public:
                continue
            crossings.add((mine, theirs, module, target))
    unexpected = sorted(c for c in crossings if c[:2] not in KNOWN_CROSSINGS)
    assert not unexpected, unexpected
    # the exceptions are real: each still crosses (remove one once it no longer does)
    assert {c[:2] for c in crossings} == KNOWN_CROSSINGS


def _backend_classes():
    """(module, class name, its ast node) for every class of the package that defines check_mode
    or subclasses a backend (any class whose bases name Backend)."""
    for module, path in package_modules(SRC).items():
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                yield module, node


def _switch_vocabularies(path):
    """Literal collections in a module holding two or more true words and two or more false
    words: a private set of switch words."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    found = []
    for node in ast.walk(tree):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and items:
            texts = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            if len(texts & set(TRUE_WORDS)) >= 2 and len(texts & set(FALSE_WORDS)) >= 2:
                found.append(node.lineno)
    return found


def test_every_backend_parses_its_mode_through_the_one_grammar():
    for name in backends.registrations():
        backend = backends.get_backend(name)
        assert type(backend).check_mode is Backend.check_mode, name  # options_from() is the hook
        assert isinstance(backend.mode_grammar, ModeGrammar), name
        assert backend.check_mode(None) is None or hasattr(backend.check_mode(None), "canonical"), name
    overriding = [(module, node.name) for module, node in _backend_classes()
                  if module != f"{BACKENDS}.base"
                  and any(isinstance(f, ast.FunctionDef) and f.name == "check_mode" for f in node.body)]
    assert not overriding, overriding
    vocabularies = {module: lines for module, path in package_modules(SRC).items()
                    if module.startswith(BACKENDS) and module != f"{BACKENDS}.mode"
                    for lines in [_switch_vocabularies(path)] if lines}
    assert not vocabularies, vocabularies
