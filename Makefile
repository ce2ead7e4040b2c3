# All set-up lives here: `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo test test-slow bench clean

install: $(STAMP)

$(STAMP): pyproject.toml $(wildcard setup.py)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

demo: install
	$(VENV)/bin/workbench demo

test: install
	$(PY) -m pytest -q

test-slow: install
	$(PY) -m pytest -q -m slow

bench: install
	$(VENV)/bin/workbench bench all

clean:
	rm -rf $(VENV) build *.egg-info simulator/*.so simulator/**/*.so
