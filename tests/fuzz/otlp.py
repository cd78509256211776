"""The fuzz suite's **OTLP** tier: ``subagent-catalog otel --endpoint`` against misbehaving collectors and bad URLs.

Each case starts one collector on 127.0.0.1 (``tests/fuzz/otlp_server.py``: a proper 200 or 204, a
garbage or unsized body, a partial success, 400/404/500/503, 503 then 200, a 429 asking to wait a
day, redirects, a status line, headers or a body dripped a byte at a time, an endless body, a
reset, a close with no or half a reply, a 100 KiB header line, a thousand headers, no HTTP at all,
no ``accept()``, silence) and points ``otel`` at it through a URL that is well formed (several
paths, ``localhost``, ``[::1]``) or mutated into a malformed one (brackets, ports out of range or
not numbers, spaces, control characters, NUL, non-ASCII, lone surrogates, credentials, fragments,
other schemes, truncation, a 3,000-character host), with a random ``--timeout`` and maybe
``--header`` values HTTP cannot carry. A batch of cases runs in one child interpreter, the CLI
in-process, HOME, TMPDIR and the working directory in a sandbox, and name lookups outside loopback
refused by the harness (nothing reaches the network).

About a third of the cases are **Phoenix cases**: ``otel --endpoint --verify`` (random
``--verify-timeout``) or ``--register-prices`` against the collector acting as a Phoenix
(``PHOENIX_BEHAVIOURS``): it accepts the spans and answers its GraphQL honestly, or, from its first or
second GraphQL request on (before sending or after), lies (a 200 maintenance page, a JSON list, counts
that are text, ``1e400``, negative, 10^30, 5,000 digits, ``NaN``, missing keys, null data, ``errors``
only or malformed, nesting 100,000 deep, bytes that are not UTF-8, model pages that go round), answers
500 or a redirect, drips headers or a body a byte at a time, resets, closes, or sends 64 MiB or an
endless body. Invariants, checked on every case:

* **typed error or delivery**: exit 0, or 1 (2 for a usage error) with exactly one ``Error:``
  line, the last, and no traceback or ``internal error``; exit 0 only from a collector that
  accepts, and then it holds exactly the export's spans (a URL a mutation left usable may
  deliver); a collector that accepts, reached through a well-formed URL with good headers, always
  gets them (exit 0);
* **a Phoenix case**: exit 0 exactly when the Phoenix is honest (and then it holds every span),
  else exit 1 whose ``Error:`` line names the endpoint (``Phoenix at http://127.0.0.1:PORT/graphql``);
* **bounded wall time**: a case ends within its ``--timeout`` plus its ``--retry-for`` (the same
  number; one request: the sample is one trace batch) plus ``SLACK_S``; a Phoenix case within four
  ``--timeout`` (a question before sending, the send and its retries, a question after) plus its
  ``--verify-timeout`` plus ``SLACK_S``;
* **nothing written anywhere**: the corpus, HOME, TMPDIR and the working directory unchanged;
* **bounded memory**: the child's peak RSS under ``RSS_BOUND_MB``.

``python -m tests.fuzz.otlp --cases N [--seed S]`` (``make fuzz-otlp N=...``) runs the long tier;
``tests/test_fuzz_otlp.py`` runs a seeded sample in ``make test``.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz import case_seeds, tier_parser
from tests.fuzz.interop_common import SANDBOX_DIRS, Sandbox, hwm_kb, line_violations, run_child, run_cli
from tests.fuzz.otlp_server import BEHAVIOURS, PHOENIX_BEHAVIOURS

RSS_BOUND_MB = 600
SLACK_S = 15.0
"""Room over ``--timeout`` for a case: the CLI reads the corpus and builds its spans first (a loaded machine)."""
BATCH = 25
ACCEPTING = ("ok", "ok-204", "ok-garbage-body", "ok-no-length", "retry-then-ok")
PATHS = ("", "/", "/v1/traces", "/custom?x=1", "/a%20b/v1/traces")
PHOENIX_SHARE = 0.35
"""The share of drawn cases that are Phoenix cases (``--verify`` or ``--register-prices``)."""
NOISE = ("[", "]", "@", "#", " ", "\n", "\t", "\x00", "\x1b", "é", ":", "%", "\udcff", "\u202e", "//", "?", "\\")


def _url(rng: random.Random) -> tuple[str, bool]:
    """A URL template (``{port}`` for the collector's port) and whether it is meant to be well formed."""
    host = rng.choice(["127.0.0.1", "127.0.0.1", "localhost", "[::1]"])
    scheme = "http"
    url = f"{scheme}://{host}:{{port}}{rng.choice(PATHS)}"
    if rng.random() < 0.55:
        return url, True
    kind = rng.randrange(8)
    if kind == 0:
        at = rng.randrange(len(url) + 1)
        return url[:at] + rng.choice(NOISE) + url[at:], False
    if kind == 1:
        return f"http://{host}:{rng.choice(['99999', '-1', 'abc', '', '0', '1e3', '٣'])}/", False
    if kind == 2:
        return rng.choice(["ftp", "HTTP:", "", "http:/", "file", "javascript"]) + url.removeprefix("http"), False
    if kind == 3:
        return url[: rng.randrange(1, 12)], False
    if kind == 4:
        return f"http://{'a' * rng.choice([64, 3000])}:{{port}}/", False
    if kind == 5:
        return rng.choice(["http://[::1", "http://[::1]x:{port}", "http://[zz::1]:{port}", "http://]:{port}"]), False
    if kind == 6:
        odd = ["http://user:pw@127.0.0.1:{port}", "http://127.0.0.1:{port}/#f", "http://127.0.0.1.:{port}"]
        return rng.choice(odd), False
    return " " + url, False


def _headers(rng: random.Random) -> tuple[list[str], bool]:
    """``--header`` arguments and whether HTTP can carry them all."""
    choice = rng.randrange(6)
    if choice < 3:
        return [], True
    if choice == 3:
        return ["--header", "x-api-key=k1", "--header", "authorization=Bearer t"], True
    bad = rng.choice(["a b=c", "x=a\rb", "x=\u2603", "=v", "x=\x00", "novalue", "x:y=z"])
    return ["--header", bad], False


@dataclass
class Case:
    """One collector, one URL, one timeout."""

    seed: int
    behaviour: str
    url: str
    well_formed: bool
    headers: list[str]
    headers_ok: bool
    timeout: float
    args: list[str] = field(default_factory=list)
    phoenix: str | None = None  # a Phoenix case: "verify" or "register"
    lie_from: int = 1  # ... its Phoenix misbehaves from this GraphQL request on
    verify_timeout: float = 1.0

    def honest(self) -> bool:
        """A Phoenix case whose Phoenix answers every question it is asked properly."""
        loops = self.behaviour == "graphql-pages-loop" and self.phoenix == "register" and self.lie_from == 1
        return self.behaviour == "phoenix" or (self.behaviour == "graphql-pages-loop" and not loops)

    def bound(self) -> float:
        """The seconds the case may take."""
        if self.phoenix is None:
            return 2 * self.timeout + SLACK_S  # --retry-for is --timeout too
        return 4 * self.timeout + (self.verify_timeout if self.phoenix == "verify" else 0) + SLACK_S


def make_case(
    seed: int, behaviour: str | None = None, timeout: float | None = None, phoenix: str | None = None
) -> Case:
    """Draw case ``seed`` (its collector's behaviour, its timeout, and for a Phoenix case its mode drawn unless given).

    A behaviour of ``PHOENIX_BEHAVIOURS`` makes a Phoenix case (``phoenix``: ``verify`` or ``register``).
    """
    rng = random.Random(seed)
    chosen = behaviour or rng.choice(BEHAVIOURS)
    url, well_formed = _url(rng)
    headers, headers_ok = _headers(rng)
    drawn = rng.choice([0.5, 1.0, 2.0])
    timeout = timeout or drawn
    case = Case(seed, chosen, url, well_formed, headers, headers_ok, timeout)
    if chosen in PHOENIX_BEHAVIOURS or (behaviour is None and rng.random() < PHOENIX_SHARE):
        case.behaviour = chosen if chosen in PHOENIX_BEHAVIOURS else rng.choice(PHOENIX_BEHAVIOURS)
        case.phoenix = phoenix or rng.choice(["verify", "register"])
        case.url = f"http://{rng.choice(['127.0.0.1', 'localhost'])}:{{port}}{rng.choice(PATHS)}"
        case.well_formed = True
        case.lie_from = rng.choice([1, 2])
        case.verify_timeout = rng.choice([1.0, 2.0])
    return case


def _loopback_only() -> None:
    """Refuse name lookups outside loopback in this process (the harness's fence: nothing reaches the network)."""
    import ipaddress
    import socket

    lookup = socket.getaddrinfo

    def fenced(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        try:
            allowed = ipaddress.ip_address(name.split("%")[0]).is_loopback
        except ValueError:
            allowed = name.lower().rstrip(".") == "localhost"
        if not allowed:
            raise socket.gaierror(socket.EAI_NONAME, f"fuzz harness: no lookup of {name!r} outside loopback")
        return lookup(host, *args, **kwargs)

    socket.getaddrinfo = fenced


def child_main() -> None:
    """Run the cases in argv[1] (JSON): a collector each, the CLI in-process; one JSON line per case."""
    import sys

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from tests.fuzz.otlp_server import Collector

    _loopback_only()
    import subagent_catalog.interop.phoenix_check as phoenix_check

    phoenix_check.PRICE_RELOAD_S = 0.0  # the fake Phoenix has no model table to reload
    spec = json.loads(Path(sys.argv[1]).read_text())
    box = Sandbox(**{name: Path(value) for name, value in spec["box"].items()}, states=spec["states"])
    for case in spec["cases"]:
        print(json.dumps({"seed": case["seed"], "started": True}), flush=True)
        with Collector(case["behaviour"], lie_from=case.get("lie_from", 1)) as server:
            url = case["url"].replace("{port}", str(server.port))
            args = ["otel", str(box.corpus), "--endpoint", url, "--timeout", str(case["timeout"]), "-q"]
            args += ["--retry-for", str(case["timeout"])]  # a busy collector waited for as long as an attempt
            args += case["headers"]
            if case.get("phoenix") == "verify":
                args += ["--verify", "--verify-timeout", str(case["verify_timeout"])]
            elif case.get("phoenix") == "register":
                args += ["--register-prices"]
            run = run_cli(args, str(box.scratch))
            spans = 0
            for received in list(server.accepted):
                try:
                    request = ExportTraceServiceRequest.FromString(received.body)
                except Exception:  # a body that is not OTLP counts as none
                    continue
                spans += sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
        changed = box.changed()
        box.states = box.snapshot()
        result = {"seed": case["seed"], "run": run, "changed": changed, "hwm_kb": hwm_kb(), "url": url}
        print(json.dumps({**result, "received_spans": spans, "requests": len(server.received)}), flush=True)


@dataclass
class Outcome:
    """One case: what ran and which invariants it broke."""

    seed: int
    behaviour: str
    url: str
    violations: list[str]
    code: Any = None
    seconds: float | None = None
    hwm_mb: float | None = None
    stderr: str = ""


def expected_spans(corpus: Path) -> int:
    """The spans ``otel`` exports from the corpus (what an accepting collector must hold)."""
    from subagent_catalog import read_corpus, to_otlp

    return len(to_otlp(read_corpus(corpus, cache=False)))


def check(case: Case, result: dict[str, Any] | None, spans: int) -> list[str]:
    """The invariants a case broke (``None``: the child never reported it)."""
    if result is None:
        return ["no result (a hang or a crash of the child)"]
    run = result["run"]
    violations = line_violations(run) + list(result["changed"])
    if run["seconds"] > case.bound():
        violations.append(f"took {run['seconds']} s with --timeout and --retry-for {case.timeout}")
    if result["hwm_kb"] / 1024 > RSS_BOUND_MB:
        violations.append(f"peak RSS {result['hwm_kb'] / 1024:.0f} MB > {RSS_BOUND_MB} MB")
    if case.phoenix is not None:
        return violations + _phoenix_violations(case, result, spans)
    deliverable = case.behaviour in ACCEPTING and case.headers_ok
    if run["code"] == 0 and case.behaviour not in ACCEPTING:
        violations.append("exit 0 from a collector that does not accept")
    elif run["code"] == 0 and result["received_spans"] != spans:  # "sent" is only said of what arrived
        violations.append(f"exit 0 but the collector holds {result['received_spans']} of {spans} spans")
    elif run["code"] != 0 and deliverable and case.well_formed and "[::1]" not in case.url:
        violations.append(f"a deliverable case failed: {run['stderr'][-200:]!r}")  # (the collector is IPv4 only)
    return violations


def _phoenix_violations(case: Case, result: dict[str, Any], spans: int) -> list[str]:
    """A Phoenix case: exit 0 exactly from an honest Phoenix (holding every span), else one line naming it."""
    run = result["run"]
    if not case.headers_ok:
        return [] if run["code"] in (1, 2) else [f"exit {run['code']} with a header HTTP cannot carry"]
    if case.honest():
        if run["code"] != 0:
            return [f"an honest Phoenix case failed: {run['stderr'][-200:]!r}"]
        if result["received_spans"] != spans:
            return [f"exit 0 but Phoenix holds {result['received_spans']} of {spans} spans"]
        return []
    if run["code"] != 1:
        return [f"exit {run['code']} from a Phoenix that {case.behaviour.removeprefix('graphql-')}s"]
    errors = [line for line in run["stderr"].splitlines() if line.startswith("Error:")]
    port = result["url"].split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    if not errors or not re.match(rf"Error: Phoenix at http://[^ ]+:{port}/", errors[-1]):
        return [f"the error does not name the endpoint: {errors[-1:]!r}"]
    return []


def run_cases(
    seeds: list[int],
    box: Sandbox,
    *,
    behaviours: list[str] | None = None,
    timeout: float | None = None,
    batch: int = BATCH,
    phoenix: list[str] | None = None,
) -> list[Outcome]:
    """Run the cases a batch at a time, each batch in one child; an outcome per case.

    ``behaviours`` gives each seed its collector (else drawn); ``timeout`` every case's ``--timeout``;
    ``phoenix`` each Phoenix case's mode (``verify`` or ``register``; else drawn).
    """
    spans = expected_spans(box.corpus)
    outcomes: list[Outcome] = []
    chosen: list[str | None] = list(behaviours) if behaviours else [None] * len(seeds)
    for start in range(0, len(seeds), batch):
        modes: list[str | None] = list(phoenix) if phoenix else [None] * len(seeds)
        drawn = zip(seeds[start : start + batch], chosen[start:], modes[start:], strict=False)
        cases = [make_case(seed, kind, timeout, mode) for seed, kind, mode in drawn]
        spec = {
            "box": {name: str(getattr(box, name)) for name in SANDBOX_DIRS},
            "states": box.snapshot(),
            "cases": [
                {
                    "seed": c.seed,
                    "behaviour": c.behaviour,
                    "url": c.url,
                    "timeout": c.timeout,
                    "headers": c.headers,
                    "phoenix": c.phoenix,
                    "lie_from": c.lie_from,
                    "verify_timeout": c.verify_timeout,
                }
                for c in cases
            ],
        }
        bound = sum(case.bound() for case in cases) + 60
        results, tail = run_child("tests.fuzz.otlp", spec, box, timeout=bound)
        finished = {r["seed"]: r for r in results if "run" in r}
        for case in cases:
            result = finished.get(case.seed)
            violations = check(case, result, spans)
            if result is None:
                violations.append(tail[-300:])
            run = result["run"] if result is not None else {}
            outcomes.append(
                Outcome(
                    case.seed,
                    case.behaviour,
                    case.url,
                    violations,
                    run.get("code"),
                    run.get("seconds"),
                    None if result is None else round(result["hwm_kb"] / 1024),
                    str(run.get("stderr", ""))[-300:],
                )
            )
    return outcomes


def main(argv: list[str] | None = None) -> int:
    """Run ``--cases`` seeded cases; print a summary; exit 1 on any violation."""
    parser = tier_parser("tests.fuzz.otlp", __doc__)
    args = parser.parse_args(argv)
    seeds = case_seeds(args)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-otlp-") as work:
        outcomes = run_cases(seeds, Sandbox.make(Path(work) / "box"))
    bad = [o for o in outcomes if o.violations]
    summary = {
        "cases": len(outcomes),
        "seconds": round(time.perf_counter() - started, 1),
        "max_rss_mb": max((o.hwm_mb or 0 for o in outcomes), default=0),
        "rss_bound_mb": RSS_BOUND_MB,
        "max_case_s": max((o.seconds or 0 for o in outcomes), default=0),
        "by_behaviour": Counter(o.behaviour for o in outcomes),
        "phoenix_cases": sum(o.behaviour in PHOENIX_BEHAVIOURS for o in outcomes),
        "by_exit": Counter(str(o.code) for o in outcomes),
        "violations": [vars(o) for o in bad],
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "fuzz-otlp.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "violations"}, default=str))
    for outcome in bad:
        print(f"seed {outcome.seed} {outcome.behaviour} {outcome.url!r}: {outcome.violations} {outcome.stderr!r}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
