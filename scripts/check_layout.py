"""Check the layout of paragrad/: every file name answers "which concept?".

Prints every violation and exits 1 if there is any:
  (a) a source file (.py, .cu, .cuh) over 600 lines;
  (b) a file named like a catch-all (`*_extra*`, `*_more*`, `misc*`);
  (c) two modules that import each other, counting function-local imports as well as module-level
      ones; a package's __init__.py is the package's own module, so a submodule that imports
      from its package while the __init__ imports it back is such a pair.
Also prints, as information only, the largest import cycles (strongly connected components of
the module import graph).

    python scripts/check_layout.py [root]     (root defaults to this checkout's paragrad/)
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

MAX_LINES = 600
SOURCE_SUFFIXES = (".py", ".cu", ".cuh")
CATCH_ALL = re.compile(r"_extra|_more|^misc")
ROOT = Path(__file__).resolve().parent.parent / "paragrad"


def module_names(root):
    """{dotted module name: path} for every .py file under root; a package is its __init__.py."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name,) + path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imported_modules(name, path, modules):
    """The modules of `modules` that the file imports anywhere (module level or inside functions).
    `from P import x` means the submodule P.x when x is a module, else the module P itself."""
    is_package = path.name == "__init__.py"
    found = set()

    def known(dotted):
        # `import a.b.c` of a name that isn't a module: the deepest enclosing module that is
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(known(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else known(base))
    found.discard("")
    found.discard(name)
    return found


def import_graph(root):
    """{module: the modules it imports}, for every module under root."""
    modules = module_names(root)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def strongly_connected(graph):
    """Tarjan's algorithm, iterative: the components of more than one module, largest first."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components, key=len, reverse=True)


def check(root=ROOT):
    """Every violation under root, one line each (empty when the layout is clean)."""
    root = Path(root)
    violations = []
    for path in sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES):
        shown = path.relative_to(root.parent)
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            violations.append(f"{shown}: {lines} lines (more than {MAX_LINES})")
        if CATCH_ALL.search(path.stem):
            violations.append(f"{shown}: a catch-all name (_extra, _more, misc), not a concept")
    graph = import_graph(root)
    for a in sorted(graph):
        for b in sorted(graph[a]):
            if a < b and a in graph[b]:
                violations.append(f"{a} and {b} import each other")
    return violations


def main(argv):
    root = Path(argv[1]) if len(argv) > 1 else ROOT
    violations = check(root)
    for line in violations:
        print(line)
    graph = import_graph(root)
    cycles = strongly_connected(graph)
    print(f"\n{len(violations)} violation(s). Import cycles (information, not violations): "
          f"{len(cycles)}, largest first:")
    for component in cycles[:5]:
        print(f"  {len(component)} modules: {', '.join(component)}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
