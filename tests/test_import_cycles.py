"""No import cycle anywhere in `src/freshline`.

Every import statement counts wherever it stands: at module level, under `TYPE_CHECKING`,
or inside a function. An import deferred into a function still makes its module depend
on the other one; deferring is for start-up time (the hook and the hot commands load
only what a call needs), never a way around a cycle. `import a.b.c` and `from a.b import
c` (a module) depend on `a.b.c` alone, not on the packages above it; `from a.b import
name` (not a module) depends on the package `a.b`. Lazy exports (`lazy.exports`, a map
of strings) are not imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

SRC = Path(__file__).resolve().parents[1] / "src"


def module_files(src: Path) -> dict[str, Path]:
    """Every module under `src`, by dotted name (a package by its `__init__.py`)."""
    found = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The modules of `modules` that module `name` (at `path`) imports anywhere."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = full if full in modules else base
                if target in modules:
                    yield target


def graph(src: Path) -> dict[str, set[str]]:
    """Module → the modules it imports (itself left out)."""
    modules = module_files(src)
    return {name: set(imported(name, path, modules)) - {name} for name, path in modules.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a module importing
    itself), each sorted (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
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
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


def test_src_has_no_import_cycle() -> None:
    assert cycles(graph(SRC)) == []


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": set(), "b": {"a"}}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"a"}}, [["a"]]),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
    ],
)
def test_cycles_table(edges: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(edges) == expected


def test_every_kind_of_import_counts(tmp_path: Path) -> None:
    pkg = tmp_path / "p"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from p.sub.x import X\n")
    (pkg / "sub" / "x.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p import y\nX = 1\n")
    (pkg / "y.py").write_text("def f():\n    from .sub import x\n    return x\n")
    (pkg / "z.py").write_text("import p.sub\nfrom p.sub import X\n")
    assert graph(tmp_path) == {
        "p": set(), "p.sub": {"p.sub.x"}, "p.sub.x": {"p.y"}, "p.y": {"p.sub.x"},
        "p.z": {"p.sub"},
    }
    assert cycles(graph(tmp_path)) == [["p.sub.x", "p.y"]]


@given(st.dictionaries(st.sampled_from("abcdef"), st.sets(st.sampled_from("abcdef"))))
def test_a_graph_has_a_cycle_exactly_when_some_node_reaches_itself(
    edges: dict[str, set[str]],
) -> None:
    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(edges.get(start, ()))
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo += edges.get(node, ())
        return seen

    on_cycles = {n for c in cycles(edges) for n in c}
    assert on_cycles == {n for n in edges if n in reaches(n)}
