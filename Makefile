# Two commands do all set-up on a fresh machine (each creates .venv and installs first):
#   make main   -- the main job (offline, on ../shared/data)
#   make test   -- the test suite's gate (CI; `make test-all`: every test, docs/setup.md)
# Installs take the exact versions in constraints.txt (setup.py declares ranges).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# --no-compile: no .pyc for the whole of TensorFlow, PyTorch and transformers at install
# (~25 CPU-s per venv); Python compiles the modules a run imports, once, on first import.
PIP_INSTALL := $(PY) -m pip install -q --no-compile -c constraints.txt
# "Once" needs Python to write what it compiles: with PYTHONDONTWRITEBYTECODE set (some CI
# images set it) every process that imports TensorFlow compiles it again from source
# (measured: 13 CPU-s per import instead of 3.7). The targets run without it.
unexport PYTHONDONTWRITEBYTECODE
# The task data: ../shared/data beside the checkout unless ALBERT_TF_DATA_DIR is set.
export ALBERT_TF_DATA_DIR ?= $(abspath ../shared/data)
# Test workers (pytest-xdist): 2 on this project's 2-core machines.
TEST_WORKERS ?= 2
# The mobile SDKs' Python builds (TFLite Task Library, MediaPipe Tasks): their own venv,
# because tflite-support 0.4.4 needs protobuf<4 (tflite/sdk-requirements.txt).
SDK_VENV ?= .venv-sdk
SDK_STAMP := $(SDK_VENV)/.installed
export ALBERT_TF_SDK_PYTHON ?= $(abspath $(SDK_VENV))/bin/python

.PHONY: main test test-all test-cpu fuzz install sdk wheel tour tour-run tour-venv constraints build-file bazel figures

# litert-converter, LiteRT's converter (the TFLite export's path once TensorFlow drops
# tf.lite: docs/export.md), goes into its own directory, not site-packages: its xdsl==0.28.0
# pin needs typing_extensions<4.13, which TensorFlow's stack cannot share, and the MLIR
# bindings the export uses need none of its dependencies; outside site-packages, `pip check`
# stays clean. The LiteRT test puts $(LITERT_DIR) on sys.path (docs/export.md).
LITERT_DIR := $(VENV)/litert-converter
$(STAMP): setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PIP_INSTALL) -e '.[test]'
	$(PIP_INSTALL) --no-deps --target $(LITERT_DIR) litert-converter
	touch $(STAMP)

install: $(STAMP)

$(SDK_STAMP): tflite/sdk-requirements.txt tools/system_deps.sh
	bash tools/system_deps.sh
	$(PYTHON) -m venv $(SDK_VENV)
	$(SDK_VENV)/bin/python -m pip install -q --upgrade pip
	$(SDK_VENV)/bin/python -m pip install -q --no-compile -r tflite/sdk-requirements.txt
	touch $(SDK_STAMP)

sdk: $(SDK_STAMP)

# The tests in two tiers (docs/setup.md#the-test-tiers): `make test`, CI's gate, runs every
# test not marked `slow` (tests/conftest.py); `make test-all` runs all of them, in .venv-sdk
# too (the mobile SDKs' tests are all in the slow tier).
test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist=loadfile -m "not slow" tests

test-all: $(STAMP) $(SDK_STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist=loadfile tests

# Every test with CPU accounting: CPU seconds per test file, the workers' own and their
# subprocesses' (tests/conftest.py, ALBERT_TF_TEST_CPU), each tier's totals and the unmarked
# tests over the gate's per-test limit; rewrites tests/file_costs.json, the file order of
# both tiers (tools/test_costs.py).
test-cpu: $(STAMP) $(SDK_STAMP)
	rm -rf .test-cpu
	ALBERT_TF_TEST_CPU=$(abspath .test-cpu) $(PY) -m pytest -q -n $(TEST_WORKERS) \
		--dist=loadfile tests
	$(PY) tools/test_costs.py --cpu .test-cpu

# The property-based fuzz tests with 20x CI's examples, new random examples each run.
fuzz: $(STAMP)
	ALBERT_TF_FUZZ_PROFILE=fuzz $(PY) -m pytest -q -n $(TEST_WORKERS) --dist=loadfile tests/test_fuzz_*.py

main: $(STAMP)
	$(VENV)/bin/albert-tf-run --experiment=run_quick

# The wheel users install (configs and the albert_tflite tools inside), in dist/ (build/
# removed too: setuptools would ship a module deleted since the last build from there).
# pip builds it as a user's `pip wheel .` does, in an isolated build environment (setuptools
# from the package index), so no .venv is needed: .ci/run installs the tour's venv from it
# while .venv installs.
wheel:
	rm -rf dist build && $(PYTHON) -m pip wheel -q --no-deps -w dist .

# The README's five-minute tour as a test (tools/tour.py): the wheel installed into a fresh
# venv with the tour's extras, then every command of the tour's bash blocks, as written,
# offline, in an empty directory; each command's wall time, the total, the CPU.
# TOUR_FLAGS=--newest (`.ci/run full`): then the newest-in-range smoke (docs/setup.md);
# TOUR_FLAGS=--help-examples (`.ci/run full`): then every example of every console script's
# --help, in a copy of the tour's directory (~13 min on 2 cores; docs/setup.md);
# TOUR_FLAGS=--venv=DIR: the tour in DIR's venv, installed there first unless it exists.
# `make tour` builds the wheel first; `make tour-run` tours the wheel already in dist/
# (.ci/run, which builds it once).
TOUR_FLAGS ?=
tour: wheel
	$(MAKE) --no-print-directory tour-run

tour-run:
	$(PYTHON) tools/tour.py --python=$(PYTHON) $(TOUR_FLAGS) dist/albert_tf-*.whl

# The tour's venv alone, into TOUR_VENV, from the wheel in dist/ (after `make wheel`;
# tools/tour.py --install-only): .ci/run installs it beside .venv.
tour-venv:
	$(PYTHON) tools/tour.py --python=$(PYTHON) --venv=$(TOUR_VENV) --install-only \
		dist/albert_tf-*.whl

# Rewrites constraints.txt from the current .venv (after changing a dependency).
constraints:
	( head -3 constraints.txt; $(PY) -m pip freeze --exclude-editable | grep -v '^albert' \
	  | sed 's/+cpu$$//' ) > constraints.txt.tmp && mv constraints.txt.tmp constraints.txt

build-file:
	$(PY) tools/update_build.py

# Bazel (Debian's bazel-bootstrap 4.2.3, installed by tools/bazel_deps.sh), offline: builds
# every target of BUILD (generated by `make build-file`) and runs its py_test targets, each
# test file its own pytest under Bazel with .venv's Python, the gate's tests (not marked
# slow; BAZEL_TEST_ARGS= for every test): WORKSPACE, .bazelrc, bazel/, third_party/
# (docs/setup.md#bazel-make-bazel). `.ci/run full` runs it.
BAZEL ?= bazel
BAZEL_TARGETS ?= //:all
BAZEL_TEST_ARGS ?= --test_arg=-m --test_arg="not slow"
bazel: $(STAMP)
	bash tools/bazel_deps.sh
	$(BAZEL) build //:all
	$(BAZEL) test $(BAZEL_TEST_ARGS) $(BAZEL_TARGETS)
	$(BAZEL) shutdown

# The measured figures of docs/ by name (studies/figures.py): `make figures` lists them
# (NAME, rough minutes on 2 cores, the docs table each regenerates); `make figures NAME=x
# [ARGS="--flag=value ..."]` runs one (FIGURE=x works too; NAME only from the command line,
# not from an environment that happens to set it).
FIGURE_NAME = $(if $(filter command line,$(origin NAME)),$(NAME),$(FIGURE))
ARGS ?=
figures: $(STAMP)
	$(PY) studies/figures.py $(if $(FIGURE_NAME),$(FIGURE_NAME) $(ARGS),--list)
