# The two commands of the README's quick start: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/freshline: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test-installed: $(BIN)/freshline
	$(BIN)/pip install -q -e '.[test]'
	touch $@

demo: $(BIN)/freshline
	$(BIN)/freshline demo

test: $(VENV)/.test-installed
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(BIN)/freshline
	for f in bench/*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build src/*.egg-info
