# Two commands do all set-up on a fresh machine with only Python: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SHARED ?= ../shared
CONFORMANCE := $(SHARED)/conformance
N ?= 10000
FUZZ_WORKERS ?= 2

.PHONY: compile demo test test-sweep lint docs conformance browser-deps bench bench-report bench-findings bench-browser screenshots fuzz fuzz-outputs fuzz-archives fuzz-prices fuzz-sql fuzz-otlp fuzz-options test-compare-coverage test-cross-view test-scale test-interop screenshots-phoenix clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[dev,scale]"
	touch $(VENV)/.core $@

# The interop tier's extra: a real Phoenix server (arize-phoenix) and its client.
$(VENV)/.interop: pyproject.toml $(VENV)/.dev
	$(BIN)/pip install -q -e ".[dev,scale,interop]"
	touch $@

# Byte-compile the package once: an environment with PYTHONDONTWRITEBYTECODE set would otherwise compile
# every module again in each process (about 0.6 s a CLI start; the tests start thousands of processes).
compile: $(BIN)/python
	@$(BIN)/python -m compileall -q subagent_catalog tests >/dev/null

demo: $(VENV)/.core compile
	$(BIN)/subagent-catalog summary data/sample
	mkdir -p out
	$(BIN)/subagent-catalog report data/sample -o out/report.html

browser-deps:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict subagent_catalog

docs: $(VENV)/.dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

conformance: $(VENV)/.core
	@if [ -d "$(CONFORMANCE)" ]; then \
	  $(BIN)/python $(CONFORMANCE)/check.py --cmd '$(BIN)/subagent-catalog conformance {root} --compression {compression} --all-parents' && \
	  $(BIN)/python $(CONFORMANCE)/check.py --cases-dir $(CONFORMANCE)/trace-cases \
	    --cmd '$(BIN)/subagent-catalog conformance {root} --compression {compression} --semantics {semantics} --all-parents'; \
	else echo "no $(CONFORMANCE): conformance cases skipped"; fi

# A crashed worker is never replaced (--max-worker-restart=0): the run fails at once and names the test.
# Four workers on two cores: the tests wait on child processes, servers and Chromium part of the time
# (two workers left about an eighth of the CPU idle, three still some); the browser modules share one worker
# (conftest). The checks before it run side by side (mypy and mkdocs each use one core).
test: $(VENV)/.dev browser-deps
	$(MAKE) -j3 lint docs compile
	$(BIN)/pytest -n 4 -q --max-worker-restart=0
	$(MAKE) conformance

bench: $(VENV)/.dev
	$(BIN)/python benchmarks/run.py

bench-report: $(VENV)/.dev
	$(BIN)/python benchmarks/report_scale.py --cli --sessions 5000 --rounds 3

bench-findings: $(VENV)/.dev
	$(BIN)/python benchmarks/findings_scale.py --sessions 20000 --rounds 3

bench-browser: $(VENV)/.dev browser-deps
	$(BIN)/python benchmarks/bench_browser.py
	$(BIN)/python benchmarks/bench_timeline.py

# Every screenshot in docs/img: the report's (headless Chromium) and the widgets' (JupyterLab).
screenshots: $(VENV)/.dev browser-deps
	$(BIN)/python docs/img/make_report_screenshots.py --out docs/img
	$(BIN)/python docs/img/make_screenshots.py

# The Phoenix trace screenshots (docs/img/phoenix-*.png): needs the interop extra.
screenshots-phoenix: $(VENV)/.interop browser-deps
	$(BIN)/python docs/img/make_phoenix_screenshots.py --out docs/img

fuzz: $(VENV)/.dev
	$(BIN)/python -m tests.fuzz.runner --cases $(N) --workers $(FUZZ_WORKERS)

fuzz-outputs: $(VENV)/.dev
	$(BIN)/python -m tests.fuzz.outputs --cases $(N)
	$(BIN)/python -m tests.fuzz.output_dirs --cases $(N)

fuzz-archives: $(VENV)/.dev
	$(BIN)/python -m tests.fuzz.archives --cases $(N) --long

fuzz-prices: $(VENV)/.dev
	$(BIN)/python -m tests.fuzz.prices --cases $(N)

# Hostile SQL through `sql` (a sandbox: nothing read outside the corpus, nothing written, bounded time and memory).
fuzz-sql: $(VENV)/.dev
	$(BIN)/python -m tests.fuzz.sql --cases $(N)

# `otel --endpoint` against misbehaving collectors on 127.0.0.1 and malformed URLs (bounded wall time).
fuzz-otlp: $(VENV)/.dev
	$(BIN)/python -m tests.fuzz.otlp --cases $(N)

# Hostile numbers and paths for the options of every command (exit 0/1/2 with one Error: line, the corpus untouched).
fuzz-options: $(VENV)/.dev
	$(BIN)/python -m tests.fuzz.options --cases $(N)

# The archive differentials over every conformance corpus (make test runs every non-scenario case and a share of the
# scenario cases: tests.helpers.scenario_share).
test-sweep: $(VENV)/.dev
	SUBAGENT_CATALOG_FULL_SWEEP=1 $(BIN)/pytest -q -n 2 --max-worker-restart=0 tests/test_archive_inputs.py \
	  tests/test_archive_catalog.py tests/test_interop_otel.py tests/test_interop_sql.py tests/test_search_text.py

# compare's long tier: Newcomb's interval holds a known difference of error rates in at least 93 of 100 pairs.
test-compare-coverage: $(VENV)/.dev
	$(BIN)/python -m tests.fuzz.compare_coverage --repetitions 100

# One vocabulary over a generated 5,000-session corpus as well as the sample and a 400-session one (make test runs those two).
test-cross-view: $(VENV)/.dev
	SUBAGENT_CATALOG_CROSS_VIEW_5K=1 $(BIN)/pytest -q -n 0 tests/test_cross_view.py

test-scale: $(VENV)/.dev
	$(BIN)/pytest -q -m scale tests/test_scale.py tests/test_object_store.py

# A real Phoenix server on 127.0.0.1 (offline) receives a generated and a conformance corpus over OTLP/HTTP;
# its stored spans must equal the frames; its UI must show a trace. `make test` runs the fast interop tests
# (OTLP schema, a local collector, SQL) but not this tier.
test-interop: $(VENV)/.interop browser-deps
	$(BIN)/pytest -q -m interop tests/test_interop_phoenix.py

clean:
	rm -rf $(VENV) out report.html tests/artifacts site
