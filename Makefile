# The two commands of the README's quick start: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean postgres clients

# Bytecode is written as modules are first imported, whatever the caller's environment:
# with PYTHONDONTWRITEBYTECODE set, each of the suite's processes (four test workers, a few
# hundred freshline commands and servers) compiled pytest, hypothesis, the SDKs and every
# test module from source again (a test worker's start-up: 23 s of CPU where 11 s do).
unexport PYTHONDONTWRITEBYTECODE

$(BIN)/pip:
	$(PYTHON) -m venv $(VENV)

$(BIN)/freshline: pyproject.toml | $(BIN)/pip
	$(BIN)/pip install -q -e .
	$(BIN)/python -m freshline.compiled
	touch $@

# One install with the test extras (not the plain one first: a second resolve costs time).
$(VENV)/.test-installed: pyproject.toml | $(BIN)/pip
	$(BIN)/pip install -q --no-compile -e '.[test]'
	$(BIN)/python -m freshline.compiled
	touch $(BIN)/freshline $@

demo: $(BIN)/freshline
	$(BIN)/freshline demo

# The suite starts a PostgreSQL server of its own: install Debian's package if absent.
postgres:
	@test -n "$(wildcard /usr/lib/postgresql/*/bin/initdb)" || \
		{ apt-get update -q && apt-get install -y -q postgresql-15; }

# The suite's real clients (npm, into .cache/real-clients; tests/integration/clients.py,
# standard library only): installed beside pip, which keeps one core busy for a minute.
clients:
	$(PYTHON) -m tests.integration.clients

# mypy takes one core for about 40 s: it checks beside the tests, and both must pass.
# Beside it first, one collection writes the bytecode every test worker then reads (each
# worker collects every test file: four compiling the same modules at once would each
# pay for it). Four workers on two cores, one test file each at a time, the slowest files
# first (tests/conftest.py): many tests wait on a subprocess, a server or a real client, so
# three kept the cores about 85 % busy; the fourth takes up the rest, beside mypy.
test: postgres
	$(MAKE) --no-print-directory -j2 $(VENV)/.test-installed clients
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & typing=$$!; \
	$(BIN)/python -m pytest -q -p no:cacheprovider --collect-only > /dev/null; \
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 4 --dist loadfile --no-loadscope-reorder; \
	tested=$$?; wait $$typing; typed=$$?; cat $(VENV)/mypy.log; \
	test $$tested -eq 0 && test $$typed -eq 0

bench: $(BIN)/freshline postgres
	for f in bench/*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build src/*.egg-info
