"""A runtime whose export or timing crashes costs its own rows, not the benchmark run.

Every peer is exported (albert_tf/benchmark/peer_worker.py) and every runtime timed
(albert_tf/benchmark/worker.py) in a child process; the driver, which holds TensorFlow, never
loads PyTorch or transformers. The crashes here are real ones: a ``sitecustomize`` on
PYTHONPATH (which every child inherits) makes executing ``transformers`` read address 0, so
each process that imports it dies of SIGSEGV, as the driver did when a PyTorch CUDA wheel's
Triton was loaded after TensorFlow (docs/setup.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import albert_tf
from albert_tf.benchmark.artifacts import ArtifactBuilder
from albert_tf.benchmark.suite import RuntimeFailed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")

_SEGFAULT_ON_TRANSFORMERS = '''
import ctypes
import importlib.abc
import importlib.machinery
import sys


class _Segfault(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        ctypes.string_at(0)          # strlen(NULL): SIGSEGV


class _CrashingTransformers(importlib.abc.MetaPathFinder):
    """`transformers` is found (find_spec works) but crashes the process that imports it."""

    def find_spec(self, name, path=None, target=None):
        if name == "transformers":
            return importlib.machinery.ModuleSpec(name, _Segfault())
        return None


sys.meta_path.insert(0, _CrashingTransformers())
'''


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    """A random-weight albert_tiny model directory."""
    from albert_tf.backend import keras
    keras.utils.set_random_seed(0)
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    path = str(tmp_path_factory.mktemp("crash") / "albert_tiny")
    albert_tf.save_model_dir(albert_tf.build_encoder(config), path, vocab_file=VOCAB)
    return path


@pytest.mark.slow
def test_a_crashing_peer_loses_its_rows_and_the_run_goes_on(model_dir, tmp_path):
    """``onnx`` dies while exporting (its child imports transformers), ``torch_int8`` while
    timing (its worker does); ``tflite_none`` is timed and reported, each crash is named in
    one line with its signal, and the command exits 1 after writing the report."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_SEGFAULT_ON_TRANSFORMERS)
    out = tmp_path / "bench"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.benchmark", "--models=",
         f"--model_dirs={model_dir}", "--runtimes=onnx,tflite_none,torch_int8",
         "--shapes=1x16", "--min_seconds=0.1", f"--output_dir={out}"],
        capture_output=True, text=True, cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=str(site)))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    name = os.path.basename(model_dir)
    logs = out / "artifacts" / name / "logs"
    crashes = [s for s in result.stdout.splitlines() if "FAILED, its rows are left out" in s]
    assert crashes == [
        f"  {name} onnx: FAILED, its rows are left out: export killed by SIGSEGV (signal 11) "
        f"(stderr: {logs / 'onnx.export.log'})",
        f"  {name} torch_int8: FAILED, its rows are left out: timing killed by SIGSEGV "
        f"(signal 11) (stderr: {logs / 'torch_int8.timing.log'})"]
    for log in ("onnx.export.log", "torch_int8.timing.log"):   # faulthandler's stack
        text = (logs / log).read_text()
        assert "Fatal Python error: Segmentation fault" in text and "exec_module" in text, text
    with open(out / "results.json", encoding="utf-8") as f:
        report = json.load(f)
    assert [(m["runtime"], m["batch"], m["seq"]) for m in report["measurements"]] == [
        ("tflite_none", 1, 16)]
    assert report["meta"]["failed"] == {
        "onnx": f"{name}: export killed by SIGSEGV (signal 11)",
        "torch_int8": f"{name}: timing killed by SIGSEGV (signal 11)"}
    assert "failed" in (out / "report.md").read_text()
    summary = result.stdout.splitlines()[-2:]
    assert [s.split(" (")[0] for s in summary] == ["FAILED: onnx", "FAILED: torch_int8"]
    assert "export killed by SIGSEGV (signal 11)" in summary[0], summary


@pytest.mark.slow
def test_peers_are_built_in_a_process_without_tensorflow(model_dir, tmp_path, data_dir):
    """The driver exports the Hugging Face layout; the peer's child does the rest (here
    the eager ONNX export and ONNX Runtime's optimizer) without importing TensorFlow, and
    prints the builder's lines before its JSON."""
    builder = ArtifactBuilder(model_dir, str(tmp_path / "work"), data_dir, echo=lambda s: None)
    builder.hf_dir()
    command = [sys.executable, "-m", "albert_tf.benchmark.peer_worker", "--runtime=onnx_opt",
               f"--model_dir={model_dir}", f"--work_dir={builder.work_dir}", "--shapes=1x16"]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    *lines, last = result.stdout.rstrip().splitlines()
    report = json.loads(last)
    assert report == {"runtime": "onnx_opt", "worker_runtime": "onnx",
                      "artifact": builder.path("model_opt.onnx"), "imported_tensorflow": False}
    assert os.path.isfile(report["artifact"])
    assert [s.split(":")[0] for s in lines] == [
        f"  exporting {builder.path('model_eager.onnx')}",
        f"  optimizing {builder.path('model_opt.onnx')}", "  onnx_opt fusions"]
    again = subprocess.run(command + ["--fusions_shown"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.strip().splitlines() == [last]   # built already, counts shown


def test_a_failed_child_is_described_in_one_line():
    """The signal by name (SIGKILL: what the out-of-memory killer sends), or the exit
    status with the last line the child printed on stderr."""
    killed = subprocess.run([sys.executable, "-c",
                             "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert RuntimeFailed("timing", killed.returncode, "").reason == \
        "timing killed by SIGKILL (signal 9, as the out-of-memory killer does)"
    raised = subprocess.run([sys.executable, "-c", "raise ValueError('no such shape')"],
                            capture_output=True, text=True)
    failure = RuntimeFailed("export", raised.returncode, raised.stderr)
    assert failure.reason == "export exited with status 1: ValueError: no such shape"
    assert "Traceback" in str(failure)   # the whole stderr stays with the exception
