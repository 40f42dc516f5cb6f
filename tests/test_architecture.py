"""The shape docs/architecture.md promises, checked: no module imports another in a loop (imports inside
functions and under TYPE_CHECKING included), no import of privdb's own modules hidden in a function body
outside the CLI's lazy start-up, and no module past 400 lines in src/, bench/ or e2e/. The layers themselves
are import-linter's contracts (`make lint`)."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400
# the CLI imports each command's library code when the command runs, so `privdb --help` starts fast
# (privdb.cli.commands); the engines' URL parser opens an optional engine's backend only when asked for it
LAZY_ALLOWED = ("privdb/cli/", "privdb/backends/urls.py")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
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
                    found.append(sorted(component))
    return found


def test_no_module_imports_another_in_a_loop() -> None:
    graph = grimp.build_graph("privdb")  # every import statement, in function bodies too
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_loop() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _function_imports(path: Path) -> list[tuple[int, str]]:
    """privdb's own modules imported in function bodies, but those loaded on first use because they need
    an optional dependency, or a heavy one only some paths use (SciPy, pandas, Arrow, HTTP: a command
    imports only what it uses, tests/test_startup.py), as the import or the line above it says:
    ``# optional: …``."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    out = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("privdb")):
                out.append((node.lineno, node.module or ""))
            elif isinstance(node, ast.Import):
                out += [(node.lineno, a.name) for a in node.names if a.name.startswith("privdb")]
    return [(n, m) for n, m in out if "# optional:" not in " ".join(lines[max(n - 2, 0) : n])]


def test_privdb_imports_its_own_modules_at_the_top() -> None:
    hidden = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / "src" / "privdb").rglob("*.py"))
        if not any(part in path.as_posix() for part in LAZY_ALLOWED)
        for line, module in _function_imports(path)
    ]
    assert hidden == []


def test_no_module_is_past_400_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for folder in ("src", "bench", "e2e")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert long == []
