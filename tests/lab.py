"""A JupyterLab server and headless Chromium, for the real-browser widget tests, screenshots and benchmark.

``Lab`` starts ``jupyter lab`` on a free port over a directory of notebooks
(user settings in a scratch directory: no news toast, no windowed notebook)
and keeps one Playwright page on it. ``Lab.notebook`` opens a notebook in that
page (closing the one before and shutting its kernel down), waits until its
kernel is really ready, runs all cells and waits until every cell has run;
``Lab.run`` executes code in the open notebook's kernel, as a new cell would.
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
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
HUB_CHILDREN = 1000

# The open notebook's kernel is connected, has answered kernel_info and is idle (a run-all sent before
# that is dropped: the cells stay "[ ]" and nothing runs, which made the first notebook of a busy
# machine time out).
KERNEL_READY = """async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    if (!panel || !panel.sessionContext) return false;
    await panel.sessionContext.ready;
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    if (!kernel || kernel.connectionStatus !== 'connected') return false;
    await kernel.info;
    return kernel.status === 'idle';
}"""
SCRIPT_MS = 120_000
"""The longest a page script that awaits JupyterLab (a command, a kernel reply) may take: Playwright's
``evaluate`` has no timeout of its own, so ``evaluate_within`` races each such script against this."""


def evaluate_within(page: Any, script: str, arg: Any = None, *, ms: int = SCRIPT_MS) -> Any:
    """``page.evaluate(script, arg)`` of an async function, bounded: it fails after ``ms`` milliseconds.

    Waits that Playwright bounds (``wait_for_*``, actions: 30 s by default) need none of this; a hung page
    (a busy renderer) is left to the per-test timeout (``pytest-timeout``).
    """
    bounded = f"""async ([arg, ms]) => {{
        let timer;
        const late = new Promise((_, reject) => {{
            timer = setTimeout(() => reject(new Error(`page script did not settle in ${{ms}} ms`)), ms);
        }});
        try {{
            return await Promise.race([({script})(arg), late]);
        }} finally {{
            clearTimeout(timer);
        }}
    }}"""
    return page.evaluate(bounded, [arg, ms])


PROMPTS = "() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')].map(p => p.textContent)"


LAYOUT = """() => [document.body.dataset.jpThemeLight,
    ...[...document.querySelectorAll('.jp-WindowedPanel-outer, .sc-browser, .sc-scroll, .sc-detail, .sc-dashboard')]
        .map(e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height].map(Math.round); })]"""
"""What ``settle`` watches by default: the theme and where the panel and the widgets' boxes are."""


def settle(page: Any, probe: str = LAYOUT, *, frames: int = 5, timeout: float = 30_000) -> Any:
    """Wait until ``probe`` (a function's source, no arguments) gives the same value, not null, for ``frames``
    animation frames in a row, and return that value: a state (the layout has settled after a resize, a scroll
    or a theme change; a widget is drawn), not a time."""
    page.evaluate("() => { window.__scSettle = null; }")
    settled = page.wait_for_function(
        """([probe, frames]) => {
            const value = (0, eval)('(' + probe + ')')();
            const now = value === null || value === undefined ? null : JSON.stringify(value);
            const s = window.__scSettle || (window.__scSettle = {value: null, same: 0});
            if (now !== null && s.value === now) { s.same += 1; } else { s.value = now; s.same = 0; }
            if (s.same < frames) { return false; }
            window.__scSettle = null;
            return now;
        }""",
        arg=[probe, frames],
        polling="raf",
        timeout=timeout,
    )
    return json.loads(settled.json_value())


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


def lab_runs_here() -> bool:
    """Whether the JupyterLab tests can run: Playwright, a Chromium, JupyterLab and anywidget are there."""
    try:
        __import__("playwright.sync_api")
    except ImportError:
        return False
    return chromium() is not None and missing_lab() is None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_lab_corpus(root: Path, roots: int = 3_999, hub_children: int = HUB_CHILDREN) -> dict[str, str]:
    """A corpus of ``roots + 1 + hub_children`` small sessions: many runs and one hub; returns the ids to look for."""
    from subagent_catalog.synth.writer import header, write_session

    middle = roots // 2
    for r in range(roots):
        write_session(root, header(f"run-{r:05d}", created_at=T0 + r * 10, cwd=f"/home/dev/p{r % 5}"), [], "none")
        if r == middle:
            write_session(root, header("hub-run", created_at=T0 + r * 10 + 1, cwd="/home/dev/hub"), [], "none")
    for c in range(hub_children):
        sid = f"needle-{c:04d}" if c == hub_children - 3 else f"hub-child-{c:04d}"
        head = header(sid, created_at=T0 + middle * 10 + 2 + c, cwd="/home/dev/hub", parent="hub-run", subagent=True)
        label = "the needle" if sid.startswith("needle") else f"task {c}"
        write_session(root, head, hub_child_events(sid, label, c), "none")
    return {"last_root": f"run-{roots - 1:05d}", "hub": "hub-run", "needle": f"needle-{hub_children - 3:04d}"}


def hub_child_events(session_id: str, label: str, index: int) -> list[dict[str, Any]]:
    """A hub child's one turn: child ``index`` starts 2 s after the one before and runs 15 s to 3 min 15 s
    (so a few dozen run at once); every 10th ends in an error, every 17th never ends (``open``)."""
    from subagent_catalog.synth.writer import descriptor, simple_child_events

    events = simple_child_events(session_id, descriptor("one-shot", label=label))
    start = T0 + index * 2_000
    for n, event in enumerate(events):
        event["time"] = start + n
    events[-1]["time"] = start + (index % 13 + 1) * 15_000
    if index % 17 == 0:
        events.pop()
    elif index % 10 == 0:
        events[-1]["data"]["reason"] = {
            "kind": "error",
            "error": {"message": "provider overloaded", "code": "RATE_LIMITED"},
        }
    return events


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
    """A running JupyterLab over ``root_dir`` and one Playwright page on it.

    Use as a context manager. Pass ``browser`` (a Playwright Chromium) to share
    one with other tests; otherwise one is launched from ``chromium_path``.
    """

    def __init__(self, root_dir: Path, *, chromium_path: str | None = None, browser: Any = None) -> None:
        self.root_dir = root_dir
        self.chromium_path = chromium_path
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._scratch = Path(tempfile.mkdtemp(prefix="sc-lab-"))
        self.log = self._scratch / "server.log"
        self._server: subprocess.Popen[bytes] | None = None
        self._playwright: Any = None
        self._own_browser = browser is None
        self.browser: Any = browser
        self._context: Any = None
        self._page: Any = None
        self.current: str | None = None  # the notebook open (and run) in the page

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
            if self.browser is None:
                from playwright.sync_api import sync_playwright

                self._playwright = sync_playwright().start()
                self.browser = self._playwright.chromium.launch(executable_path=self.chromium_path, args=CHROMIUM_ARGS)
            self._wait_for_server()
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
        if self._context is not None:
            self._context.close()
        if self._own_browser and self.browser is not None:
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

    def page(self, *, width: int = 1400, height: int = 1000, sidebar: bool | None = None) -> Any:
        """The one JupyterLab page (loaded on first use), at this viewport; ``sidebar``: open or close the left bar."""
        if self._page is None:
            self._context = self.browser.new_context(viewport={"width": width, "height": height})
            self._page = self._context.new_page()
            self._page.goto(f"{self.url}/lab?reset")  # ?reset: restore no tabs of earlier sessions
            self._page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands", timeout=60_000)
            evaluate_within(self._page, "() => window.jupyterapp.restored")
        elif self._page.viewport_size != {"width": width, "height": height}:
            self._page.set_viewport_size({"width": width, "height": height})
        if sidebar is not None:
            self._page.evaluate(f"() => window.jupyterapp.shell.{'expandLeft' if sidebar else 'collapseLeft'}()")
            settle(self._page)
        return self._page

    def notebook(
        self,
        name: str,
        *,
        width: int = 1400,
        height: int = 1000,
        sidebar: bool | None = False,
        timeout: float = 240,
        rerun: bool = False,
    ) -> Any:
        """Open ``name`` in the page and run all its cells (once: again only with ``rerun``); returns the page.

        Any other open notebook is closed and its kernel shut down, so one kernel runs at a time.
        """
        page = self.page(width=width, height=height, sidebar=sidebar)
        if self.current == name and not rerun:
            return page
        self.current = None
        evaluate_within(
            page,
            """async (path) => {
                const app = window.jupyterapp;
                for (const widget of [...app.shell.widgets('main')]) {
                    if (widget.context) widget.context.model.dirty = false;  // no "save changes?" dialog
                    if (widget.sessionContext) await widget.sessionContext.shutdown();
                    widget.dispose();
                }
                const opened = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
                app.shell.activateById(opened.id);
                await opened.context.ready;
            }""",
            name,
        )
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        deadline = time.monotonic() + timeout
        while True:
            accept_kernel_dialog(page)
            page.wait_for_function(KERNEL_READY, timeout=120_000, polling=250)
            dismiss_toasts(page)
            evaluate_within(
                page,
                """async () => {
                    await window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs');
                    window.jupyterapp.commands.execute('notebook:run-all-cells');  // not awaited: it runs on
                }""",
            )
            if self._wait_for_run(page, deadline):
                break
        dismiss_toasts(page)
        self.current = name
        return page

    def _wait_for_run(self, page: Any, deadline: float) -> bool:
        """Wait until every cell has run (True); False when the run-all was dropped (nothing ran, all idle)."""
        idle_since: float | None = None
        while time.monotonic() < deadline:
            prompts = page.evaluate(PROMPTS)
            if prompts and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts):
                return True
            if any("*" in p or re.search(r"\d", p) for p in prompts):
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > 10:
                return False
            time.sleep(0.2)
        raise TimeoutError(f"{self.current or 'the notebook'}: not every cell ran: {page.evaluate(PROMPTS)}")

    def run(self, code: str, *, page: Any = None) -> str:
        """Execute ``code`` in the open notebook's kernel (as a new cell would); returns what it printed.

        Raises:
            RuntimeError: the code raised (the message is the exception's).
        """
        result = evaluate_within(
            page or self._page,
            """async (code) => {
                const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
                const future = kernel.requestExecute({code, store_history: false});
                let out = '', error = null;
                future.onIOPub = (msg) => {
                    if (msg.header.msg_type === 'stream') out += msg.content.text;
                    if (msg.header.msg_type === 'error') error = msg.content.ename + ': ' + msg.content.evalue;
                };
                await future.done;
                return {out, error};
            }""",
            code,
        )
        if result["error"]:
            raise RuntimeError(result["error"])
        return str(result["out"])


def accept_kernel_dialog(page: Any, wait: float = 1) -> None:
    """Accept the "Select Kernel" dialog JupyterLab may show for a notebook it has not opened before."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        button = page.query_selector(".jp-Dialog .jp-mod-accept")
        if button is not None and button.is_visible():
            button.click()
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
