# azsd developer commands. `make test` and `make run` are the two that matter.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test lint format unasync run bench bench-quick soak docs clean

install: $(STAMP)

# (setuptools tells every editable install that folders named like the package may shadow it: said
# once here, not on every install.)
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Two workers (the machines have 2 cores; most tests wait on daemons and files), then the tests of
# the machine's one PostgreSQL server apart (one restarts it). `JOBS=0 make test` runs one process.
JOBS ?= 2
test: install
	$(BIN)/python -m pytest -n $(JOBS) -m "not postgres"
	$(BIN)/python -m pytest -m postgres

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m tests.import_cycles

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The docs site from docs/ into site/ (MkDocs, strict: a warning fails it), after writing the CLI
# reference (docs/cli.md) and the man page (docs/azs.1) from azs's argument parser.
docs: install
	$(BIN)/python -m azsd_client.commands.reference
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The blocking client (client/azsd_client/client.py) is generated from the asyncio one (aio.py);
# tests/test_unasync.py fails while it is out of date.
unasync: install
	$(BIN)/python client/unasync.py

run: install
	$(BIN)/azsd run

bench: install
	$(BIN)/python -m bench

bench-quick: install
	$(BIN)/python -m bench --quick

# The reliability suite at full length: 50 kill -9s, 50 clients x 1000 requests, long fuzzing.
soak: install
	AZSD_SOAK=1 $(BIN)/python -m pytest tests/reliability -p no:randomly --timeout 3600

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build site *.egg-info
