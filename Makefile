# The commands of the README's quick start: `make demo`, `make install` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Where `make install` links freshline when neither pipx nor uv is here: the folder both
# of them put their commands in.
BINDIR ?= $(HOME)/.local/bin
PIPX := $(shell command -v pipx 2>/dev/null)
UV := $(shell command -v uv 2>/dev/null)

.PHONY: demo install test lint bench clean postgres clients

# Bytecode is written as modules are first imported, whatever the caller's environment:
# with PYTHONDONTWRITEBYTECODE set, each of the suite's processes (four test workers, a few
# hundred freshline commands and servers) compiled pytest, hypothesis, the SDKs and every
# test module from source again (a test worker's start-up: 23 s of CPU where 11 s do).
unexport PYTHONDONTWRITEBYTECODE

# pip 25 and later write a console script that imports no `re` (an older one's `re.sub` of
# argv[0] loads re, enum and functools: two thirds of an empty Python's start-up, paid by
# every hook call and `status`); uv and pipx write the same. Installs go through it.
PIP := $(BIN)/python -m pip install -q 'pip>=26,<27' && $(BIN)/pip install -q

$(BIN)/pip:
	$(PYTHON) -m venv $(VENV)

$(BIN)/freshline: pyproject.toml Makefile | $(BIN)/pip
	$(PIP) -e .
	$(BIN)/python -m freshline.compiled
	touch $@

# One install with the test extras (not the plain one first: a second resolve costs time).
$(VENV)/.test-installed: pyproject.toml Makefile | $(BIN)/pip
	$(PIP) --no-compile -e '.[test]'
	$(BIN)/python -m freshline.compiled
	touch $(BIN)/freshline $@

demo: $(BIN)/freshline
	$(BIN)/freshline demo

# `freshline` on PATH: pipx or uv give it an environment of its own that follows this
# checkout (editable); without either, a link to .venv's in $(BINDIR). Then it says
# whether the shell finds it, and if not, what to add to PATH.
ifneq ($(PIPX),)
install:
	$(PIPX) install --force --editable .
else ifneq ($(UV),)
install:
	$(UV) tool install --force --editable .
else
install: $(BIN)/freshline
	mkdir -p $(BINDIR)
	ln -sfn $(abspath $(BIN)/freshline) $(BINDIR)/freshline
endif
	@found=$$(command -v freshline) && echo "freshline is on your PATH: $$found" || \
		echo "freshline is installed in $(BINDIR), which is not on your PATH: add" \
		"'export PATH=\"$(BINDIR):\$$PATH\"' to your shell's profile"

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
