# Two commands do all set-up on a fresh machine (each creates .venv and installs first):
#   make main   -- the main job (offline, on ../shared/data)
#   make test   -- the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: main test install build-file

$(STAMP): setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q tests

main: $(STAMP)
	$(VENV)/bin/albert-tf-run --experiment=run_quick

build-file:
	$(PY) tools/update_build.py
