"""The HTML report: content, structure, escaping, self-containment and the listing-failure page."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from subagent_catalog.analysis.forest import build_forest, default_parents
from subagent_catalog.analysis.summary import corpus_summary
from subagent_catalog.analysis.text import clip
from subagent_catalog.catalog.listing import list_agents_text
from subagent_catalog.corpus import read_corpus
from subagent_catalog.outputs import OutputError
from subagent_catalog.read.paths import MISSING
from subagent_catalog.synth import writer as w
from subagent_catalog.views.report import render_report, script_json, write_report
from subagent_catalog.views.summary_text import summary_text

T0 = 1_700_000_000_000

HOSTILE_LABELS = [
    "<script>alert(1)</script>",
    "\"'><img src=x onerror=alert(1)>",
    "مرحبا \u202eevil\u202c بالعالم",
    "first line\nsecond line\r\nthird",
    "</script><script>window.__pwned=1</script>",
    "L" * 1_000_000,
]


def _session(
    root: Path,
    sid: str,
    *,
    parent: str | None = None,
    payload: object = MISSING,
    created: int = T0,
    subagent: bool = True,
    cwd: str = "/proj",
    tail: bytes = b"",
) -> str:
    head = w.header(
        sid,
        created_at=created,
        cwd=cwd,
        parent=parent,
        subagent=subagent and parent is not None,
        delegation_depth=1 if parent else 0,
    )
    return w.write_session(root, head, w.simple_child_events(sid, payload), "none", tail=tail)


def build_mixed(root: Path) -> None:
    _session(root, "root", created=T0)
    _session(root, "c-ok", parent="root", payload=w.descriptor("continuable", label="ok child"), created=T0 + 1)
    _session(root, "c-one", parent="root", payload=w.descriptor("one-shot", provider="fork"), created=T0 + 2)
    _session(root, "c-bad", parent="root", payload={"version": 2, "mode": "bogus", "provider": "spawn"}, created=T0 + 3)
    _session(
        root, "c-v3", parent="root", payload={"version": 3, "mode": "one-shot", "provider": "spawn"}, created=T0 + 4
    )
    _session(
        root,
        "c-torn",
        parent="root",
        payload=w.descriptor("continuable", label="torn"),
        created=T0 + 5,
        tail=b'{"type":"turn/st',
    )
    _session(root, "fork", parent="root", created=T0 + 6, subagent=False)
    _session(root, "g1", parent="fork", payload=w.descriptor("continuable", label="grandchild"), created=T0 + 7)
    _session(root, "solo", created=T0 + 8)
    w.write_file(os.path.join(root, "--proj--", "junk", "session.jsonl"), b"not json\n")


def build_hostile(root: Path) -> None:
    cwd = "/w/<img src=x onerror=alert(2)>"
    _session(root, "R<script>alert(3)</script>", created=T0, cwd=cwd)
    for i, label in enumerate(HOSTILE_LABELS):
        _session(
            root,
            f"h{i}",
            parent="R<script>alert(3)</script>",
            cwd=cwd,
            created=T0 + 1 + i,
            payload=w.descriptor("continuable", label=label, provider="<b>prov</b>"),
        )
    _session(
        root,
        "h-bad",
        parent="R<script>alert(3)</script>",
        cwd=cwd,
        created=T0 + 10,
        payload={"version": 2, "mode": "continuable", "provider": "p", "label": "x", "evil</script>": 1},
    )


def build_listing_failure(root: Path) -> None:
    _session(root, "P", created=T0, cwd="/p")
    _session(root, "k1", parent="P", payload=w.descriptor("continuable", label="one"), created=T0 + 1, cwd="/p")
    w.write_file(os.path.join(root, "--p--", "legacy.jsonl"), b"{}\n")


def _scripts(page: str) -> list[tuple[str, str]]:
    return re.findall(r"<script([^>]*)>(.*?)</script>", page, flags=re.S)


def _forest_blob(page: str) -> dict:
    [(_attrs, body)] = [(a, b) for a, b in _scripts(page) if 'type="application/json"' in a]
    return json.loads(body)


def test_clip_and_script_json() -> None:
    assert clip("x" * 5, 3) == "xxx…"
    assert clip("a\ud800") == "a\ufffd"
    value = {"s": "</script><!-- & \u2028 <b>", "n": [1, None]}
    text = script_json(value)
    assert not set("<>&") & set(text)
    assert "\u2028" not in text
    assert json.loads(text) == value


def test_summary_facts_and_text(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    corpus = read_corpus(tmp_path, jobs=1)
    facts = corpus_summary(corpus)
    assert facts["files"] == 10 and facts["listed"] == 9
    assert facts["verdicts"] == {"ok": 8, "torn-tail": 1, "skipped": 1}
    assert facts["rows"] == {"child": 4, "corrupt": 2}
    assert facts["descriptor_statuses"] == {"valid": 4, "malformed": 1, "unknown-version": 1}
    assert facts["bytes"] == sum(p.stat().st_size for p in tmp_path.rglob("session.jsonl"))
    text = summary_text(corpus)
    assert "sessions     10 files, 9 listed, 1 project\n" in text  # a count agrees with its noun
    assert "verdicts     ok 8, torn-tail 1, skipped 1" in text
    assert "listing      ok; rows (projection): child 4, corrupt 2" in text
    assert "2023-11-14 22:13:20 UTC → " in text


def test_summary_text_of_a_failing_listing(tmp_path: Path) -> None:
    build_listing_failure(tmp_path)
    text = summary_text(read_corpus(tmp_path, jobs=1))
    assert "listing      FAILS: " in text and "flat-file layout" in text
    assert "corpus-level problems (first 1 of 1):" in text
    assert "  - legacy-flat-file: " in text


def test_forest_shape_order_and_totals(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    forest = build_forest(read_corpus(tmp_path, jobs=1))
    nodes = forest.nodes
    roots = [nodes[i]["i"] for i in forest.roots]
    assert roots == ["root", "solo"]
    root = nodes[forest.index["root"]]
    assert [nodes[i]["i"] for i in root["n"]] == ["c-ok", "c-one", "c-bad", "c-v3", "c-torn", "fork"]
    assert root["z"] == 7 and root["a"] == 6 and root["e"] == 2
    assert nodes[forest.index["c-ok"]] == {
        "i": "c-ok",
        "k": "c",
        "m": "continuable",
        "l": "ok child",
        "n": [],
        "t": "2023-11-14 22:13",
        "p": forest.index["root"],
    }
    bad = nodes[forest.index["c-bad"]]
    assert (bad["k"], bad["r"], bad["u"]) == ("d", "corrupt", "malformed-descriptor")
    assert nodes[forest.index["c-torn"]]["v"] == "torn-tail"
    fork = nodes[forest.index["fork"]]
    assert fork["k"] == "s" and [nodes[i]["i"] for i in fork["n"]] == ["g1"]
    assert nodes[forest.index["g1"]]["p"] == forest.index["fork"]


def test_forest_groups_orphans_and_cycles(tmp_path: Path) -> None:
    _session(tmp_path, "top", created=T0)
    _session(tmp_path, "lost", parent="missing-parent", payload=w.descriptor("one-shot"), created=T0 + 1)
    _session(tmp_path, "a", parent="b", payload=w.descriptor("one-shot"), created=T0 + 2)
    _session(tmp_path, "b", parent="a", payload=w.descriptor("one-shot"), created=T0 + 3)
    _session(tmp_path, "self", parent="self", payload=w.descriptor("one-shot"), created=T0 + 4)
    forest = build_forest(read_corpus(tmp_path, jobs=1))
    nodes = forest.nodes
    titles = [nodes[i]["i"] for i in forest.roots]
    assert titles == ["top", "parent not listed: missing-parent", "lineage cycle (reachable from no root)"]
    orphans = nodes[forest.roots[1]]
    assert orphans["k"] == "g" and [nodes[i]["i"] for i in orphans["n"]] == ["lost"]
    cycle = nodes[forest.roots[2]]
    assert [nodes[i]["i"] for i in cycle["n"]] == ["a", "self"]
    assert [nodes[i]["i"] for i in nodes[forest.index["a"]]["n"]] == ["b"]
    assert nodes[forest.index["b"]]["n"] == []  # the cycle is cut: each node appears once
    assert cycle["z"] == 3


def test_default_parents_prefer_roots_with_subagents(tmp_path: Path) -> None:
    _session(tmp_path, "a-empty", created=T0)
    _session(tmp_path, "b-busy", created=T0 + 1)
    _session(tmp_path, "kid", parent="b-busy", payload=w.descriptor("one-shot"), created=T0 + 2)
    corpus = read_corpus(tmp_path, jobs=1)
    assert default_parents(corpus) == ["b-busy", "a-empty"]
    assert default_parents(corpus, limit=1) == ["b-busy"]


def test_report_content(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    build_mixed(root)
    corpus = read_corpus(root, jobs=1)
    page = render_report(corpus)
    for section in ('id="summary"', 'id="problems"', 'id="forest"', 'id="charts"', 'id="trees"', 'id="listings"'):
        assert section in page
    assert 'id="listing-error"' not in page
    # the list_agents text of each default parent, exactly (HTML-escaped)
    assert default_parents(corpus) == ["root", "solo"]
    for parent in ("root", "solo"):
        assert list_agents_text(corpus, parent) in page
    assert "c-ok [ready] — ok child" in page
    # charts: inline SVG, well-formed XML, one per distribution, each bar with a tooltip
    charts = _chart_svgs(page)
    assert len(charts) == 6
    for chart in charts:
        svg = ElementTree.fromstring(chart)
        bars = svg.findall("{http://www.w3.org/2000/svg}rect")
        assert bars and all(
            bar.find("{http://www.w3.org/2000/svg}title") is not None for bar in bars if bar.get("class") != "key"
        )
    for key in ("reason-cause", "provider", "depth", "time", "version", "mode"):
        assert f'id="chart-{key}"' in page
    # the forest blob holds every listed session
    blob = _forest_blob(page)
    assert sorted(n["i"] for n in blob["nodes"]) == sorted(
        ["root", "c-ok", "c-one", "c-bad", "c-v3", "c-torn", "fork", "g1", "solo"]
    )
    # problems table lists the skipped file
    assert "header-skipped" in page


def test_report_is_self_contained(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    page = render_report(read_corpus(tmp_path, jobs=1))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    scripts = _scripts(page)
    assert len(scripts) == 2
    assert [attrs for attrs, _ in scripts] == [' type="application/json" id="forest-data"', ""]
    # the CSP allows exactly the inline script that is there
    inline = scripts[1][1]
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    assert f"script-src 'sha256-{digest}'" in csp.group(1)
    assert "default-src 'none'" in csp.group(1)


def test_hostile_values_are_escaped_and_bounded(tmp_path: Path) -> None:
    build_hostile(tmp_path)
    corpus = read_corpus(tmp_path, jobs=1)
    page = render_report(corpus)
    assert len(page) < 600_000  # the 1 MB label is cut everywhere
    for raw in ("<script>alert", "<img src=x", "</script><script>window", "<b>prov</b>", "evil</script>"):
        assert raw not in page
    assert len(_scripts(page)) == 2
    # the values are there as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;&#39;&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "R&lt;script&gt;alert(3)&lt;/script&gt;" in page
    blob = _forest_blob(page)
    labels = {n["i"]: n.get("l") for n in blob["nodes"]}
    assert labels["h0"] == HOSTILE_LABELS[0]
    assert labels["h2"] == HOSTILE_LABELS[2]
    assert labels["h3"] == HOSTILE_LABELS[3]
    assert labels["h5"] == "L" * 1000 + "…"
    # the list_agents text keeps lines bounded too
    line = "h5 [ready] — " + "L" * 1_000_000
    assert line[:2000] + "…" in page and "L" * 2001 not in page


def test_listing_failure_renders_banner_summary_and_problems(tmp_path: Path) -> None:
    build_listing_failure(tmp_path)
    corpus = read_corpus(tmp_path, jobs=1)
    page = render_report(corpus)
    assert 'id="listing-error"' in page and "Upstream's listing fails for this root" in page
    assert "flat-file layout" in page
    assert 'id="summary"' in page and 'id="problems"' in page and "legacy-flat-file" in page
    assert 'id="forest"' not in page and 'id="listings"' not in page
    assert _forest_blob(page) == {"nodes": [], "roots": []}
    assert len(_chart_svgs(page)) == 2  # descriptor charts still render


def test_trace_semantics_and_explicit_parents(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    corpus = read_corpus(tmp_path, jobs=1)
    page = render_report(corpus, semantics="trace", parents=["fork", "no-such-parent"])
    blob = _forest_blob(page)
    v3 = next(n for n in blob["nodes"] if n["i"] == "c-v3")
    assert (v3["k"], v3["r"]) == ("d", "unsupported")
    assert list_agents_text(corpus, "fork", semantics="trace") in page
    assert "session &#34;no-such-parent&#34; not found" in page
    assert "The parents chosen with" in page


def test_write_report_refuses_the_corpus_root(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    corpus = read_corpus(tmp_path, jobs=1)
    with pytest.raises(OutputError, match="inside the corpus"):
        write_report(corpus, tmp_path / "report.html")
    assert not (tmp_path / "report.html").exists()
    out = write_report(corpus, tmp_path.parent / f"{tmp_path.name}-report.html")
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
    out.unlink()


def test_a_chart_the_renderer_refuses_keeps_its_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from subagent_catalog.views import svg_charts

    draw = svg_charts.bar_chart

    def refuse(data: svg_charts.Counts, **options: Any) -> str:
        if data.category_title == "provider":
            raise ValueError("drawing failed:\nError: something <odd>")
        return draw(data, **options)

    monkeypatch.setattr(svg_charts, "bar_chart", refuse)
    build_mixed(tmp_path)
    page = render_report(read_corpus(tmp_path, jobs=1))
    [figure] = re.findall(r'<figure class="chart" id="chart-provider">.*?</figure>', page, flags=re.S)
    failure = "(ValueError: drawing failed: Error: something &lt;odd&gt;)"
    assert f"the chart could not be drawn {failure}; its data is below" in figure
    assert '<details class="more" open>' in figure and "<bdi>fork</bdi>" in figure
    assert page.count("could not be drawn") == 1  # the other charts are drawn


def _sample() -> Path:
    sample = Path(__file__).resolve().parent.parent / "data" / "sample"
    if not sample.is_dir():
        pytest.skip("no data/sample")
    return sample


def test_diagnostics_table_data(tmp_path: Path) -> None:
    from subagent_catalog import catalog

    corpus = read_corpus(_sample(), jobs=1)
    page = render_report(corpus)
    blob = _forest_blob(page)
    rows = blob["diagnostics"]
    expected = catalog(corpus).filter(kind="diagnostic")
    assert sorted(r["i"] for r in rows) == sorted(expected["id"].to_list())
    assert 'id="diagnostics"' in page and f'Diagnostics <span class="muted">({len(rows)} rows)' in page
    for row in rows:
        assert blob["nodes"][row["o"]]["i"] == row["i"]  # the reveal link's node is that session
        assert not row["f"].startswith("/") and row["f"].endswith(("session.jsonl", "session.jsonl.zstd"))
    garbage = next(r for r in rows if r["i"] == "garbage-line")
    assert (garbage["l"], garbage["k"]) == (5, "unparsable-line-before-turn-end")
    assert [(r["r"], r["u"]) for r in rows] == sorted((r["r"], r["u"]) for r in rows)
    # the places of the nodes: a project and a file for every session, none for a group
    places = blob["places"]
    assert len(places["j"]) == len(places["f"]) == len(blob["nodes"])
    assert all(j >= 0 for j, n in zip(places["j"], blob["nodes"], strict=True) if n["k"] != "g")


def test_a_failing_listing_says_nothing_is_listed(tmp_path: Path) -> None:
    build_listing_failure(tmp_path)
    page = render_report(read_corpus(tmp_path, jobs=1))
    text = re.sub(r"<[^>]+>", " ", page)
    assert "listed by upstream" not in text
    assert "nothing listed: upstream's listing fails" in text
    assert 'id="diagnostics"' not in page and 'href="#diagnostics"' not in page
    assert "subagent session files (by header)" in text


def test_title_defaults_to_the_root_name_and_is_escaped(tmp_path: Path) -> None:
    root = tmp_path / "nightly-archive"
    build_mixed(root)
    corpus = read_corpus(root, jobs=1)
    assert "<title>subagent-catalog report: nightly-archive</title>" in render_report(corpus)
    page = render_report(corpus, title="Q3 </title><script>alert(1)</script>")
    assert "<title>Q3 &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>" in page
    assert "<h1>Q3 &lt;/title&gt;" in page and len(_scripts(page)) == 2


def test_count_axes_have_integer_ticks_and_rare_counts_a_log_view(tmp_path: Path) -> None:
    from subagent_catalog.views import report_charts

    _session(tmp_path, "root", created=T0)
    for i in range(30):
        _session(tmp_path, f"k{i:02d}", parent="root", payload=w.descriptor("one-shot"), created=T0 + 1 + i)
    _session(tmp_path, "bad", parent="root", payload={"version": 2, "mode": "x"}, created=T0 + 40)
    charts = {c.key: c for c in report_charts.report_charts(*_corpus_rows(tmp_path))}
    for chart in charts.values():
        if chart.svg is None:
            continue
        labels = [t.text or "" for t in ElementTree.fromstring(chart.svg).iter("{http://www.w3.org/2000/svg}text")]
        assert "count" in labels
        assert not [t for t in labels if re.fullmatch(r"[\d,]*\.\d+", t)]  # counts: no fractional ticks
    # 30 children next to 1 corrupt row: the provider chart gets a log view, one labelled bar per outcome
    assert charts["provider"].log_svg is not None and charts["reason-cause"].log_svg is None
    log = ElementTree.fromstring(charts["provider"].log_svg)
    texts = [t.text for t in log.iter("{http://www.w3.org/2000/svg}text")]
    assert "count (log)" in texts
    assert [t for t in texts if t in {"1", "2", "5", "10", "20", "50"}][:6] == ["1", "2", "5", "10", "20", "50"]
    bars = [
        r
        for r in log.iter("{http://www.w3.org/2000/svg}rect")
        if r.find("{http://www.w3.org/2000/svg}title") is not None
    ]
    tips = sorted(r.find("{http://www.w3.org/2000/svg}title").text.split(" · ", 1)[1] for r in bars)  # type: ignore[union-attr]
    assert tips == ["outcome: child · count: 30", "outcome: corrupt · count: 1"]
    assert {float(r.get("y", 0)) for r in bars} != {float(bars[0].get("y", 0))}  # side by side, not stacked


SVG = "{http://www.w3.org/2000/svg}"


def _chart_svgs(page: str) -> list[str]:
    return re.findall(r'<div class="plot view-linear">(<svg.*?</svg>)</div>', page, flags=re.S)


def _corpus_rows(root: Path) -> tuple:
    from subagent_catalog import catalog

    corpus = read_corpus(root, jobs=1)
    return corpus, catalog(corpus)


@pytest.mark.parametrize("step_ms", [3_600_000, 86_400_000])
def test_the_time_chart_draws_hour_and_day_bins(tmp_path: Path, step_ms: int) -> None:
    from subagent_catalog.views.report_charts import report_charts

    _session(tmp_path, "root", created=T0)
    for i in range(8):
        _session(tmp_path, f"k{i}", parent="root", payload=w.descriptor("one-shot"), created=T0 + i * step_ms)
    [time] = [c for c in report_charts(*_corpus_rows(tmp_path)) if c.key == "time"]
    assert time.failure is None and time.svg is not None
    tips = [t.text or "" for t in ElementTree.fromstring(time.svg).iter("{http://www.w3.org/2000/svg}title")]
    assert len(tips) == 8 and all("count: 1" in tip for tip in tips)  # one bar per bin, each named


_REPORT_IMPORTS = """
import sys
from subagent_catalog.cli import main
try:
    main(["report", sys.argv[1], "-o", sys.argv[2]])
except SystemExit as done:
    assert not done.code, done.code
print(sorted({name.split(".")[0] for name in sys.modules} & {"altair", "vl_convert", "vega_datasets"}))
"""


def test_the_report_imports_no_chart_library(tmp_path: Path) -> None:
    """The report draws its charts itself: no altair and no V8 (vl-convert) on its path."""
    out = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-c", _REPORT_IMPORTS, str(_sample()), str(out)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "[]"
    assert len(_chart_svgs(out.read_text(encoding="utf-8"))) == 6


def test_a_time_chart_at_the_last_moment_a_date_can_name_draws_without_ticks_past_it() -> None:
    """A log created at 9999-12-31T23:59:59.999Z (fuzz seed 55): its bin ends past the last date Python can name."""
    from subagent_catalog.views import svg_charts

    last = 253_402_300_799_999
    svg = svg_charts.time_chart(
        [(last - 3_600_000, "ok", 1), (last, "ok", 2)],
        bin_ms=3_600_000,
        colours={"ok": "#0072B2"},
        series=["ok"],
        category_title="created",
        colour_title="outcome",
    )
    assert svg.count("<rect") >= 2 and "Dec 31" in svg


def test_an_error_code_breaks_after_its_underscores_only() -> None:
    """A narrow code column broke ``CONTEXT_LENGTH_EXCEEDED`` inside words (CONTE / XT_LE / NGTH_)."""
    sample = read_corpus(Path(__file__).resolve().parents[1] / "data" / "sample", jobs=1)
    page = render_report(sample)
    assert "<code>CONTEXT_<wbr>LENGTH</code>" in page and "<code>CONTEXT_LENGTH</code>" not in page


def test_the_tree_names_roots_and_forks_by_title_or_first_prompt(tmp_path: Path) -> None:
    # Issue 43: every root of the report's session tree showed only its id.
    log = w.EventLog("titled")
    log.turn_start()
    log.user("the first prompt")
    log.add("session/title", {"title": "Fix <the> build", "source": {"kind": "fallback"}})
    log.turn_end()
    w.write_session(tmp_path, w.header("titled", created_at=T0, cwd="/proj"), log.events, "none")
    w.write_session(
        tmp_path,
        w.header("prompted", created_at=T0 + 1, cwd="/proj"),
        w.simple_child_events("prompted", MISSING, label_text="Port  the\nparser"),
        "none",
    )
    _session(tmp_path, "kid", parent="prompted", payload=w.descriptor("one-shot", label="a child"), created=T0 + 2)
    nodes = _forest_blob(render_report(read_corpus(tmp_path, cache=False)))["nodes"]
    named = {node["i"]: (node["k"], node.get("l")) for node in nodes}
    assert named == {"titled": ("s", "Fix <the> build"), "prompted": ("s", "Port the parser"), "kid": ("c", "a child")}
