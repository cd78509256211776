"""Run names from a healthy log's bytes (``read.name_scan``) equal the names the reader gives.

``run_names`` reads a healthy log's title and user-message lines alone; every other log, and
every log when ``name_records`` declines, goes through ``corpus.log_events``. The reference here
is the reader for every log (``name_records`` patched to decline), over the sample, a damaged
synthesized corpus, every conformance corpus and hand-made logs with escapes.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subagent_catalog.analysis.run_names as names_module
from subagent_catalog.analysis.run_names import run_names
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.name_scan import name_records
from subagent_catalog.synth.generate import generate
from tests.helpers import one_encoding

SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance"
ALL_CASES = sorted(p for p in (SHARED / "cases").iterdir() if (p / "corpus").is_dir()) if SHARED.is_dir() else []
CASES = one_encoding([case for index, case in enumerate(ALL_CASES) if not case.name.startswith("S") or index % 4 == 0])
"""Every case but the scenario cases (S..), of which every fourth: the N, Z, edge, fault, real-writer and
tiny corpora hold the byte-level oddities (CRLF, blank lines, split frames, flipped checksums)."""


def _both(corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Names by the byte scan, names by the reader alone, and how many logs the scan answered."""
    answered: list[int] = []

    def counting(path: str, compression: str) -> object:
        found = name_records(path, compression)  # type: ignore[arg-type]
        answered.append(found is not None)
        return found

    with monkeypatch.context() as patch:
        patch.setattr(names_module, "name_records", counting)
        fast = run_names(corpus)
    with monkeypatch.context() as patch:
        patch.setattr(names_module, "name_records", lambda path, compression: None)
        reference = run_names(corpus)
    return fast, reference, sum(answered)


def test_names_from_bytes_equal_the_readers_on_the_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    fast, reference, answered = _both(read_corpus("data/sample", cache=False), monkeypatch)
    assert fast.equals(reference) and answered > 10
    assert fast["name"].drop_nulls().len() > 10


def test_names_from_bytes_equal_the_readers_on_a_damaged_synthesized_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generate(tmp_path / "c", sessions=150, seed=11, compression="zstd", damaged_fraction=0.3, jobs=1)
    fast, reference, answered = _both(read_corpus(tmp_path / "c", cache=False), monkeypatch)
    assert fast.equals(reference) and answered > 50


@pytest.mark.skipif(not CASES, reason="../shared/conformance is not present")
def test_names_from_bytes_equal_the_readers_on_the_conformance_corpora(monkeypatch: pytest.MonkeyPatch) -> None:
    answered = 0
    for case in CASES:
        compression = json.loads((case / "meta.json").read_text(encoding="utf-8"))["compression"]
        corpus = read_corpus(case / "corpus", compression=compression, cache=False)
        fast, reference, count = _both(corpus, monkeypatch)
        assert fast.equals(reference), case.name
        answered += count
    assert answered > 100


def test_a_title_and_a_prompt_written_with_escapes_are_found(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(
        b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\n'
        b'{"type":"user\\/message","seq":0,"time":5,"data":{"content":"caf\\u00e9"}}\n'
        b'{"type":"session\\u002ftitle","seq":1,"time":6,"data":{"title":"T"}}\n'
        b'{"type":"tool/call","seq":2,"time":7,"data":{"name":"x","arguments":"user/message"}}\n'
    )
    assert name_records(str(path), "none") == [
        ("user/message", 0, '{"content":"café"}'),
        ("session/title", 1, '{"title":"T"}'),
    ]


def test_a_log_the_bytes_cannot_answer_goes_to_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\n'
    path.write_bytes(head + b'{"type":"user/message","seq":0,"data":{"content":"\\ud800"}}\n')
    assert name_records(str(path), "none") is None  # a lone surrogate: the reader's WTF-8 semantics
    path.write_bytes(head + b'["user/message"]\n')
    assert name_records(str(path), "none") is None
    assert name_records(str(tmp_path / "missing.jsonl"), "none") is None


@settings(max_examples=60, deadline=None)
@given(
    title=st.one_of(st.none(), st.text(max_size=30)),
    prompts=st.lists(st.tuples(st.sampled_from(["user", "subagent", None]), st.text(max_size=30)), max_size=4),
)
def test_names_agree_on_generated_logs(
    tmp_path_factory: pytest.TempPathFactory, title: str | None, prompts: list
) -> None:  # type: ignore[type-arg]
    root = tmp_path_factory.mktemp("names")
    folder = root / "--p--" / "s1"
    folder.mkdir(parents=True)
    lines = [{"type": "session", "version": 0, "id": "s1", "createdAt": 1, "delegationDepth": 0}]
    for seq, (kind, text) in enumerate(prompts):
        data: dict[str, object] = {"content": [{"type": "text", "text": text}]}
        if kind is not None:
            data["source"] = {"kind": kind}
        lines.append({"type": "user/message", "seq": seq, "time": seq, "data": data})
    if title is not None:
        lines.append({"type": "session/title", "seq": len(prompts), "time": 9, "data": {"title": title}})
    (folder / "session.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    corpus = read_corpus(root, compression="none", cache=False)
    with pytest.MonkeyPatch.context() as patch:
        fast, reference, _ = _both(corpus, patch)
    assert fast.equals(reference)


def test_a_title_with_a_lone_surrogate_is_named_with_a_replacement_character(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fuzz tier's crash: a name holding a lone surrogate could not go into a Polars frame."""
    folder = tmp_path / "--p--" / "s1"
    folder.mkdir(parents=True)
    (folder / "session.jsonl").write_bytes(
        b'{"type":"session","version":0,"id":"s1","createdAt":1,"delegationDepth":0}\n'
        b'{"type":"session/title","seq":0,"time":6,"data":{"title":"bad \\udc00 title"}}\n'
    )
    corpus = read_corpus(tmp_path, compression="none", cache=False)
    fast, reference, _ = _both(corpus, monkeypatch)
    assert fast.equals(reference)
    assert fast["name"].to_list() == ["bad \ufffd title"]
