"""Where a module's source reaches into Triton's internals, read with ast (nothing is imported).

Counted: ``import triton.runtime...``, ``from triton.compiler import ...``, ``from triton import
knobs``, attribute chains on the name ``triton`` (``triton.runtime.driver``), and a module named
by a constant string where modules are looked up (``importlib.import_module("triton._C...")``,
``__import__``, ``find_spec``, ``sys.modules[...]`` / ``sys.modules.get(...)``).
"""
import ast
import re

INTERNALS = ("runtime", "compiler", "knobs", "backends", "_C", "_instrumentation")
_NAMED = re.compile(r"triton\.(%s)(\.\w+)*" % "|".join(INTERNALS))
_LOOKUPS = ("import_module", "__import__", "find_spec", "get")


def _internal(dotted):
    return bool(dotted) and _NAMED.fullmatch(dotted) is not None


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


def _call_name(node):
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _constant_text(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return node.values[0].value.rstrip(".")  # f"triton._C.libtriton.{name}"
    return None


def _uses(node):
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if _internal(alias.name)]
    if isinstance(node, ast.ImportFrom) and not node.level:
        if _internal(node.module):
            return [node.module]
        if node.module == "triton":
            return [f"triton.{alias.name}" for alias in node.names if _internal(f"triton.{alias.name}")]
    if isinstance(node, ast.Attribute) and not isinstance(getattr(node, "parent", None), ast.Attribute):
        dotted = _dotted(node)
        if dotted and _internal(".".join(dotted.split(".")[:2])):
            return [dotted]
    if isinstance(node, ast.Call) and _call_name(node) in _LOOKUPS and node.args:
        text = _constant_text(node.args[0])
        return [text] if _internal(text) else []
    if isinstance(node, ast.Subscript):
        text = _constant_text(node.slice)
        return [text] if _internal(text) else []
    return []


def internal_uses(source, filename="<source>"):
    """[(line, what)] for each place `source` reaches into Triton's internals."""
    tree = ast.parse(source, filename)
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            child.parent = parent
    found = []
    for node in ast.walk(tree):
        found += [(node.lineno, what) for what in _uses(node)]
    return sorted(found)
