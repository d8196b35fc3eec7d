# The two commands of the README: `make demo` runs the main job, `make test` runs every test.
# Each creates .venv and installs the workspace into it on first use; where node is installed, `make install`
# (and so `make demo` and `make test`) also installs the npm workspace of the TypeScript agents from its lock file and builds it.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ADAPTERS := adapters/openai/pyproject.toml adapters/claude/pyproject.toml adapters/langgraph/pyproject.toml adapters/pydantic-ai/pyproject.toml adapters/agent-framework/pyproject.toml adapters/google-adk/pyproject.toml
EDITABLES := -e "core[server,postgres,otel]" -e adapters/openai -e adapters/claude -e "adapters/langgraph[langchain,postgres]" -e adapters/pydantic-ai -e adapters/agent-framework -e adapters/google-adk

# Strands (strands-agents) needs other opentelemetry and mcp versions than Google ADK: it gets a venv of its own
# with crossgate core, its adapter and the test tools only (one app per env), and its tests run there.
STRANDS       := .venv-strands
STRANDS_STAMP := $(STRANDS)/.installed
STRANDS_TESTS := tests/adapters/strands "tests/conformance/test_policy_parity.py::test_what_runs_is_what_the_policy_allows_in_process[strands]"

# CrewAI needs older pydantic, openai and mcp than the workspace: its venv holds only CrewAI and the AAP client,
# for the recipe's agent (examples/crewai); tests/crewai runs that agent in it from the main venv's pytest.
CREWAI       := .venv-crewai
CREWAI_STAMP := $(CREWAI)/.installed

TS       := adapters/typescript
TS_STAMP := $(TS)/node_modules/.package-lock.json
TS_NODE  := $(TS)/node_modules/.node-version
# Every recipe (the demo's agent, the tests that start node) runs the node that `make typescript` installs.
export PATH := $(CURDIR)/.tools/node22/bin:$(PATH)

.PHONY: demo test lint typecheck unit unit-strands crewai bench install typescript clean

$(STAMP): requirements-dev.txt core/pyproject.toml $(ADAPTERS)
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "crossgate needs Python 3.11 or newer"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	$(BIN)/python -m pip install -q --no-build-isolation $(EDITABLES)
	touch $(STAMP)

$(STRANDS_STAMP): core/pyproject.toml adapters/strands/pyproject.toml
	test -x $(STRANDS)/bin/python || $(PYTHON) -m venv $(STRANDS)
	$(STRANDS)/bin/python -m pip install -q --upgrade pip
	$(STRANDS)/bin/python -m pip install -q hatchling editables pytest pytest-asyncio pytest-timeout pytest-xdist hypothesis mypy
	$(STRANDS)/bin/python -m pip install -q --no-build-isolation -e "core[server]" -e adapters/strands
	touch $(STRANDS_STAMP)

$(CREWAI_STAMP): examples/crewai/requirements.txt
	test -x $(CREWAI)/bin/python || $(PYTHON) -m venv $(CREWAI)
	$(CREWAI)/bin/python -m pip install -q --upgrade pip
	$(CREWAI)/bin/python -m pip install -q -r examples/crewai/requirements.txt
	touch $(CREWAI_STAMP)

crewai: $(CREWAI_STAMP)

install: $(STAMP) typescript

# The npm workspace (adapters/typescript), on the Node.js 22 that .ci/node22 installs into .tools/node22:
# `npm ci` when its lock file is newer than the install or the install was made by another node (native
# modules are built for one), then an incremental build of the demo's agent and of @crossgate/langchain
# (the policy parity test runs it). Without npm this says so and goes on: the demo skips its TypeScript agent.
typescript:
	@if command -v npm >/dev/null 2>&1; then \
		node22=$$(.ci/node22) || exit 1; eval "$$node22"; \
		if [ ! -f $(TS_STAMP) ] || [ $(TS)/package-lock.json -nt $(TS_STAMP) ] \
			|| [ "$$(cat $(TS_NODE) 2>/dev/null)" != "$$(node --version)" ]; then \
			(cd $(TS) && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
			node --version >$(TS_NODE); fi; \
		(cd $(TS) && npx tsc -b packages/examples packages/langchain) || exit 1; \
	else echo "make: npm is not installed, so the TypeScript agents (adapters/typescript) are not installed"; fi

demo: $(STAMP) typescript
	$(BIN)/python examples/demo.py $(if $(AUTO),--auto,) $(if $(PORT),--port $(PORT),)

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP) $(STRANDS_STAMP)
	$(BIN)/mypy
	$(STRANDS)/bin/mypy adapters/strands/crossgate_strands

# pytest-xdist: one worker per core (JOBS=1 runs every test in one process); idle workers steal queued tests.
JOBS ?= auto
unit: $(STAMP) typescript unit-strands $(CREWAI_STAMP)
	$(BIN)/pytest -n $(JOBS) --dist worksteal

# The Strands tests in their own venv (the main run skips them). No psycopg there: the contract's PostgreSQL
# variants run in the main venv, for the other adapters.
unit-strands: $(STRANDS_STAMP)
	env -u CROSSGATE_TEST_POSTGRES_URL $(STRANDS)/bin/pytest -n $(JOBS) --dist worksteal $(STRANDS_TESTS)

test: lint typecheck unit

bench: $(STAMP)
	@echo "== summary: the four ratios of the performance goals" && $(BIN)/python -m tests.benchmarks.summary
	@for f in tests/benchmarks/bench_*.py; do m=$$(basename $$f .py); echo "== $$m"; \
		$(BIN)/python -m tests.benchmarks.$$m || exit 1; done

clean:
	rm -rf $(VENV) $(STRANDS) $(CREWAI) .pytest_cache .mypy_cache .ruff_cache .tools $(TS)/node_modules $(TS)/packages/*/dist $(TS)/packages/*/dist-test
