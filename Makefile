# The two commands of the README: `make demo` runs the main job, `make test` runs every test.
# Each creates .venv and installs the workspace into it on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ADAPTERS := adapters/openai/pyproject.toml adapters/claude/pyproject.toml adapters/langgraph/pyproject.toml adapters/pydantic-ai/pyproject.toml
EDITABLES := -e "core[server,postgres]" -e adapters/openai -e adapters/claude -e "adapters/langgraph[langchain,postgres]" -e adapters/pydantic-ai

.PHONY: demo test lint typecheck unit bench install clean

$(STAMP): requirements-dev.txt core/pyproject.toml $(ADAPTERS)
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "crossgate needs Python 3.11 or newer"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	$(BIN)/python -m pip install -q --no-build-isolation $(EDITABLES)
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py $(if $(AUTO),--auto,) $(if $(PORT),--port $(PORT),)

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP)
	@echo "== summary: the four ratios of the performance goals" && $(BIN)/python -m tests.benchmarks.summary
	@for f in tests/benchmarks/bench_*.py; do m=$$(basename $$f .py); echo "== $$m"; \
		$(BIN)/python -m tests.benchmarks.$$m || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
