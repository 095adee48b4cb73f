"""The package reads as the pipeline: no import circle anywhere (module-level or inside a
function), and the package root keeps only the vocabulary and the code location."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "bf_assets"
ROOT_MODULES = {"__init__", "contract", "findings", "files", "settings", "definitions"}


def _module_name(p: Path) -> str:
    parts = p.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    # ``from pkg import submodule`` depends on the submodule, not the package
                    deps.add(sub if sub in files else node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in files and d != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_circle() -> None:
    graph = _graph()
    assert len(graph) > 50  # the walk really saw the package
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


# The stages, lowest first: each imports only from its own stage and those below it.
STAGES = [
    {"contract", "files", "settings", "defaults", "components"},
    # what leaves the machine is cleaned (secrets, host paths, reasoning, keys), and the
    # finding record, whose evidence is cleaned when it is made
    {"redact", "findings"},
    {"ingest"},
    {"gate"},
    {"audit"},
    {"review"},  # one trial
    {"dataset"},  # the dataset review: the one decision
    {"corpus"},  # many trials: the walk, the pool, the cache, the review of a corpus
    {"curate"},
    {"publish"},
    {"pages"},
    {"defs"},
    {"definitions"},
    {"cli"},
]


def _stage(module: str) -> int:
    part = module.split(".")[1] if "." in module else ""
    for level, names in enumerate(STAGES):
        if part in names:
            return level
    raise AssertionError(f"{module} belongs to no stage of the layout")


def test_the_package_root_holds_only_the_vocabulary_and_the_code_location() -> None:
    loose = {p.stem for p in PKG.glob("*.py")}
    assert loose == ROOT_MODULES
    stages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert stages | {"__init__"} | (ROOT_MODULES - {"__init__"}) <= set().union(*STAGES) | {
        "__init__"
    }


def test_no_import_runs_back_up_the_pipeline() -> None:
    """Each stage imports only what lies below it (function-level imports included)."""
    back_up = sorted(
        f"{name} -> {dep}"
        for name, deps in _graph().items()
        if name != "bf_assets"
        for dep in deps
        if dep != "bf_assets" and _stage(dep) > _stage(name)
    )
    assert back_up == []


def test_the_package_never_imports_the_sample_generator() -> None:
    """``bf_sample`` (the sample-data generator, beside the package) is a test and bench tool
    the wheel does not ship: no runtime module may import it, even inside a function."""
    users = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "bf_sample" or n.startswith("bf_sample.") for n in names):
                users.append(f"{_module_name(path)}:{node.lineno}")
    assert users == []
    assert not (PKG / "sample").exists()
