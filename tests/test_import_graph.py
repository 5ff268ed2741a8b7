"""No import cycle inside edgekit/, counting the imports that sit inside functions.

A cycle hidden in a function body still ties two modules into one unit: neither can be
understood, tested or replaced alone, and the cycle turns into an ImportError the day someone
moves the import to the top. So the graph here is built from every `import` statement in every
module, wherever it sits, by reading the source with `ast` (nothing is imported).

Nodes are modules (`edgekit.runtimes.litert`); a package is the node of its `__init__.py`
(`edgekit.runtimes`). `from edgekit.x import y` is an edge to `edgekit.x.y` when y is a
submodule, else to `edgekit.x`. Importing `edgekit.a.b` also runs `edgekit.a`'s `__init__`, but
that edge is left out on purpose: every submodule would otherwise form a cycle with a package
`__init__` that re-exports it, which is how packages are meant to be built.
"""

from __future__ import annotations

import ast
from pathlib import Path

import edgekit

ROOT = Path(edgekit.__file__).resolve().parent
PACKAGE = "edgekit"


def module_name(path: Path, root: Path = ROOT, package: str = PACKAGE) -> str:
    """Dotted name of the module at PATH; a package's `__init__.py` is the package itself."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def all_modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    return {module_name(p, root, package): p for p in sorted(root.rglob("*.py"))}


def _resolve_relative(current: str, is_package: bool, level: int, module: str | None) -> str:
    """The absolute name of `from {'.' * level}{module} import ...` written in CURRENT."""
    base = current.split(".")
    if not is_package:
        base = base[:-1]  # a module's relative imports start from its package
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _target(name: str, modules: dict[str, Path]) -> str | None:
    """NAME, or its nearest enclosing module that exists in edgekit (`edgekit.x.func` -> `edgekit.x`)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _typing_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside `if TYPE_CHECKING:` blocks (imports the type checker reads, never run)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            inside |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return inside


def imports_of(name: str, path: Path, modules: dict[str, Path], run_time: bool = False) -> set[str]:
    """The edgekit modules that the module NAME at PATH imports, anywhere in its body (RUN_TIME: those imports that
    run, leaving out the ones under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    skip = _typing_only(tree) if run_time else set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _target(alias.name, modules)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(name, is_package, node.level, node.module) if node.level
                    else node.module or "")
            if not (base == PACKAGE or base.startswith(PACKAGE + ".")):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if sub in modules else _target(base, modules)
                if target:
                    found.add(target)
    found.discard(name)
    return found


def import_graph(root: Path = ROOT, package: str = PACKAGE, run_time: bool = False) -> dict[str, set[str]]:
    modules = all_modules(root, package)
    return {name: imports_of(name, path, modules, run_time) for name, path in modules.items()}


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan): each holds a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle per strongly connected component."""
    return [_one_cycle(graph, comp) for comp in components(graph)]


def _one_cycle(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """A shortest cycle through the first module of COMP, staying inside COMP (breadth first)."""
    members = set(comp)
    start = comp[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return [*comp, comp[0]]  # unreachable for a strongly connected component


def test_no_import_cycle_inside_edgekit() -> None:
    graph = import_graph()
    found = components(graph)
    lines = []
    for comp in found:
        cycle = _one_cycle(graph, comp)
        more = f"  (all tied together: {', '.join(comp)})" if len(comp) > len(cycle) - 1 else ""
        lines.append("  " + " -> ".join(cycle) + more)
    listing = "\n".join(lines)
    assert not found, f"{len(found)} import cycle(s) inside edgekit/ (function-level imports included):\n{listing}"


# edgekit's packages are layers: no cycle between packages at run time, of two packages or more (function-level
# imports included; a type named for the checker under `if TYPE_CHECKING:` is not a layer's dependency: report names
# measure's records so, and measure draws its tables with report). Where one would close, what both sides need moves
# below both (issue 38 mended the last ten pairs and an eleven-package loop so).
def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph of edgekit's packages (edgekit.X): X -> Y where some module of X imports one of Y."""
    def pkg(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ""

    out: dict[str, set[str]] = {pkg(m): set() for m in graph}
    for a, targets in graph.items():
        out[pkg(a)] |= {pkg(b) for b in targets if pkg(b) != pkg(a)}
    return out


def test_the_packages_are_layers() -> None:
    graph = import_graph(run_time=True)
    packages = package_graph(graph)
    loops = []
    for comp in components(packages):
        cycle = _one_cycle(packages, comp)
        steps = zip(cycle, cycle[1:], strict=False)
        edges = [next(f"{m} -> {t}" for m, ts in sorted(graph.items()) for t in sorted(ts)
                      if m.split(".")[1:2] == [a] and t.split(".")[1:2] == [b]) for a, b in steps]
        loops.append(" -> ".join(cycle) + "  (" + "; ".join(edges) + ")")
    assert not loops, "packages that import each other, through:\n  " + "\n  ".join(loops) + \
        "\nmove what both sides need below both"


# --- the walker itself, on a package written for the purpose -------------------------------------
def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_walker_finds_cycles_through_function_level_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "edgekit"
    _write(pkg, {
        "__init__.py": "",
        "a.py": "def f():\n    from edgekit.sub import b\n",  # function-level, `from pkg import submodule`
        "sub/__init__.py": "from .b import thing\n",  # a package re-exporting its submodule: no cycle
        "sub/b.py": "from ..c import g\nthing = 1\n",  # relative, two levels up
        "c.py": "import edgekit.a\ng = 2\n",  # plain import closes the cycle a -> sub.b -> c -> a
        "leaf.py": "import os\nfrom edgekit import c\n",
    })
    graph = import_graph(pkg, "edgekit")
    assert graph["edgekit.a"] == {"edgekit.sub.b"}
    assert graph["edgekit.sub"] == {"edgekit.sub.b"}
    assert graph["edgekit.sub.b"] == {"edgekit.c"}
    assert graph["edgekit.leaf"] == {"edgekit.c"}
    assert cycles(graph) == [["edgekit.a", "edgekit.sub.b", "edgekit.c", "edgekit.a"]]


def test_walker_finds_no_cycle_in_a_layered_package(tmp_path: Path) -> None:
    pkg = tmp_path / "edgekit"
    _write(pkg, {
        "__init__.py": "",
        "low.py": "import json\n",
        "mid.py": "from edgekit.low import x\n",
        "top.py": "from . import mid\nfrom .low import y\n",
    })
    assert cycles(import_graph(pkg, "edgekit")) == []


def test_run_time_graph_leaves_out_what_only_the_type_checker_reads(tmp_path: Path) -> None:
    pkg = tmp_path / "edgekit"
    _write(pkg, {
        "__init__.py": "",
        "low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from edgekit.top import Record\n"
                  "else:\n    from edgekit import mid\n",
        "mid.py": "",
        "top.py": "import typing\nif typing.TYPE_CHECKING:\n    import edgekit.mid\nfrom edgekit.low import x\n",
    })
    assert import_graph(pkg, "edgekit")["edgekit.low"] == {"edgekit.top", "edgekit.mid"}
    assert import_graph(pkg, "edgekit", run_time=True)["edgekit.low"] == {"edgekit.mid"}  # the else branch runs
    assert import_graph(pkg, "edgekit", run_time=True)["edgekit.top"] == {"edgekit.low"}


def test_a_loop_of_three_packages_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "edgekit"
    _write(pkg, {
        "__init__.py": "", "a/__init__.py": "", "b/__init__.py": "", "c/__init__.py": "",
        "a/x.py": "from edgekit.b import y\n", "b/y.py": "def f():\n    from edgekit.c import z\n",
        "c/z.py": "from edgekit.a.w import v\n", "a/w.py": "v = 1\n",  # no module cycle: a.x -> b.y -> c.z -> a.w
    })
    graph = import_graph(pkg, "edgekit")
    assert cycles(graph) == []
    assert components(package_graph(graph)) == [["a", "b", "c"]]
