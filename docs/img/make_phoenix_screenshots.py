"""Re-make the Phoenix screenshots in this directory (``make screenshots-phoenix``; not run by the tests).

A Phoenix server (the ``[interop]`` extra) starts on 127.0.0.1, offline, in a
temporary directory (``tests/phoenix_server.py``, as ``make test-interop``
starts it); one root run of the conformance corpus upstream's own runtime
wrote (``real-writer-rich-none``, 24 root runs, 6 of them failed) is sent to
it with ``send_otlp``; headless Chromium (the system ``chromium``, through
Playwright) opens the project and one trace and captures:

- ``phoenix-traces.png``: the project's trace list, each root run a row, the
  runs that ended in ``error``, ``aborted`` or ``max-tokens`` marked with
  Phoenix's error status;
- ``phoenix-trace.png``: the trace tree (the session's AGENT span, its turns,
  model steps and tool calls, a subagent under the ``subagent`` tool call
  that started it) with the session selected;
- ``phoenix-llm.png``: one model step selected: its model, tokens and messages.

Usage (from the repository root)::

    .venv/bin/python docs/img/make_phoenix_screenshots.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RICH = REPO.parent / "shared" / "conformance" / "cases" / "real-writer-rich-none" / "corpus"
ROOT = "655a7652-909c-4139-8b86-ad46a44cd2b2"
CHILD = "subagent timeout vacuum schema bench import"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise SystemExit("Phoenix did not start")


def main() -> None:
    """Start Phoenix, send the run, shoot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    out = Path(parser.parse_args().out)
    sys.path.insert(0, str(REPO))
    from phoenix.client import Client
    from playwright.sync_api import sync_playwright

    from subagent_catalog import read_corpus
    from subagent_catalog.interop.otel import otlp_traces, send_otlp
    from tests.lab import CHROMIUM_ARGS, chromium

    with tempfile.TemporaryDirectory(prefix="phoenix-") as work:
        port = _port()
        command = [sys.executable, "-m", "tests.phoenix_server", work, str(port), str(_port())]
        server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait(url, time.monotonic() + 300)
            corpus = read_corpus(RICH, cache=False)
            traces = list(otlp_traces(corpus))  # every root run: the list shows the failed ones
            spans = next(t for t in traces if any((s.attributes or {}).get("session.id") == ROOT for s in t))
            sent = send_otlp(traces, url).spans
            client = Client(base_url=url)
            while True:  # ingestion is asynchronous: wait until Phoenix holds every span
                try:
                    if len(client.spans.get_spans_dataframe(project_identifier="dsh", limit=5000)) >= sent:
                        break
                except Exception:
                    pass
                time.sleep(0.5)
            project = client.projects.get(project_name="dsh")["id"]
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
                # the trace list at 1,900 px (its error column beside the project's stats), the trace at 1,500 px
                page = browser.new_page(viewport={"width": 1900, "height": 940}, device_scale_factor=1)
                page.goto(f"{url}/projects/{project}", wait_until="load")
                page.get_by_text(f"session {ROOT}").first.wait_for(timeout=120_000)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(out / "phoenix-traces.png"))
                page.set_viewport_size({"width": 1500, "height": 940})
                page.goto(f"{url}/projects/{project}/traces/{spans[0].context.trace_id:032x}", wait_until="load")
                page.get_by_text(CHILD).first.wait_for(timeout=120_000)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(out / "phoenix-trace.png"))
                page.get_by_text("mock/mock", exact=True).nth(1).click()
                page.get_by_text("llm", exact=True).first.wait_for(timeout=60_000)  # the detail shows the LLM span
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(out / "phoenix-llm.png"))
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=60)
    print(f"wrote {out / 'phoenix-traces.png'}, {out / 'phoenix-trace.png'} and {out / 'phoenix-llm.png'}")


if __name__ == "__main__":
    main()
