"""The package's architecture, checked from its source: layers, no import cycles, small modules.

Every module of ``subagent_catalog`` is imported, and its import statements
(top level, inside functions and under ``TYPE_CHECKING`` alike) are read with
``ast``. A module may import from its own package and from packages of a
lower layer only; the module graph has no cycle; no module grows past the
size limit; UI libraries stay in ``views`` and ``cli``.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import subagent_catalog

PACKAGE = Path(subagent_catalog.__file__).resolve().parent

# The layer of each top-level unit of the package (its first dotted component).
LAYERS: dict[str, int] = {
    "errors": 0,
    "forking": 0,
    "progress": 0,
    "regular": 0,
    "version": 0,
    "bounds": 1,
    "outputs": 1,
    "prices": 1,
    "read": 1,
    "frames": 2,
    "synth": 2,
    "catalog": 3,
    "store": 4,
    "corpus": 5,
    "analysis": 6,
    "views": 7,
    "interop": 7,
    "cli": 8,
    "__main__": 8,
    "__init__": 8,
    "widgets": 8,
    "archive": 8,
}
UI_LIBRARIES = {"click", "tqdm", "ipywidgets", "traitlets", "anywidget", "jinja2", "altair", "vl_convert"}
UI_UNITS = {
    "views",
    "cli",
    "__main__",
    "widgets",
}
MAX_LINES = 650


def _module_names() -> list[str]:
    names = ["subagent_catalog"]
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="subagent_catalog."):
        names.append(info.name)
    return sorted(names)


def _source(name: str) -> Path:
    parts = name.split(".")[1:]
    path = PACKAGE.joinpath(*parts)
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _unit(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(name: str, *, at_import: bool = False) -> set[str]:
    """The package modules ``name`` imports (``from a.b import c`` counts as ``a.b.c`` when that is a module).

    ``at_import``: only the imports that run when the module is imported (its top-level
    statements), not those inside functions, which run when called.
    """
    path = _source(name)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    nodes = [n for top in tree.body if not isinstance(top, ast.FunctionDef) for n in ast.walk(top)]
    for node in nodes if at_import else ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "subagent_catalog")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "subagent_catalog":
                continue
            for alias in node.names:
                child = f"{target}.{alias.name}"
                found.add(child if child in MODULE_SET else target)
    found.discard(name)
    return found


def _third_party(name: str) -> set[str]:
    tree = ast.parse(_source(name).read_text(encoding="utf-8"))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots.add(node.module.split(".")[0])
    return roots


MODULES = _module_names()
MODULE_SET = frozenset(MODULES)


def test_every_module_is_in_a_layer_and_imports() -> None:
    for name in MODULES:
        assert _unit(name) in LAYERS, f"{name}: add its package to LAYERS (and to the package docstring)"
        importlib.import_module(name)


SOURCE_BLIND = ("analysis", "views", "interop")
"""The layers that take any ``frames.source.Source`` and never ask which kind it is (issue 51)."""

KIND_MODULES = {
    "subagent_catalog.store.archive",
    "subagent_catalog.store.source",
    "subagent_catalog.store.archive_search",
}


def _kind_questions(name: str) -> list[str]:
    """Where a module asks what kind of source it has: an archive module imported (docstring examples aside),
    ``isinstance`` on an archive type, or the archive behind a corpus reached for."""
    text = _source(name).read_text(encoding="utf-8")
    found = [f"imports {target}" for target in sorted(_imports(name) & KIND_MODULES)]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            kinds = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
            if "Archive" in kinds.replace("ArchiveError", ""):
                found.append(f"isinstance(..., {kinds})")
        if isinstance(node, ast.Attribute) and node.attr in ("_archive", "_origin", "_window"):
            found.append(f".{node.attr}")
        if isinstance(node, ast.Name) and node.id in (
            "source_archive",
            "origin_archive",
            "ArchiveCorpus",
            "StoredArchive",
        ):
            found.append(node.id)
    return found


@pytest.mark.parametrize("name", [m for m in MODULES if _unit(m) in SOURCE_BLIND])
def test_analysis_views_and_interop_never_ask_what_kind_of_source_they_have(name: str) -> None:
    assert _kind_questions(name) == [], f"{name}: ask the Source (frames.source) instead"


def test_the_kind_check_finds_each_kind_of_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        "from subagent_catalog.store.archive import Archive\n"
        "def f(source):\n"
        "    if isinstance(source, Archive):\n"
        "        return source._archive\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "_source", lambda name: module)
    assert _kind_questions("subagent_catalog.analysis.probe") == [
        "imports subagent_catalog.store.archive",
        "isinstance(..., Archive)",
        "._archive",
    ]


@pytest.mark.parametrize("name", MODULES)
def test_imports_only_its_own_package_or_lower_layers(name: str) -> None:
    unit = _unit(name)
    wrong = [
        target
        for target in sorted(_imports(name))
        if _unit(target) != unit and LAYERS[_unit(target)] >= LAYERS[unit] and LAYERS[unit] < 8
    ]
    assert wrong == [], f"{name} (layer {LAYERS[unit]}) imports a layer at or above its own: {wrong}"


def test_the_facade_loads_no_user_interface() -> None:
    """Importing the package loads no view; the notebook progress bar's module is imported at the first read."""
    wrong = [t for t in _imports("subagent_catalog", at_import=True) if _unit(t) in UI_UNITS]
    assert wrong == []
    assert _imports("subagent_catalog") - _imports("subagent_catalog", at_import=True) >= {
        "subagent_catalog.views.progress"
    }
    code = f"import sys, subagent_catalog; print(sorted(m for m in {sorted(UI_LIBRARIES)!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


@pytest.mark.parametrize("name", [n for n in MODULES if _unit(n) not in UI_UNITS])
def test_the_library_imports_no_ui_library(name: str) -> None:
    assert _third_party(name) & UI_LIBRARIES == set()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    graph = {name: _imports(name) for name in MODULES}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", MODULES)
def test_modules_stay_small(name: str) -> None:
    lines = len(_source(name).read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split it by what its parts own"


@pytest.mark.parametrize("name", [n for n in MODULES if _source(n).name == "__init__.py" and n != "subagent_catalog"])
def test_every_subpackage_says_what_it_owns_and_may_import(name: str) -> None:
    doc = ast.get_docstring(ast.parse(_source(name).read_text(encoding="utf-8"))) or ""
    assert f"layer {LAYERS[_unit(name)]}" in doc.split("\n", 1)[0] + doc, name
    assert len(doc) > 200, f"{name}: the docstring should say what the package owns"


def test_the_public_api_keeps_working() -> None:
    from subagent_catalog import catalog, list_agents_text, list_children, read_corpus, scan_events
    from subagent_catalog.archive import export_archive, open_archive
    from subagent_catalog.widgets import CatalogBrowser, DiagnosticsDashboard

    assert all(
        callable(f)
        for f in (
            catalog,
            list_agents_text,
            list_children,
            read_corpus,
            scan_events,
            export_archive,
            open_archive,
            CatalogBrowser,
            DiagnosticsDashboard,
        )
    )


def _public_functions(name: str) -> list[str]:
    tree = ast.parse(_source(name).read_text(encoding="utf-8"))
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and not node.name.startswith("_")
        and not node.decorator_list  # click commands are documented in the CLI guide
        and "Examples:" not in (ast.get_docstring(node) or "")
    ]


@pytest.mark.parametrize("name", MODULES)
def test_every_public_function_has_an_example(name: str) -> None:
    assert _public_functions(name) == [], f"{name}: public functions without an Examples section"


AGGREGATES = frozenset({"group_by", "value_counts", "n_unique", "agg", "mean", "median", "quantile", "sum", "Counter"})
"""Calls that make a figure from rows: ``views/`` leaves them to ``analysis/`` (issue 51)."""

LAYOUT = {
    "subagent_catalog.views.transcript_tree:many_children": "groups children's ids per parent to page them",
    "subagent_catalog.views.transcript_tree:preorder": "sizes subtrees to place rows in the page's tree",
    "subagent_catalog.views.widgets.session_tree:__init__": "groups children's keys per parent to draw the tree",
    "subagent_catalog.views.widgets.pane_steps:pane_steps_html": "sums the characters drawn, for its budget",
    "subagent_catalog.views.svg_charts:columns": "sums a label's character widths",
    "subagent_catalog.views.table_columns:fit_caption": "counts the columns a narrow box hides",
    "subagent_catalog.views.svg_charts:bar_chart": "stacks a bar's parts to draw it",
    "subagent_catalog.views.svg_charts:time_chart": "stacks a column's parts to scale the axis",
    "subagent_catalog.views.waterfall_view:_aggregated": "sums the starts under one pixel column",
    "subagent_catalog.views.waterfall_view:waterfall_html": "counts the bars this page's links cannot reach",
}
"""Sums and groupings that lay a page out or page it, not figures of the runs: ``module:function``."""


def _aggregates(name: str) -> list[str]:
    """The aggregating calls a module makes (``frame.group_by(...)``, ``Counter(...)``...) outside ``LAYOUT``."""
    tree = ast.parse(_source(name).read_text(encoding="utf-8"))
    found = []
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    allowed = {
        id(inner) for function in functions if f"{name}:{function.name}" in LAYOUT for inner in ast.walk(function)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in allowed:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in AGGREGATES:
                found.append(f"line {node.lineno}: {called}")
    return found


def test_every_layout_exception_names_a_function_that_aggregates() -> None:
    for key in LAYOUT:
        name, function = key.split(":")
        tree = ast.parse(_source(name).read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.FunctionDef) and n.name == function for n in ast.walk(tree)), key


@pytest.mark.parametrize("name", [m for m in MODULES if _unit(m) == "views"])
def test_views_format_what_they_are_handed_and_count_nothing_themselves(name: str) -> None:
    assert _aggregates(name) == [], f"{name}: compute the figure in analysis/ (analysis.tallies has tally)"


def test_the_aggregate_check_finds_each_kind_of_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "probe.py"
    module.write_text("from collections import Counter\ndef f(rows):\n    return Counter(rows), rows.group_by('a')\n")
    monkeypatch.setattr(sys.modules[__name__], "_source", lambda name: module)
    assert _aggregates("subagent_catalog.views.probe") == ["line 3: Counter", "line 3: group_by"]
