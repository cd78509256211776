"""Reader rules (SPEC sections 2 and 7), each by name, in both encodings where they apply."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from subagent_catalog import CorpusRootError, read_corpus
from subagent_catalog.errors import CatalogError
from subagent_catalog.read.logread import analyse_log
from subagent_catalog.read.paths import PathIdentityError, encode_segment, project_key
from subagent_catalog.read.zstdframes import compress_frame
from tests.helpers import (
    ENCODINGS,
    EventLog,
    base_tree,
    descriptor,
    dumps,
    header,
    healthy,
    line,
    raw_log,
    tree_hash,
    write_raw,
    write_session,
)

CHILD = header("c-x", created_at=3, parent="P", subagent=True)


def child_lines(session_id: str = "c-x", label: str = "x") -> list[bytes]:
    return [line(e) for e in healthy(session_id, label)]


def read_child(tmp_path: Path, data: bytes, compression: str) -> dict:
    base_tree_without_cx(tmp_path, compression)
    write_raw(tmp_path, CHILD, data, compression)  # type: ignore[arg-type]
    corpus = read_corpus(tmp_path, compression=compression)  # type: ignore[arg-type]
    rows = corpus.sessions.filter(pl.col("session_id") == "c-x")
    assert rows.height == 1, corpus.sessions
    return rows.row(0, named=True)


def base_tree_without_cx(root: Path, compression: str) -> None:
    parent = EventLog("P")
    parent.turn_start()
    parent.turn_end()
    write_session(root, header("P", created_at=1), parent.events, compression)  # type: ignore[arg-type]


# --- identity of paths -------------------------------------------------------------------------


def test_encode_segment_escapes_unsafe_code_units_and_dots() -> None:
    assert encode_segment("a-b_c.d") == "a-b_c.d"
    assert encode_segment("a b/~") == "a~0020b~002F~007E"
    assert encode_segment(".") == "~002E" and encode_segment("..") == "~002E~002E"
    assert encode_segment("\U0001f600") == "~D83D~DE00"
    with pytest.raises(PathIdentityError):
        encode_segment("")


def test_project_key_collapses_separators_and_bounds_length() -> None:
    assert project_key("/home/dev//x") == "--home-dev-x--"
    assert project_key("C:\\Users\\zoë") == "--C-Users-zo~00EB--"
    assert project_key("///") == "--root--"
    assert len(project_key("/" + "a" * 400)) == 251 + 4


# --- healthy reads -----------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ENCODINGS)
def test_baseline_tree_reads_ok(tmp_path: Path, compression: str) -> None:
    base_tree(tmp_path, compression)  # type: ignore[arg-type]
    corpus = read_corpus(tmp_path, compression=compression)  # type: ignore[arg-type]
    assert corpus.listing_error is None
    assert corpus.sessions["verdict"].to_list() == ["ok"] * 4
    assert set(corpus.sessions["session_id"]) == {"P", "c-ok", "c-x", "g-below-x"}
    assert corpus.sessions.filter(pl.col("session_id") == "c-x")["identity_label"].item() == "x"


@pytest.mark.parametrize("compression", ENCODINGS)
def test_auto_compression_detects_the_encoding(tmp_path: Path, compression: str) -> None:
    base_tree(tmp_path, compression)  # type: ignore[arg-type]
    assert read_corpus(tmp_path).compression == compression


@pytest.mark.parametrize("compression", ENCODINGS)
def test_header_only_log_is_accepted(tmp_path: Path, compression: str) -> None:
    row = read_child(tmp_path, raw_log(CHILD, [], compression), compression)  # type: ignore[arg-type]
    assert row["verdict"] == "ok" and row["event_count"] == 0 and row["identity_cause"] == "no-descriptor"


@pytest.mark.parametrize("compression", ENCODINGS)
def test_turn_end_without_start_and_descriptor_outside_turn_are_accepted(tmp_path: Path, compression: str) -> None:
    log = EventLog("c-x")
    log.descriptor(descriptor("one-shot"))
    log.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    row = read_child(tmp_path, raw_log(CHILD, [line(e) for e in log.events], compression), compression)  # type: ignore[arg-type]
    assert row["verdict"] == "ok" and row["identity_mode"] == "one-shot"


def test_crlf_line_endings_are_fine(tmp_path: Path) -> None:
    lines = [raw.replace(b"\n", b"\r\n") for raw in child_lines()]
    row = read_child(tmp_path, raw_log(CHILD, lines, "none"), "none")
    assert row["verdict"] == "ok" and row["identity_label"] == "x"


# --- torn tails and damaged prefixes -----------------------------------------------------------


def test_plain_torn_tail_is_dropped_and_prefix_kept(tmp_path: Path) -> None:
    data = raw_log(CHILD, child_lines(), "none") + b'{"type":"turn/st'
    row = read_child(tmp_path, data, "none")
    assert row["verdict"] == "torn-tail" and row["event_count"] == 4 and row["identity_label"] == "x"


def test_plain_torn_descriptor_line_leaves_no_identity(tmp_path: Path) -> None:
    lines = child_lines()
    data = raw_log(CHILD, lines[:2], "none") + lines[2][:-1]
    row = read_child(tmp_path, data, "none")
    assert row["verdict"] == "torn-tail" and row["identity_cause"] == "no-descriptor"
    assert "dropped" in row["identity_detail"]


def test_zstd_torn_final_frame_recovers_its_complete_records(tmp_path: Path) -> None:
    lines = child_lines()
    last = compress_frame(lines[2] + lines[3] + b'{"type":"x"')
    data = raw_log(CHILD, lines, "zstd", frames=[[0, 1]]) + last[:-2]  # cut inside the checksum
    row = read_child(tmp_path, data, "zstd")
    assert row["verdict"] == "torn-tail"
    assert row["identity_label"] == "x"  # the descriptor came back from the torn frame
    assert row["event_count"] == 4


def test_zstd_cut_inside_the_header_frame_is_skipped_by_list(tmp_path: Path) -> None:
    data = raw_log(CHILD, child_lines(), "zstd")
    row = read_child_skipped(tmp_path, data[:10], "zstd")
    assert row["verdict"] == "skipped" and "header frame" in row["list_skip"]


def read_child_skipped(tmp_path: Path, data: bytes, compression: str) -> dict:
    base_tree_without_cx(tmp_path, compression)
    path = write_raw(tmp_path, CHILD, data, compression)  # type: ignore[arg-type]
    corpus = read_corpus(tmp_path, compression=compression)  # type: ignore[arg-type]
    return corpus.sessions.filter(pl.col("path") == path).row(0, named=True)


def test_plain_unparsable_line_without_later_turn_end_keeps_the_prefix(tmp_path: Path) -> None:
    lines = child_lines()
    data = raw_log(CHILD, [*lines[:3], b"garbage\n"], "none")
    row = read_child(tmp_path, data, "none")
    assert row["verdict"] == "prefix" and row["event_count"] == 3 and row["identity_label"] == "x"


def test_plain_unparsable_line_before_a_later_turn_end_fails_the_read(tmp_path: Path) -> None:
    lines = child_lines()
    data = raw_log(CHILD, [*lines[:3], b"garbage\n", lines[3]], "none")
    row = read_child(tmp_path, data, "none")
    assert row["verdict"] == "failed" and row["read_cause"] == "unparsable-line-before-turn-end"
    assert row["read_line"] == 5


def test_blank_line_counts_as_unparsable(tmp_path: Path) -> None:
    lines = child_lines()
    data = raw_log(CHILD, [*lines[:2], b"\n", *lines[2:]], "none")
    assert read_child(tmp_path, data, "none")["read_cause"] == "unparsable-line-before-turn-end"


def test_seq_gap_before_turn_end_fails_and_without_it_keeps_prefix(tmp_path: Path) -> None:
    events = healthy("c-x")
    events[2] = {**events[2], "seq": 7}
    gap_then_end = raw_log(CHILD, [line(e) for e in events], "none")
    assert read_child(tmp_path, gap_then_end, "none")["read_cause"] == "seq-gap-before-turn-end"


def test_seq_gap_without_later_turn_end_keeps_prefix(tmp_path: Path) -> None:
    events = healthy("c-x")[:3]
    events[2] = {**events[2], "seq": 9}
    row = read_child(tmp_path, raw_log(CHILD, [line(e) for e in events], "none"), "none")
    assert row["verdict"] == "prefix" and row["event_count"] == 2 and row["identity_cause"] == "no-descriptor"


def test_zstd_damage_inside_a_complete_frame_always_fails(tmp_path: Path) -> None:
    lines = child_lines()
    data = raw_log(CHILD, [*lines[:3], b"garbage\n"], "zstd")
    row = read_child(tmp_path, data, "zstd")
    assert row["verdict"] == "failed" and row["read_cause"] == "zstd-torn-record-in-complete-frame"


def test_zstd_line_split_across_two_frames_is_fine(tmp_path: Path) -> None:
    lines = child_lines()
    body = b"".join(lines)
    cut = len(lines[0]) + 10
    data = compress_frame(dumps(CHILD) + b"\n") + compress_frame(body[:cut]) + compress_frame(body[cut:])
    row = read_child(tmp_path, data, "zstd")
    assert row["verdict"] == "ok" and row["event_count"] == 4


def test_zstd_bad_body_checksum_fails_the_read(tmp_path: Path) -> None:
    data = bytearray(raw_log(CHILD, child_lines(), "zstd"))
    data[-1] ^= 0xFF  # last byte: the body frame's checksum
    row = read_child(tmp_path, bytes(data), "zstd")
    assert row["verdict"] == "failed" and row["read_cause"] == "zstd-frame-damage"


def test_zstd_garbage_after_the_last_frame_fails_the_read(tmp_path: Path) -> None:
    data = raw_log(CHILD, child_lines(), "zstd") + b"GARBAGE!"
    assert read_child(tmp_path, data, "zstd")["read_cause"] == "zstd-structure"


def test_null_record_fails_the_read(tmp_path: Path) -> None:
    lines = child_lines()
    row = read_child(tmp_path, raw_log(CHILD, [lines[0], b"null\n"], "none"), "none")
    assert row["read_cause"] == "null-record"


# --- vocabulary, envelope, header -------------------------------------------------------------


@pytest.mark.parametrize("compression", ENCODINGS)
def test_unknown_event_type_fails_unless_ignorable(tmp_path: Path, compression: str) -> None:
    events = healthy("c-x")
    unknown = {"type": "telemetry/x", "seq": 4, "time": 9, "data": {}}
    row = read_child(tmp_path, raw_log(CHILD, [line(e) for e in [*events, unknown]], compression), compression)  # type: ignore[arg-type]
    assert row["verdict"] == "failed" and row["read_cause"] == "unknown-event-type"


@pytest.mark.parametrize("compression", ENCODINGS)
def test_unknown_ignorable_event_type_is_kept(tmp_path: Path, compression: str) -> None:
    events = healthy("c-x")
    unknown = {"type": "telemetry/x", "seq": 4, "time": 9, "data": {}, "ignorable": True}
    row = read_child(tmp_path, raw_log(CHILD, [line(e) for e in [*events, unknown]], compression), compression)  # type: ignore[arg-type]
    assert row["verdict"] == "ok" and row["event_count"] == 5


@pytest.mark.parametrize(
    ("mutation", "cause"),
    [
        ({"extra": 1}, "envelope"),
        ({"time": 1.5}, "envelope"),
        ({"ignorable": False}, "envelope"),
    ],
)
def test_envelope_errors_fail_the_read(tmp_path: Path, mutation: dict, cause: str) -> None:
    events = healthy("c-x")
    events[3] = {**events[3], **mutation}
    row = read_child(tmp_path, raw_log(CHILD, [line(e) for e in events], "none"), "none")
    assert row["verdict"] == "failed" and row["read_cause"] == cause


def test_missing_data_fails_the_read(tmp_path: Path) -> None:
    events = healthy("c-x")
    events[3] = {k: v for k, v in events[3].items() if k != "data"}
    row = read_child(tmp_path, raw_log(CHILD, [line(e) for e in events], "none"), "none")
    assert row["read_cause"] == "envelope"


def test_malformed_user_message_fails_the_read(tmp_path: Path) -> None:
    events = healthy("c-x")
    events[1] = {**events[1], "data": {"content": [], "role": "user", "source": {"kind": "user"}}}
    row = read_child(tmp_path, raw_log(CHILD, [line(e) for e in events], "none"), "none")
    assert row["read_cause"] == "message-shape"


@pytest.mark.parametrize("compression", ENCODINGS)
def test_foreign_format_version_is_a_refusal(tmp_path: Path, compression: str) -> None:
    head = {**CHILD, "version": 1}
    row = read_child(tmp_path, raw_log(head, child_lines(), compression), compression)  # type: ignore[arg-type]
    assert row["listed"] and row["verdict"] == "failed" and row["read_cause"] == "foreign-format-version"


@pytest.mark.parametrize(
    "head",
    [
        {**CHILD, "parentSession": None},
        {**CHILD, "seedLength": "3"},
        {**CHILD, "cwd": "relative/path"},
    ],
    ids=["parent-null", "seed-length-string", "cwd-relative"],
)
def test_header_fields_of_the_wrong_type_fail_the_full_read(tmp_path: Path, head: dict) -> None:
    path = write_raw(tmp_path, head, raw_log(head, child_lines(), "none"), "none")
    corpus = read_corpus(tmp_path, compression="none")
    row = corpus.sessions.filter(pl.col("path") == path).row(0, named=True)
    assert row["listed"] and row["read_cause"] == "header"


# --- list(): skipped headers and whole-listing failures ---------------------------------------


@pytest.mark.parametrize(
    ("first", "why"),
    [
        (b"", "empty file"),
        (b'{"type":"session"', "no complete first line"),
        (b"\xef\xbb\xbf" + dumps(CHILD) + b"\n", "not JSON"),
        (dumps({**CHILD, "type": "other"}) + b"\n", "not a session header"),
        (dumps({**CHILD, "createdAt": -1}) + b"\n", "not a session header"),
        (dumps({**CHILD, "createdAt": 1.5}) + b"\n", "not a session header"),
        (dumps(CHILD).replace(b'"createdAt":3', b'"createdAt":-0') + b"\n", "not a session header"),
        (dumps({k: v for k, v in CHILD.items() if k != "delegationDepth"}) + b"\n", "not a session header"),
        (dumps({**CHILD, "origin": "fork"}) + b"\n", "not a session header"),
        (dumps({**CHILD, "version": "0"}) + b"\n", "not a session header"),
    ],
    ids=[
        "empty",
        "no-newline",
        "bom",
        "type",
        "created-negative",
        "created-float",
        "created-minus-zero",
        "depth-missing",
        "origin",
        "version-string",
    ],
)
def test_list_skips_files_whose_first_line_is_not_a_header(tmp_path: Path, first: bytes, why: str) -> None:
    row = read_child_skipped(tmp_path, first, "none")
    assert row["verdict"] == "skipped" and not row["listed"] and why in row["list_skip"]


def test_list_accepts_integral_float_created_at_and_unknown_keys(tmp_path: Path) -> None:
    head = {**CHILD, "createdAt": 3.0, "extra": {"x": 1}}
    row = read_child(tmp_path, raw_log(head, child_lines(), "none"), "none")
    assert row["listed"] and row["created_at_ms"] == 3


@pytest.mark.parametrize("compression", ENCODINGS)
def test_retired_header_field_fails_the_whole_listing(tmp_path: Path, compression: str) -> None:
    head = {**CHILD, "sandboxMode": "workspace-write"}
    base_tree_without_cx(tmp_path, compression)
    write_raw(tmp_path, head, raw_log(head, child_lines(), compression), compression)  # type: ignore[arg-type]
    corpus = read_corpus(tmp_path, compression=compression)  # type: ignore[arg-type]
    assert "retired" in (corpus.listing_error or "")
    with pytest.raises(CatalogError) as raised:
        corpus.require_listing()
    assert raised.value.code == "PERSISTENCE_LIST_FAILED"


@pytest.mark.parametrize("compression", ENCODINGS)
def test_header_id_that_does_not_name_its_directory_fails_the_listing(tmp_path: Path, compression: str) -> None:
    base_tree_without_cx(tmp_path, compression)
    data = raw_log(CHILD, child_lines(), compression)  # type: ignore[arg-type]
    from subagent_catalog.synth.writer import write_file

    path = write_file(
        tmp_path / "_no-cwd" / "someone-else" / ("session.jsonl" + (".zstd" if compression == "zstd" else "")), data
    )
    corpus = read_corpus(tmp_path, compression=compression)  # type: ignore[arg-type]
    assert corpus.listing_error is not None and "identify" in corpus.listing_error
    assert corpus.listing_error_path == path


def test_non_canonical_directory_spelling_fails_the_listing(tmp_path: Path) -> None:
    head = {**CHILD, "id": "a b"}
    from subagent_catalog.synth.writer import write_file

    write_file(tmp_path / "_no-cwd" / "a b" / "session.jsonl", raw_log(head, [], "none"))
    assert "a~0020b" in (read_corpus(tmp_path, compression="none").listing_error or "")


def test_empty_cwd_cannot_name_a_path(tmp_path: Path) -> None:
    head = {**CHILD, "cwd": ""}
    from subagent_catalog.synth.writer import write_file

    write_file(tmp_path / "_no-cwd" / "c-x" / "session.jsonl", raw_log(head, [], "none"))
    assert "cannot name a storage path" in (read_corpus(tmp_path, compression="none").listing_error or "")


def test_same_id_in_two_project_dirs_fails_the_listing(tmp_path: Path) -> None:
    write_session(tmp_path, header("dup", created_at=1, cwd="/a"), [], "none")
    write_session(tmp_path, header("dup", created_at=1, cwd="/b"), [], "none")
    assert "duplicate" in (read_corpus(tmp_path, compression="none").listing_error or "")


def test_flat_legacy_file_fails_the_listing(tmp_path: Path) -> None:
    base_tree(tmp_path, "none")
    (tmp_path / "_no-cwd" / "old.jsonl").write_bytes(b"{}\n")
    corpus = read_corpus(tmp_path, compression="none")
    assert "flat-file" in (corpus.listing_error or "")
    assert corpus.problems.filter(pl.col("kind") == "legacy-flat-file").height == 1


@pytest.mark.parametrize("compression", ENCODINGS)
def test_a_log_of_the_other_encoding_fails_the_listing(tmp_path: Path, compression: str) -> None:
    base_tree(tmp_path, compression)  # type: ignore[arg-type]
    other = "zstd" if compression == "none" else "none"
    write_session(tmp_path, header("stray", created_at=9), [], other)  # type: ignore[arg-type]
    corpus = read_corpus(tmp_path, compression=compression)  # type: ignore[arg-type]
    assert corpus.listing_error is not None
    assert corpus.problems.filter(pl.col("kind") == "encoding-mismatch").height == 1


def test_zstd_header_frame_with_two_lines_fails_the_listing(tmp_path: Path) -> None:
    base_tree_without_cx(tmp_path, "zstd")
    lines = child_lines()
    data = compress_frame(dumps(CHILD) + b"\n" + lines[0]) + compress_frame(b"".join(lines[1:]))
    write_raw(tmp_path, CHILD, data, "zstd")
    assert "exactly one header line" in (read_corpus(tmp_path, compression="zstd").listing_error or "")


def test_zstd_bad_checksum_on_the_header_frame_fails_the_listing(tmp_path: Path) -> None:
    base_tree_without_cx(tmp_path, "zstd")
    head_frame = bytearray(compress_frame(dumps(CHILD) + b"\n"))
    head_frame[-1] ^= 0xFF
    write_raw(tmp_path, CHILD, bytes(head_frame) + compress_frame(b"".join(child_lines())), "zstd")
    assert "header frame" in (read_corpus(tmp_path, compression="zstd").listing_error or "")


# --- packed rows, closers, frames --------------------------------------------------------------


@pytest.mark.parametrize("compression", ENCODINGS)
def test_packed_chunk_rows_expand_to_assistant_chunk_events(tmp_path: Path, compression: str) -> None:
    log = EventLog("c-x")
    log.turn_start()
    log.descriptor(descriptor("one-shot"))
    log.assistant("hello there", chunks=5)
    log.turn_end()
    write_session(tmp_path, CHILD, log.events, compression, batch=100)  # type: ignore[arg-type]
    if compression == "none":
        assert b'"text-chunks"' in (tmp_path / "_no-cwd" / "c-x" / "session.jsonl").read_bytes()
    corpus = read_corpus(tmp_path, compression=compression, events=True)  # type: ignore[arg-type]
    events = corpus.events.filter(pl.col("session_id") == "c-x")
    assert events["seq"].to_list() == list(range(len(log.events)))
    assert events.filter(pl.col("type") == "assistant/chunk").height == 5


def test_malformed_chunk_row_is_an_unparsable_line(tmp_path: Path) -> None:
    bad = {
        "type": "text-chunks",
        "seq0": 3,
        "time0": 1,
        "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a", "b"]},
    }
    lines = child_lines()
    row = read_child(tmp_path, raw_log(CHILD, [*lines[:3], line(bad), lines[3]], "none"), "none")
    assert row["read_cause"] == "unparsable-line-before-turn-end"


def test_open_turn_gets_upstream_closers(tmp_path: Path) -> None:
    events = healthy("c-x")[:3]  # no turn/end
    facts = analyse_log(raw_log(CHILD, [line(e) for e in events], "none"), "none")
    assert facts.verdict == "ok" and facts.closers == 1 and facts.identity_label == "x"


# --- frames and accounting ----------------------------------------------------------------------


@pytest.mark.parametrize("compression", ENCODINGS)
def test_descriptor_frame_names_the_reason_and_the_seed(tmp_path: Path, compression: str) -> None:
    seed = healthy("src", "ancestor")
    head = header("fork", created_at=5, parent="P", subagent=True, seed_length=len(seed))
    log = EventLog("fork", events=[dict(e) for e in seed], turn=1)
    log.turn_start()
    log.descriptor({"version": 2, "mode": "continuable", "provider": "spawn", "persona": 1, "label": "x"})
    log.turn_end()
    base_tree_without_cx(tmp_path, compression)
    write_session(tmp_path, head, log.events, compression)  # type: ignore[arg-type]
    frame = read_corpus(tmp_path, compression=compression).descriptors.sort("seq")  # type: ignore[arg-type]
    assert frame["in_seed"].to_list() == [True, False]
    assert frame["status"].to_list() == ["valid", "malformed"]
    assert frame["reason"][1] == "persona: Input should be a valid string"
    assert frame["is_last"].to_list() == [False, True]


def test_every_entry_under_the_root_is_accounted_for(tmp_path: Path) -> None:
    base_tree(tmp_path, "none")
    (tmp_path / "README.md").write_text("root file")
    (tmp_path / "_no-cwd" / "c-x" / "notes.txt").write_text("extra")
    (tmp_path / "_no-cwd" / "empty-dir").mkdir()
    (tmp_path / "lost+found").mkdir()
    corpus = read_corpus(tmp_path, compression="none")
    accounted = set(corpus.sessions["path"]) | set(corpus.problems["path"])
    for dirpath, dirnames, filenames in os.walk(tmp_path):
        for name in filenames:
            assert os.path.join(dirpath, name) in accounted, name
        for name in dirnames:
            path = os.path.join(dirpath, name)
            assert path in accounted or any(p.startswith(path + os.sep) for p in accounted), name


def test_reading_never_writes_to_the_corpus(tmp_path: Path) -> None:
    base_tree(tmp_path, "zstd")
    before = tree_hash(tmp_path)
    corpus = read_corpus(tmp_path, compression="zstd", events=True)
    assert corpus.events.height > 0
    assert tree_hash(tmp_path) == before


def test_missing_root_raises_a_typed_error_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(CorpusRootError) as raised:
        read_corpus(tmp_path / "nope")
    assert "does not exist" in str(raised.value) and raised.value.hint


def test_root_that_is_a_file_raises(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(CorpusRootError):
        read_corpus(tmp_path / "f")


def test_serial_and_parallel_reads_give_identical_frames(tmp_path: Path) -> None:
    write_session(tmp_path, header("P", created_at=1), [], "zstd")
    for i in range(80):
        head = header(f"c{i:03d}", created_at=10 + i % 7, parent="P", subagent=True)
        tail = b'{"torn' if i % 9 == 0 else b""
        write_session(tmp_path, head, healthy(f"c{i:03d}", f"label {i}"), "zstd", tail=tail)
    serial = read_corpus(tmp_path, compression="zstd", jobs=1)
    parallel = read_corpus(tmp_path, compression="zstd", jobs=2)
    assert serial.sessions.equals(parallel.sessions)
    assert serial.descriptors.equals(parallel.descriptors)
    assert serial.problems.equals(parallel.problems)


def test_progress_callback_sees_every_file(tmp_path: Path) -> None:
    base_tree(tmp_path, "none")
    seen: list[tuple[int, int]] = []
    read_corpus(tmp_path, compression="none", progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (4, 4) and len(seen) == 4


def test_lone_surrogates_survive_in_json_columns_and_are_replaced_in_text(tmp_path: Path) -> None:
    write_session(tmp_path, header("P", created_at=1), [], "none")
    head = header("c\ud83d", created_at=2, parent="P", subagent=True)
    write_session(tmp_path, head, healthy("c", "lab\udc00el"), "none")
    corpus = read_corpus(tmp_path, compression="none")
    row = corpus.sessions.filter(pl.col("parent_session") == "P").row(0, named=True)
    assert row["session_id"] == "c\ufffd" and "\\ud83d" in row["header_json"]
    assert row["identity_label"] == "lab\ufffdel"


def test_scan_events_is_lazy_and_equals_the_events_frame(tmp_path: Path) -> None:
    from subagent_catalog import scan_events

    base_tree(tmp_path, "zstd")
    corpus = read_corpus(tmp_path, compression="zstd")
    lazy = scan_events(corpus)
    assert lazy.collect().equals(corpus.events)
    assert lazy.head(2).collect().height == 2
    only = scan_events(corpus, sessions=["c-x"]).select("session_id").unique().collect()
    assert only["session_id"].to_list() == ["c-x"]
    descriptors = lazy.filter(pl.col("type") == "subagent/descriptor").collect()
    assert descriptors.height == 3


def test_a_file_that_keeps_changing_is_unavailable_not_half_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subagent_catalog.read import logread

    base_tree(tmp_path, "none")
    ticks = iter(range(1_000_000))
    monkeypatch.setattr(logread._Location, "revision", lambda self: (next(ticks),) * 5)
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    assert set(corpus.sessions["read_cause"]) == {"unstable-file"}
    assert corpus.listing_error is None  # headers still list
    from subagent_catalog import list_children

    assert list_children(corpus, "P")["reason"].to_list() == ["unavailable", "unavailable"]


def _walked(found: object) -> tuple[object, ...]:
    from subagent_catalog.read.discover import Discovery

    assert isinstance(found, Discovery)
    return found.compression, found.files, found.entries, found.project_names


def test_auto_walks_once_and_picks_what_choose_compression_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subagent_catalog.read import discover as walk

    def layout(name: str, sessions: dict[str, list[str]]) -> Path:
        root = tmp_path / name
        for session, files in sessions.items():
            (root / "p" / session).mkdir(parents=True)
            for file in files:
                (root / "p" / session / file).write_bytes(b"")
        root.mkdir(exist_ok=True)
        return root

    roots = [
        layout("empty", {}),
        layout("zstd", {"a": ["session.jsonl.zstd"], "b": ["session.jsonl.zstd"]}),
        layout("plain", {"a": ["session.jsonl"], "b": ["session.jsonl", "notes.txt"]}),
        layout("tie", {"a": ["session.jsonl"], "b": ["session.jsonl.zstd"]}),
        layout("mostly-plain", {"a": ["session.jsonl"], "b": ["session.jsonl"], "c": ["session.jsonl.zstd"]}),
        layout("both-in-one", {"a": ["session.jsonl", "session.jsonl.zstd"], "b": ["session.jsonl"]}),
        layout("no-logs", {"a": [], "b": ["other"]}),
    ]
    conformance = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "cases"
    roots += sorted(p for p in conformance.glob("*") if p.is_dir())[:12]
    walks = []
    original = walk._discover

    def counting(*args: object, **kwargs: object) -> object:
        walks.append(args[1])
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(walk, "_discover", counting)
    for root in roots:
        walks.clear()
        expected = original(root, walk.choose_compression(str(root), "auto"))
        assert _walked(walk.discover(root, "auto")) == _walked(expected), root
        # one walk for a zstd root (the common case), a second one only for a plain-text majority
        assert walks == (["zstd"] if expected.compression == "zstd" else ["zstd", "none"]), root


@pytest.mark.parametrize("compression", ENCODINGS)
def test_a_log_symlinked_inside_the_root_is_read_from_its_target(tmp_path: Path, compression: str) -> None:
    plain = write_session(tmp_path, header("s-plain", created_at=1), healthy("s-plain"), compression)  # type: ignore[arg-type]
    linked = Path(write_session(tmp_path, header("s-link", created_at=2), healthy("s-link"), compression))  # type: ignore[arg-type]
    target = linked.parent / "stored.bin"
    linked.rename(target)
    linked.symlink_to(target.name)
    corpus = read_corpus(tmp_path, cache=False)
    rows = corpus.sessions.sort("list_order")
    assert rows["listed"].to_list() == [True, True]
    sources = dict(zip(rows["session_id"].to_list(), corpus.log_sources(), strict=True))
    assert sources == {"s-plain": plain, "s-link": str(target)}
    # the events of the linked log come from the target, read again for one log or for the whole frame
    order = rows.filter(pl.col("session_id") == "s-link")["list_order"][0]
    assert corpus.log_events(order)["session_id"].unique().to_list() == ["s-link"]
    assert corpus.events.filter(pl.col("session_id") == "s-link").height == len(healthy("s-link"))


def test_a_corpus_without_symlinked_logs_keeps_no_second_copy_of_its_paths(tmp_path: Path) -> None:
    write_session(tmp_path, header("s1", created_at=1), healthy("s1"), "none")
    corpus = read_corpus(tmp_path, cache=False)
    assert corpus._sources is None
    assert corpus.log_sources() == [os.fsdecode(corpus.sessions["path_bytes"][0])]
