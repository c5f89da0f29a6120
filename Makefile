# Two commands do all set-up on a fresh machine (each creates .venv and installs first):
#   make main   -- the main job (offline, on ../shared/data)
#   make test   -- the test suite
# Installs take the exact versions in constraints.txt (setup.py declares ranges).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PIP_INSTALL := $(PY) -m pip install -q -c constraints.txt
# The task data: ../shared/data beside the checkout unless ALBERT_TF_DATA_DIR is set.
export ALBERT_TF_DATA_DIR ?= $(abspath ../shared/data)
# Test workers (pytest-xdist): 2 on this project's 2-core machines.
TEST_WORKERS ?= 2

.PHONY: main test fuzz install wheel wheel-smoke constraints build-file

$(STAMP): setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PIP_INSTALL) -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist=loadfile tests

# The property-based fuzz tests with 20x CI's examples, new random examples each run.
fuzz: $(STAMP)
	ALBERT_TF_FUZZ_PROFILE=fuzz $(PY) -m pytest -q -n $(TEST_WORKERS) --dist=loadfile tests/test_fuzz_*.py

main: $(STAMP)
	$(VENV)/bin/albert-tf-run --experiment=run_quick

# The wheel users install (configs and the albert_tflite tools inside), in dist/.
wheel: $(STAMP)
	rm -rf dist && $(PY) -m pip wheel -q --no-deps --no-build-isolation -w dist .

# Installs dist/*.whl into a fresh venv and uses it from an empty directory.
wheel-smoke: wheel
	bash tools/wheel_smoke.sh dist/albert_tf-*.whl

# Rewrites constraints.txt from the current .venv (after changing a dependency).
constraints:
	( head -3 constraints.txt; $(PY) -m pip freeze --exclude-editable | grep -v '^albert' \
	  | sed 's/+cpu$$//' ) > constraints.txt.tmp && mv constraints.txt.tmp constraints.txt

build-file:
	$(PY) tools/update_build.py
