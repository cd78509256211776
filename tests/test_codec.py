"""The typed facts records: exact round trips over every corpus, JSON-ish properties, strict refusal."""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagent_catalog.read.discover import discover
from subagent_catalog.read.logread import DescriptorRecord, LogFacts, ProblemRecord, analyse_log, read_log_file
from subagent_catalog.read.paths import Compression
from subagent_catalog.store import codec
from subagent_catalog.store.codec import FactsRecordError, dump_facts, load_facts
from subagent_catalog.synth.generate import generate
from tests.fuzz.mutations import CONFORMANCE, FuzzConfig, make_case

HEAD = {"version": 0, "id": "s", "createdAt": 1, "delegationDepth": 0}


def same(a: Any, b: Any) -> bool:
    """Equal with types, float signs, NaN-free floats bit for bit and dict key order: what == cannot see."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            stack.extend(zip(x.values(), y.values(), strict=True))
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, float):
            if x != y or math.copysign(1.0, x) != math.copysign(1.0, y):
                return False
        elif hasattr(x, "__dataclass_fields__"):
            stack.extend((getattr(x, f.name), getattr(y, f.name)) for f in fields(x))
        elif x != y:
            return False
    return True


def test_same_sees_what_equality_does_not() -> None:
    assert same({"a": 1, "b": [1.5]}, {"a": 1, "b": [1.5]})
    assert not same({"a": 0.0}, {"a": -0.0}) and {"a": 0.0} == {"a": -0.0}
    assert not same([1], [1.0]) and not same([True], [1])
    assert not same({"a": 1, "b": 2}, {"b": 2, "a": 1})


def _round_trips(root: Path | str, compression: Compression) -> tuple[int, list[str]]:
    count, wrong = 0, []
    for file in discover(root, compression).files:
        if not file.regular:
            continue
        facts = read_log_file(file.source, compression)
        blob = dump_facts(facts)
        count += 1
        stripped = replace(facts, events=None, events_ipc=None)
        if blob is None or not same(load_facts(blob, size=facts.size), stripped):
            wrong.append(file.path)
    return count, wrong


@pytest.mark.skipif(not CONFORMANCE.parent.is_dir(), reason="../shared/conformance is not present")
def test_every_conformance_log_round_trips_exactly() -> None:
    cases = sorted(path for path in CONFORMANCE.parent.glob("*/*") if (path / "corpus").is_dir())
    assert len(cases) > 90
    total = 0
    for case in cases:
        meta = case / "meta.json"
        compression = json.loads(meta.read_text())["compression"] if meta.exists() else "none"
        count, wrong = _round_trips(case / "corpus", compression)
        assert wrong == [], case.name
        total += count
    assert total > 2000


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_every_synthesized_log_round_trips_exactly(tmp_path: Path, compression: Compression) -> None:
    generate(tmp_path / "r", sessions=200, seed=5, compression=compression, damaged_fraction=0.3)
    count, wrong = _round_trips(tmp_path / "r", compression)
    assert count == 200 and wrong == []


def test_every_fuzzed_log_round_trips_exactly() -> None:
    """Hostile corpora: deep nesting, lone surrogates, odd numbers, huge lines (the tree and WTF-8 records)."""
    total, kinds = 0, set()
    original = codec._tree

    def spy(value: Any) -> Any:
        kinds.add("tree")
        return original(value)

    codec._tree = spy  # type: ignore[assignment]
    try:
        for seed in range(60):
            case = make_case(seed, FuzzConfig())
            try:
                count, wrong = _round_trips(case.root, case.compression)
            finally:
                for path in case.chmodded:
                    os.chmod(path, 0o700)
                shutil.rmtree(case.workdir, ignore_errors=True)
            assert wrong == [], case.describe()
            total += count
    finally:
        codec._tree = original  # type: ignore[assignment]
    assert total > 500 and kinds == {"tree"}


# --------------------------------------------------------------------------- JSON-ish values

_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**60), max_value=10**60)
    | st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**4299, -(10**4299), 0])
    | st.floats(allow_nan=False)
    | st.sampled_from([-0.0, math.inf, -math.inf, 5e-324, 1.0])
    | _TEXT
)
_JSON = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=25
)


def _header(cwd: Any, parent: Any, ident: str) -> dict[str, Any]:
    return {"version": 0, "id": ident, "createdAt": 1, "cwd": cwd, "parentSession": parent, "delegationDepth": 0}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cwd=_JSON, parent=_JSON, ident=_TEXT, label=_TEXT)
def test_json_values_round_trip_exactly(cwd: Any, parent: Any, ident: str, label: str) -> None:
    facts = LogFacts(
        size=10, list_meta=_header(cwd, parent, ident), verdict="ok", read_meta=_header(parent, cwd, ident)
    )
    facts.event_count = 1
    facts.identity_mode, facts.identity_label, facts.identity_seq = "continuable", label, 0
    facts.descriptors.append(
        DescriptorRecord(0, None, "{}", "valid", None, "2", "continuable", "p", label, None, None, label, [label], [])
    )
    facts.problems.append(ProblemRecord("k", label, line=1, offset=0, severity="info"))
    blob = dump_facts(facts)
    assert blob is not None
    assert same(load_facts(blob, size=10), facts)


def test_deep_nesting_is_stored_without_recursion() -> None:
    deep: Any = "leaf"
    for _ in range(sys.getrecursionlimit() * 20):
        deep = [{"k": deep}]
    facts = LogFacts(size=1, list_meta=_header(deep, None, "x"), list_skip=None, read_cause="header-missing")
    facts.read_message = "m"
    blob = dump_facts(facts)
    assert blob is not None  # the pickles could not hold this
    back = load_facts(blob)
    assert back.list_meta is not None
    value = back.list_meta["cwd"]
    for _ in range(sys.getrecursionlimit() * 20):
        value = value[0]["k"]
    assert value == "leaf"


@pytest.mark.parametrize(
    "meta",
    [
        _header(math.nan, None, "s"),  # JSON has no NaN
        _header({1: "x"}, None, "s"),  # keys are strings
        _header((1, 2), None, "s"),  # not a JSON value
        _header(10**5000, None, "s"),  # longer than the parser reads
        {"id": "s", "version": 0, "createdAt": 1, "delegationDepth": 0},  # key order is fromHeaderLine's
        {**HEAD, "createdAt": -1},
        {**HEAD, "createdAt": -0.0},
        {"version": 0, "id": "s", "createdAt": 1, "origin": "parent", "delegationDepth": 0},
        {"version": 0, "id": 7, "createdAt": 1, "delegationDepth": 0},
    ],
)
def test_headers_the_reader_cannot_produce_are_not_stored(meta: dict[str, Any]) -> None:
    facts = LogFacts(size=1, list_meta=meta, read_cause="header-missing", read_message="m")
    assert dump_facts(facts) is None
    assert dump_facts(replace(facts, list_meta=HEAD)) is not None


def test_a_record_over_the_size_limit_is_not_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = analyse_log(b"junk\n" * 3, "none")
    facts.problems = [ProblemRecord("unparsable-line", "x" * 1000, line=2)] * 20
    monkeypatch.setattr(codec, "MAX_FACTS_BYTES", 10_000)
    assert dump_facts(facts) is None
    facts.problems = facts.problems[:5]
    blob = dump_facts(facts)
    assert blob is not None and len(blob) < 10_000
    with pytest.raises(FactsRecordError, match="larger than 10000 bytes"):
        load_facts(blob + b"\0" * 10_000)


# --------------------------------------------------------------------------- strict refusal


def _wire(**changes: Any) -> bytes:
    """A record as a plain list, one field changed, encoded as dump_facts would."""
    facts = analyse_log(b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\n', "none")
    blob = dump_facts(facts)
    assert blob is not None
    fields_ = msgspec.msgpack.decode(blob[5:])
    names = list(codec._FACTS_FIELDS)
    for name, value in changes.items():
        if name == "extra":
            fields_.append(value)
        elif name == "drop":
            del fields_[names.index(value)]
        else:
            fields_[names.index(name)] = value
    return blob[:5] + msgspec.msgpack.encode(fields_)


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"verdict": 5}, "Expected `str`"),
        ({"verdict": "skipped"}, "Invalid enum value 'skipped'"),
        ({"verdict": "great"}, "Invalid enum value"),
        ({"verdict": "failed"}, "failed read without a cause"),
        ({"read_cause": "forged"}, "with a failure cause"),
        ({"size": -1}, "size is not an integer >= 0"),
        ({"size": True}, "Expected `int`"),
        ({"event_count": -3}, "event_count"),
        ({"read_line": 1.5}, "Expected `int | null`"),
        ({"list_skip": "also skipped"}, "exactly one list"),
        ({"identity_cause": "made-up"}, "Invalid enum value"),
        ({"first_time": 5}, "only one of first_time"),
        ({"drop": "closers"}, "at least length"),
        ({"extra": "unknown"}, "at most length"),
        ({"descriptors": [[0, None, "{}", "valid", None] + [None] * 9]}, "more descriptors than events"),
        ({"event_count": 1, "descriptors": [[0, None, "{}", "valid", "a reason"] + [None] * 9]}, "with reason"),
        ({"problems": [["k", "m", 0, None, "error"]]}, "problem line"),
        ({"problems": [["k", "m", None, None, "fatal"]]}, "Invalid enum value 'fatal'"),
        ({"list_meta": msgspec.Raw(msgspec.msgpack.encode({"version": 0}))}, "keys are not a session header"),
    ],
)
def test_forged_records_are_refused(changes: dict[str, Any], why: str) -> None:
    with pytest.raises(FactsRecordError, match=why):
        load_facts(_wire(**changes))


def test_a_pickle_of_facts_is_refused_before_it_is_read() -> None:
    facts = analyse_log(b"junk\n", "none")
    with pytest.raises(FactsRecordError, match="no SCF3 header"):
        load_facts(pickle.dumps(facts))
    with pytest.raises(FactsRecordError, match="bytes, not str"):
        load_facts("SCF3u")  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_damaged_records_raise_only_the_typed_error(data: st.DataObject) -> None:
    head = {"version": 0, "id": "\ud800", "createdAt": 1, "cwd": [[{"a": 2**70}]], "delegationDepth": 0}
    facts = LogFacts(size=3, list_meta=head, read_cause="header-missing", read_message="m\udc80")
    blob = bytearray(dump_facts(facts) or b"")
    assert blob[:5] == b"SCF3w"
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(5, len(blob) - 1))
        blob[index] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(5, len(blob)))
    try:
        back = load_facts(bytes(blob[:cut]))
    except FactsRecordError:
        return
    codec.check_facts(back)  # anything accepted passes the checks
