"""A JupyterLab server and headless Chromium, for the real-browser widget tests, screenshots and benchmark.

``Lab`` starts ``jupyter lab`` on a free port over a directory of notebooks
(user settings in a scratch directory: no news toast, no windowed notebook),
and ``Lab.notebook`` opens one in a Playwright page and runs all its cells.
The kernel imports ``subagent_catalog`` from this checkout (``PYTHONPATH``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
T0 = 1_780_000_000_000
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
HUB_CHILDREN = 1000


def chromium() -> str | None:
    """The system Chromium, or ``None``."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def missing_lab() -> str | None:
    """Why JupyterLab and anywidget cannot run here, or ``None``."""
    for module, extra in (("jupyterlab", "jupyterlab"), ("anywidget", "anywidget"), ("ipykernel", "ipykernel")):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed: run `make test` (it installs .[dev]) or pip install {extra}"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_lab_corpus(root: Path, roots: int = 3_999, hub_children: int = HUB_CHILDREN) -> dict[str, str]:
    """A corpus of ``roots + 1 + hub_children`` small sessions: many runs and one hub; returns the ids to look for."""
    from subagent_catalog.synth.writer import descriptor, header, simple_child_events, write_session

    middle = roots // 2
    for r in range(roots):
        write_session(root, header(f"run-{r:05d}", created_at=T0 + r * 10, cwd=f"/home/dev/p{r % 5}"), [], "none")
        if r == middle:
            write_session(root, header("hub-run", created_at=T0 + r * 10 + 1, cwd="/home/dev/hub"), [], "none")
    for c in range(hub_children):
        sid = f"needle-{c:04d}" if c == hub_children - 3 else f"hub-child-{c:04d}"
        head = header(sid, created_at=T0 + middle * 10 + 2 + c, cwd="/home/dev/hub", parent="hub-run", subagent=True)
        label = "the needle" if sid.startswith("needle") else f"task {c}"
        write_session(root, head, simple_child_events(sid, descriptor("one-shot", label=label)), "none")
    return {"last_root": f"run-{roots - 1:05d}", "hub": "hub-run", "needle": f"needle-{hub_children - 3:04d}"}


def notebook(path: Path, sources: list[str]) -> Path:
    """Write a notebook of code cells."""
    cells = [
        {"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None} for s in sources
    ]
    book = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(book), encoding="utf-8")
    return path


class Lab:
    """A running JupyterLab over ``root_dir`` and a Playwright Chromium.

    Use as a context manager; ``notebook(name)`` returns a page with the notebook run.
    """

    def __init__(self, root_dir: Path, *, chromium_path: str) -> None:
        self.root_dir = root_dir
        self.chromium_path = chromium_path
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._scratch = Path(tempfile.mkdtemp(prefix="sc-lab-"))
        self.log = self._scratch / "server.log"
        self._server: subprocess.Popen[bytes] | None = None
        self._playwright: Any = None
        self.browser: Any = None

    def __enter__(self) -> Lab:
        settings = self._scratch / "settings"
        for name, value in SETTINGS.items():
            target = settings / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(value), encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        env["JUPYTER_CONFIG_DIR"] = str(self._scratch / "config")
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            f"--port={self.port}",
            "--ServerApp.ip=127.0.0.1",
            "--ServerApp.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={self.root_dir}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={self._scratch / 'workspaces'}",
            "--LabApp.expose_app_in_browser=True",
            "--allow-root",
        ]
        with open(self.log, "wb") as log:
            self._server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.root_dir)
        try:
            self._wait_for_server()
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
            self.browser = self._playwright.chromium.launch(executable_path=self.chromium_path, args=CHROMIUM_ARGS)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_for_server(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._server is not None and self._server.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {self.log.read_text(errors='replace')[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.url}/api", timeout=2).read()
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"jupyter lab did not answer in {timeout} s: {self.log.read_text(errors='replace')[-2000:]}")

    def __exit__(self, *_exc: object) -> None:
        if self.browser is not None:
            self.browser.close()
        if self._playwright is not None:
            self._playwright.stop()
        if self._server is not None:
            self._server.terminate()
            try:
                self._server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._server.kill()
        shutil.rmtree(self._scratch, ignore_errors=True)

    def notebook(self, name: str, *, width: int = 1400, height: int = 1000, timeout: float = 240) -> Any:
        """Open ``name`` in a new page, run all cells, wait until every cell has run; returns the page."""
        page = self.browser.new_page(viewport={"width": width, "height": height})
        page.goto(f"{self.url}/lab/tree/{name}?reset")  # ?reset: restore no tabs of earlier pages
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        accept_kernel_dialog(page)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached", timeout=60_000)
        dismiss_toasts(page)
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.commands.isEnabled('notebook:run-all-cells')"
        )
        started = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
            .some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"""
        for _attempt in range(6):  # a run-all sent while the kernel session is still settling can be lost
            accept_kernel_dialog(page, wait=1)
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            try:
                page.wait_for_function(started, timeout=8_000)
                break
            except Exception:
                continue
        page.wait_for_function(
            """() => {
                const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
                return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
            }""",
            timeout=timeout * 1000,
        )
        dismiss_toasts(page)
        return page


def accept_kernel_dialog(page: Any, wait: float = 4) -> None:
    """Accept the "Select Kernel" dialog JupyterLab shows for a notebook it has not opened before."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        button = page.query_selector(".jp-Dialog .jp-mod-accept")
        if button is not None and button.is_visible():
            button.click()
            return
        if page.query_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']") is not None:
            time.sleep(0.5)
            if page.query_selector(".jp-Dialog") is None:
                return
        time.sleep(0.2)


def dismiss_toasts(page: Any) -> None:
    """Close JupyterLab's notification toasts (e.g. the news question), if any."""
    for button in page.query_selector_all(".Toastify__toast button"):
        if button.is_visible():
            button.click()


def errors_in(page: Any) -> list[str]:
    """The tracebacks shown in the notebook (error outputs render as stderr text)."""
    texts = page.eval_on_selector_all(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", "outs => outs.map(o => o.innerText)"
    )
    return [str(t)[:800] for t in texts if "Traceback" in t or re.search(r"^\w+(Error|Exception)\b", t, re.M)]


def box(handle: Any) -> dict[str, float]:
    """A visible element's bounding box (fails if it has none)."""
    found = handle.bounding_box()
    assert found is not None, "element is not rendered"
    return dict(found)


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temporary directory, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
