"""The import graph of the flagtree.profiler package, read from the source (nothing is imported).

Every ``import`` and ``from ... import`` counts, at module level and inside functions alike: a
deferred import still ties the two modules together. ``from pkg import name`` depends on
``pkg.name`` when that is a module of the package, else on ``pkg``. Parent packages run first on
any import, but that is not counted as an edge (every module would depend on the package root).
Dynamic imports (importlib with a computed name) are not seen.
"""
import ast
import os

PACKAGE = "flagtree.profiler"
# The native core, a compiled module: a leaf of the graph (built or not).
EXTENSIONS = ("flagtree.profiler._native",)


def package_modules(src_root):
    """{module name: path} for every .py file of the package under `src_root` (the folder
    holding flagtree/)."""
    top = os.path.join(src_root, *PACKAGE.split("."))
    modules = {}
    for folder, _, files in os.walk(top):
        for name in files:
            if not name.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(folder, name), src_root)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            modules[".".join(rel)] = os.path.join(folder, name)
    return modules


def _known(src_root):
    return set(package_modules(src_root)) | set(EXTENSIONS)


def _imports(tree):
    """(node, at module level) for every import statement in `tree`."""
    found = []
    stack = [(node, True) for node in tree.body]
    while stack:
        node, top = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, top))
        inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return found


def _targets(node, module, is_package, modules):
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
        return [n for n in names if n in modules]
    if node.level:
        base = module.split(".")
        keep = len(base) - node.level + (1 if is_package else 0)
        base = base[:keep]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    found = []
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in modules:
            found.append(sub)
        elif source in modules:
            found.append(source)
    return found


def import_graph(src_root):
    """({module: set of modules it imports}, {module: [(line, target) of function-level imports]})."""
    modules = package_modules(src_root)
    known = _known(src_root)
    graph, deferred = {m: set() for m in known}, {m: [] for m in known}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read(), path)
        is_package = path.endswith("__init__.py")
        for node, top in _imports(tree):
            for target in _targets(node, module, is_package, known):
                if target == module:
                    continue
                graph[module].add(target)
                if not top:
                    deferred[module].append((node.lineno, target))
    return graph, deferred


def cycles(graph):
    """The strongly connected components of more than one module (each a sorted tuple), by
    Tarjan's algorithm, iteratively."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(tuple(sorted(component)))
    return sorted(found)


if __name__ == "__main__":
    import sys

    graph, deferred = import_graph(sys.argv[1] if len(sys.argv) > 1 else "src")
    for component in cycles(graph):
        print("cycle:", ", ".join(component))
    print("function-level imports of package modules:", sum(map(len, deferred.values())))
