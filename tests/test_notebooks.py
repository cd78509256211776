"""Execute the example notebooks (kernel ``python3``, cwd ``notebooks/``) and fail on any error.

When ``tests/test_lab_browser.py`` runs in the same session and JupyterLab can run here, it runs each
notebook in a real JupyterLab and checks all this and more; ``tests/conftest.py`` then deselects the
nbclient run of the same notebook, so each runs once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
SAMPLE = REPO / "data" / "sample"
SAMPLE_NAMES = ["01-quickstart.ipynb", "02-audit-a-run.ipynb", "03-descriptor-quality.ipynb"]
NAMES = [*SAMPLE_NAMES, "04-audit-runs.ipynb", "05-compare-runs.ipynb"]  # 04 and 05 write their own corpora

pytestmark = pytest.mark.notebooks


def execute(name: str) -> object:
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        book,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        allow_errors=False,
    )
    client.execute()
    return book


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name: str) -> None:
    if not SAMPLE.is_dir():
        pytest.skip("data/sample is missing (build it with `python data/make_sample.py`)")
    book = execute(name)
    cells = [cell for cell in book.cells if cell.cell_type == "code"]  # type: ignore[attr-defined]
    assert cells and all(cell.execution_count is not None for cell in cells)
    errors = [out for cell in cells for out in cell.outputs if out.output_type == "error"]
    assert errors == []
    widget_views = [
        out
        for cell in cells
        for out in cell.outputs
        if out.output_type == "display_data" or out.output_type == "execute_result"
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    ]
    assert widget_views, "each notebook ends by displaying a widget"


def test_notebooks_read_the_sample_relative_to_their_directory() -> None:
    for name in SAMPLE_NAMES:
        source = (NOTEBOOKS / name).read_text(encoding="utf-8")
        assert '"../data/sample"' in source.replace('\\"', '"')
