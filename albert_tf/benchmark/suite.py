"""The benchmark driver: build every artifact once, time each in its own process, report.

Per model (official configs with random weights, or given model directories):

* ``tf``: our SavedModel's ``encode`` signature (float32);
* ``tflite_none`` / ``tflite_dynamic`` / ``tflite_int8``: our TFLite export, one file
  per static ``[batch, seq]``, on ``ai_edge_litert`` with XNNPACK;
* ``torch`` / ``torch_int8``: Hugging Face ``transformers`` on the same weights
  (exported by `albert_tf.interop.converter.export_hf`), float32 and dynamic int8;
* ``onnx`` / ``onnx_int8``: ONNX Runtime on the same weights, float32 and dynamic int8;
* ``onnx_opt`` / ``onnx_opt_int8``: ONNX Runtime on the graph fused by its transformer
  optimizer (Attention, SkipLayerNormalization, FastGelu, ...), float32 and dynamic int8;
* ``openvino`` / ``openvino_bf16`` / ``openvino_int8``: OpenVINO on the same ONNX export
  converted to IR, at float32 (forced), at bfloat16 (OpenVINO's default on CPUs with
  AVX-512 BF16 / AMX: a 16-bit float peer, timed against the fp32 peak) and NNCF
  post-training int8 calibrated on SST-2 train text;
* ``ir_none`` / ``ir_bf16`` / ``ir_int8``: our OpenVINO export (`albert_tf.export.openvino`:
  IR converted from our own graph, ALBERT's shared layer stored once, dynamic
  ``[batch, seq]``), timed by the same worker runners as the peer: at float32 (forced), at
  OpenVINO's default precision (bf16 on AVX-512 BF16 / AMX) and its NNCF int8 export
  (calibrated on SST-2 train text), at OpenVINO's default precision;
* ``ort_none`` / ``ort_int8``: our ONNX export (`albert_tf.export.onnx`: our graph written
  as ONNX Runtime's fused operators, shared layer stored once) on ONNX Runtime, float32 and
  its dynamic int8, timed by the same worker runner as the ``onnx*`` peers.

A runtime whose Python package is not installed (while building its artifact, or loading
it in the worker) is skipped with one line naming the package and the pip command;
`benchmark_model` records it in ``skipped`` for the report.

Every runtime is timed in a child process (`time_in_worker`), and every peer's artifact is
built in one (`build_peer`, `albert_tf.benchmark.peer_worker`): only our model directory's
Hugging Face layout is exported here. So PyTorch, ONNX Runtime and OpenVINO never load into
the driver, which has TensorFlow (PyTorch's CUDA wheels bring Triton, whose LLVM segfaults
when loaded after TensorFlow's: docs/setup.md), and a peer whose export, or any runtime whose
timing, crashes (a segmentation fault, an abort, the out-of-memory killer) loses its own
rows, with one line naming the runtime and the signal or exit status (`RuntimeFailed`), not
the whole run: `benchmark_model` records it in ``failed`` for the report. (Our own exports
are built here: TensorFlow, our code.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import Callable

from albert_tf.benchmark.runtimes import OPENVINO_PRECISIONS
from albert_tf.benchmark.tables import Measurement
from albert_tf.benchmark.worker import MISSING_PACKAGE_EXIT, missing_package
from albert_tf.data.task_data import expected_glue_file
from albert_tf.export.signatures import bucket_lengths

RUNTIMES = ("tf", "tflite_none", "tflite_dynamic", "tflite_int8", "torch", "torch_int8",
            "onnx", "onnx_int8", "onnx_opt", "onnx_opt_int8", "openvino", "openvino_bf16",
            "openvino_int8", "ir_none", "ir_bf16", "ir_int8", "ort_none", "ort_int8")
INT8_RUNTIMES = ("tflite_dynamic", "tflite_int8", "torch_int8", "onnx_int8", "onnx_opt_int8",
                 "openvino_int8", "ir_int8", "ort_int8")
# Our ONNX export (`albert_tf.export.onnx`) -> its quantization; timed by the ONNX worker.
ORT_QUANTIZATIONS = {"ort_none": "none", "ort_int8": "int8"}
# 16-bit float runtimes: timed against the fp32 peak like the fp32 ones (the report says so).
BF16_RUNTIMES = ("openvino_bf16", "ir_bf16")
# Our OpenVINO export -> the worker runner (`albert_tf.benchmark.runtimes.RUNNERS`) timing it.
IR_RUNNERS = {"ir_none": "openvino", "ir_bf16": "openvino_bf16", "ir_int8": "openvino_int8"}
# ... and the precision hint those runners set (None: OpenVINO's default), for the SST-2
# end-to-end runs of the same exports (`albert_tf.benchmark.end_to_end`).
IR_PRECISIONS = {ir: OPENVINO_PRECISIONS[runner] for ir, runner in IR_RUNNERS.items()}
# Runtimes whose peer is exported from the Hugging Face layout of the model directory.
HF_RUNTIMES = ("torch", "torch_int8", "onnx", "onnx_int8", "onnx_opt", "onnx_opt_int8",
               "openvino", "openvino_bf16", "openvino_int8")
# int8 calibration text: SST-2 *train* sentences (tflite_int8, openvino_int8, ir_int8).
SST2_TRAIN = expected_glue_file("", "sst2", "train")   # under the data root
NNCF_CALIBRATION_SENTENCES = 128
# Where a missing package comes from: its pip name and the albert-tf extra that has it.
_PIP_NAMES = {"ai_edge_litert": "ai-edge-litert", "tensorflow_text": "tensorflow-text",
              "openvino_tokenizers": "openvino-tokenizers"}
# Our exports need the extra of their runtime; every peer (`HF_RUNTIMES`: built from the
# Hugging Face PyTorch model) needs the `peers` extra, which holds all of them.
_EXTRAS = {"openvino": "openvino", "nncf": "openvino", "openvino_tokenizers": "openvino",
           "onnx": "onnx", "onnxruntime": "onnx",
           "torch": "peers", "transformers": "peers", "onnxscript": "peers", "sympy": "peers"}
PEERS_EXTRA = "peers"


NOT_INSTALLED = "the Python package '{}' is not installed"
FUSIONS_LINE = "onnx_opt fusions:"   # starts the line of `ArtifactBuilder.onnx_opt`


def pip_fix(package: str, runtime: str | None = None) -> str:
    """``pip install 'albert-tf[openvino]' or pip install nncf``: what installs ``package``
    (for a peer ``runtime``, the ``peers`` extra: it holds every peer's packages)."""
    pip_name = _PIP_NAMES.get(package, package.replace("_", "-"))
    extra = PEERS_EXTRA if runtime in HF_RUNTIMES else _EXTRAS.get(package)
    return (f"pip install 'albert-tf[{extra}]' or pip install {pip_name}" if extra
            else f"pip install {pip_name}")


def peers_note(runtimes, rows: list[Measurement], skipped: dict[str, str]) -> str:
    """One line when peers were asked for and none ran (their packages missing, say): the
    report then has no "ours vs the fastest peer" table, and the line says why and what
    installs them; empty otherwise."""
    asked = [r for r in runtimes if r in HF_RUNTIMES]
    if not asked or any(m.runtime in HF_RUNTIMES for m in rows):
        return ""
    why = "; ".join(f"{r}: {skipped[r]}" for r in asked if r in skipped) or "none timed"
    return (f"no peer ran ({why}), so nothing compares our artifacts with PyTorch, ONNX "
            f"Runtime or OpenVINO on the Hugging Face graph: pip install "
            f"'albert-tf[{PEERS_EXTRA}]' adds every peer")


def require(*packages: str) -> None:
    """Imports ``packages`` now: a missing one raises ModuleNotFoundError before an artifact
    is announced or half built (sympy: the ONNX Runtime optimizer needs it but reports its
    absence as a plain ImportError deep inside)."""
    import importlib
    for package in packages:
        importlib.import_module(package)



def _size_mib(path: str) -> float:
    if os.path.isfile(path):
        return os.path.getsize(path) / 2**20
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files) / 2**20


def random_model_dir(name: str, work_dir: str, seed: int = 0) -> str:
    """An encoder with seeded random weights, saved as a model directory with a vocabulary."""
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf import resources
    path = os.path.join(work_dir, name, "model")
    if os.path.exists(os.path.join(path, "config.json")):
        return path
    from albert_tf.text.vocabulary import pad_sentencepiece
    keras.utils.set_random_seed(seed)
    config = albert_tf.load_config(name)
    # The default vocabulary, padded with unused pieces to the config's vocab_size: the
    # official shapes (30000 / 30522 embedding rows) with a tokenizer that fits them.
    os.makedirs(work_dir, exist_ok=True)
    vocab = pad_sentencepiece(resources.resolve(resources.DEFAULT_VOCAB), config.vocab_size,
                              os.path.join(work_dir, f"{name}_vocab.model"))
    albert_tf.save_model_dir(albert_tf.build_encoder(config), path, vocab_file=vocab)
    return path


class ArtifactBuilder:
    """Builds (once, cached on disk) the artifact each runtime needs for one model."""

    def __init__(self, model_dir: str, work_dir: str, data_dir: str,
                 echo: Callable[[str], None] = print, do_lower_case: bool | None = None):
        """``do_lower_case``: the casing of the model directory's tokenizer for the NNCF
        calibration text (None: read from the model directory, which imports TensorFlow;
        `build_peer` passes it to its TensorFlow-free child)."""
        self.model_dir, self.work_dir, self.data_dir, self.echo = \
            model_dir, work_dir, data_dir, echo
        self.do_lower_case = do_lower_case
        self.fusions_shown = False   # the onnx_opt fusion counts are printed once

    @property
    def config(self):
        """The model directory's config.json, read without TensorFlow (`albert_tf.config`):
        the peers' artifacts are built in processes that never import it."""
        from albert_tf.config import AlbertConfig
        return AlbertConfig.from_json(os.path.join(self.model_dir, "config.json"))

    def path(self, *parts: str) -> str:
        return os.path.join(self.work_dir, *parts)

    def hf_dir(self) -> str:
        """The model directory's Hugging Face layout (TensorFlow: `build_peer` exports it in
        the driver, before the peer's own TensorFlow-free process takes it)."""
        out = self.path("hf")
        if not os.path.exists(out):
            from albert_tf.interop.converter import export_hf
            self.echo(f"  exporting {out}")
            export_hf(self.model_dir, out)
        return out

    def onnx(self, int8: bool) -> str:
        from albert_tf.benchmark.peers import export_onnx, quantize_onnx_dynamic
        float_path = self.path("model.onnx")
        if not os.path.exists(float_path):
            require("torch", "transformers", "onnx")   # before anything is announced
            hf_dir = self.hf_dir()
            self.echo(f"  exporting {float_path}")
            export_onnx(hf_dir, float_path)
        if not int8:
            return float_path
        int8_path = self.path("model_int8.onnx")
        if not os.path.exists(int8_path):
            require("onnxruntime")
            quantize_onnx_dynamic(float_path, int8_path)
        return int8_path

    def onnx_opt(self, int8: bool) -> str:
        """ONNX Runtime's transformer optimizer (`albert_tf.benchmark.peers.optimize_onnx`) on
        a float export, and its dynamic int8; the fused-operator counts are printed once.

        The optimizer's input is the HF model exported with ``attn_implementation="eager"``
        (``model_eager.onnx``, same weights, same outputs as ``model.onnx``): its Attention
        fusion matches the eager MatMul/Div/Add-mask/Softmax/MatMul pattern, not the graph the
        exporter makes of `transformers`' default SDPA attention (MatMul/Mul/Where/IsNaN;
        ``model.onnx``), on which no Attention fused for ALBERT or BERT (transformers 5,
        onnxruntime 1.31). On the eager export (tiny and base configs): BERT fuses every
        layer's Attention and the EmbedLayerNormalization; ALBERT fuses Attention in every
        layer but the first, whose input is the embedding projection (MatMul + Add,
        ``embedding_hidden_mapping_in``) rather than a LayerNorm: the optimizer's QKV pattern
        does not match from that layer's SkipLayerNormalization, so it runs unfused. The
        printed line says how many layers did not fuse.
        """
        from albert_tf.benchmark.peers import (describe_fusions, export_onnx, optimize_onnx,
                                               quantize_onnx_dynamic, read_fusions)
        eager = self.path("model_eager.onnx")
        optimized = self.path("model_opt.onnx")
        config = self.config
        if not os.path.exists(optimized):
            require("onnxruntime", "sympy")
            if not os.path.exists(eager):
                self.echo(f"  exporting {eager}")
                export_onnx(self.hf_dir(), eager, attn_implementation="eager")
            self.echo(f"  optimizing {optimized}")
            optimize_onnx(eager, optimized, config.num_attention_heads, config.hidden_size)
        if not self.fusions_shown:
            self.fusions_shown = True
            self.echo(f"  {FUSIONS_LINE} "
                      + describe_fusions(read_fusions(optimized), config.num_hidden_layers))
        if not int8:
            return optimized
        int8_path = self.path("model_opt_int8.onnx")
        if not os.path.exists(int8_path):
            self.echo(f"  quantizing {int8_path}")
            # per_channel=False (per-tensor weight scales, ONNX Runtime's default, as for
            # onnx_int8): on albert_base, b1 x s128, 2 threads, interleaved in fresh workers,
            # per-tensor ran 20.8-20.9 ms and per-channel 20.6-21.0 ms, i.e. no faster
            # within the noise, so the default stays.
            quantize_onnx_dynamic(optimized, int8_path, per_channel=False, optimized=True)
        return int8_path

    def openvino(self) -> str:
        """OpenVINO IR (``openvino/model.xml`` + ``.bin``) of the float ONNX export."""
        from albert_tf.benchmark.peers import export_openvino
        xml = self.path("openvino", "model.xml")
        if not os.path.exists(xml):
            require("openvino")
            onnx_path = self.onnx(int8=False)
            self.echo(f"  converting {xml}")
            export_openvino(onnx_path, xml)
        return xml

    def sst2_train(self) -> str:
        path = os.path.join(self.data_dir or "", SST2_TRAIN)
        if not self.data_dir or not os.path.isfile(path):
            from albert_tf import resources
            raise FileNotFoundError(f"{path if self.data_dir else '<data_dir>/' + SST2_TRAIN} "
                                    f"not found (int8 calibrates on SST-2 train text): "
                                    f"{resources.data_dir_fix()} to the data directory.")
        return path

    def openvino_int8(self, shapes: list[tuple[int, int]]) -> str:
        """NNCF int8 IR of `openvino`, calibrated on `NNCF_CALIBRATION_SENTENCES` SST-2 train
        sentences packed to the longest sequence length of ``shapes`` (one IR for every
        shape: the runner reshapes it)."""
        from albert_tf.benchmark.peers import calibration_samples, quantize_openvino_int8
        seq = max(s for _, s in shapes)
        xml = self.path("openvino", f"model_int8_s{seq}.xml")
        if not os.path.exists(xml):
            require("openvino", "nncf")
            float_xml = self.openvino()
            samples = calibration_samples(self.model_dir, self.sst2_train(), seq,
                                          NNCF_CALIBRATION_SENTENCES, self.do_lower_case)
            self.echo(f"  quantizing {xml} (NNCF, {len(samples)} SST-2 train sentences, "
                      f"seq {seq})")
            quantize_openvino_int8(float_xml, xml, samples)
        return xml

    def ir(self, quantization: str) -> str:
        """``model.xml`` of our OpenVINO export (`albert_tf.export.openvino`, dynamic
        ``[batch, seq]``: the runner reshapes it per shape) at ``quantization`` (``none``,
        ``int8``: NNCF on `NNCF_CALIBRATION_SENTENCES` SST-2 train sentences, as the peer)."""
        from albert_tf.export.openvino import export_openvino
        out = self.path(f"ir_{quantization}")
        if not os.path.exists(out):
            require("openvino", *(["nncf"] if quantization == "int8" else []))
            train = self.sst2_train() if quantization == "int8" else None
            self.echo(f"  exporting {out}")
            export_openvino(self.model_dir, out, quantization, calibration_file=train,
                            num_calibration=NNCF_CALIBRATION_SENTENCES)
        return os.path.join(out, "model.xml")

    def ort(self, quantization: str) -> str:
        """``model.onnx`` of our ONNX export (`albert_tf.export.onnx`, dynamic
        ``[batch, seq]``) at ``quantization`` (``none``, ``int8``: ONNX Runtime dynamic)."""
        from albert_tf.export.onnx import export_onnx
        out = self.path(f"ort_{quantization}")
        if not os.path.exists(out):
            require("onnx", "onnxruntime")
            self.echo(f"  exporting {out}")
            export_onnx(self.model_dir, out, quantization)
        return os.path.join(out, "model.onnx")

    def saved_model(self) -> str:
        from albert_tf.export.saved_model import export_saved_model
        out = self.path("saved_model", "encoder", "1")
        if not os.path.exists(out):
            self.echo(f"  exporting {out}")
            export_saved_model(self.model_dir, self.path("saved_model"), name="encoder",
                               version=1)
        return out

    def _export_tflite(self, out: str, quantization: str, seq_lengths: list[int],
                       batch: int) -> None:
        from albert_tf.export.tflite import export_tflite
        if os.path.exists(out):
            return
        self.echo(f"  converting {out}")
        # Calibrate on real text: SST-2 *train* sentences, enough for at least two
        # batches per signature (the calibration texts are spread over the buckets).
        export_tflite(self.model_dir, out, quantization, seq_lengths=seq_lengths,
                      batch_size=batch, num_calibration=max(64, 2 * batch * len(seq_lengths)),
                      calibration_file=os.path.join(self.data_dir, SST2_TRAIN))

    def tflite(self, quantization: str, shapes: list[tuple[int, int]]) -> str:
        """A path template ``.../b{batch}_s{seq}/model.tflite``, one export per shape."""
        template = self.path(f"tflite_{quantization}", "b{batch}_s{seq}")
        for batch, seq in shapes:
            self._export_tflite(template.format(batch=batch, seq=seq), quantization, [seq], batch)
        return os.path.join(template, "model.tflite")

    def tflite_buckets(self, quantization: str, batch: int, seq_lengths: list[int]) -> str:
        """One export directory with a static ``[batch, seq]`` signature ``seq_<n>`` per
        sequence-length bucket (a single bucket is named ``serving_default``)."""
        seq_lengths = bucket_lengths(seq_lengths)
        out = self.path(f"tflite_{quantization}",
                        f"b{batch}_buckets_" + "-".join(str(s) for s in seq_lengths))
        self._export_tflite(out, quantization, seq_lengths, batch)
        return out

    def artifact(self, runtime: str, shapes: list[tuple[int, int]]) -> tuple[str, str]:
        """``(worker runtime, artifact path or template)`` for ``runtime``."""
        if runtime == "tf":
            return "tf", self.saved_model()
        if runtime.startswith("tflite_"):
            return "tflite", self.tflite(runtime[len("tflite_"):], shapes)
        if runtime in ("torch", "torch_int8"):
            return runtime, self.hf_dir()
        if runtime in ("onnx", "onnx_int8"):
            return "onnx", self.onnx(int8=runtime == "onnx_int8")
        if runtime in ("onnx_opt", "onnx_opt_int8"):
            return "onnx", self.onnx_opt(int8=runtime == "onnx_opt_int8")
        if runtime in ("openvino", "openvino_bf16"):
            return runtime, self.openvino()
        if runtime == "openvino_int8":
            return runtime, self.openvino_int8(shapes)
        if runtime in IR_RUNNERS:
            return IR_RUNNERS[runtime], self.ir("int8" if runtime == "ir_int8" else "none")
        if runtime in ORT_QUANTIZATIONS:
            return "onnx", self.ort(ORT_QUANTIZATIONS[runtime])
        raise ValueError(f"unknown runtime {runtime!r}; use one of {RUNTIMES}.")


class RuntimeFailed(RuntimeError):
    """A runtime's child process failed (a peer's export: `build_peer`; any runtime's timing
    worker: `time_in_worker`). ``reason``: one line, what failed and how (the signal that
    killed it, or its exit status and the last line of its stderr); ``stderr``: all of it
    (with a Python stack from faulthandler after a crash)."""

    def __init__(self, stage: str, returncode: int, stderr: str):
        last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()),
                    "")
        self.stage, self.returncode, self.stderr = stage, returncode, stderr
        self.reason = f"{stage} {describe_exit(returncode)}" + (
            f": {last}" if returncode > 0 and last else "")
        super().__init__(f"{self.reason}\n{stderr[-2000:]}")


def describe_exit(returncode: int) -> str:
    """``killed by SIGSEGV (signal 11)``, ``exited with status 1``."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = "an unknown signal"
    oom = ", as the out-of-memory killer does" if -returncode == signal.SIGKILL else ""
    return f"killed by {name} (signal {-returncode}{oom})"


def _child(module: str, *args: str) -> list[str]:
    """The command that runs ``module`` in a fresh Python, with faulthandler on (a crash
    leaves its Python stack on stderr)."""
    return [sys.executable, "-X", "faulthandler", "-m", module, *args]


def _shapes_flag(shapes: list[tuple[int, int]]) -> str:
    return "--shapes=" + ",".join(f"{b}x{s}" for b, s in shapes)


def _missing(stdout: str) -> ModuleNotFoundError:
    """The worker's missing-package JSON (its last line) as a ModuleNotFoundError."""
    report = json.loads(stdout.strip().splitlines()[-1])
    return ModuleNotFoundError(report["message"], name=report["package"])


def check_installed(*packages: str) -> None:
    """Raises ModuleNotFoundError (``name``: the package) for the first of ``packages`` that
    is not installed, without importing it (`importlib.util.find_spec`): the driver checks a
    peer's packages before exporting anything for it, but never loads them."""
    import importlib.util
    for package in packages:
        if importlib.util.find_spec(package) is None:
            raise ModuleNotFoundError(f"No module named {package!r}", name=package)


def build_peer(builder: ArtifactBuilder, runtime: str,
               shapes: list[tuple[int, int]]) -> tuple[str, str]:
    """``(worker runtime, artifact)`` of a peer (`HF_RUNTIMES`): the model directory's
    Hugging Face layout is exported here (our code, TensorFlow), the rest
    (`ArtifactBuilder.artifact`: the PyTorch ONNX export, ONNX Runtime's optimizer and
    quantizer, OpenVINO, NNCF) in a child process that never imports TensorFlow
    (`albert_tf.benchmark.peer_worker`), whose progress lines are echoed as they come.

    Raises ModuleNotFoundError when PyTorch, transformers or the peer's own package is not
    installed, `RuntimeFailed` when the child fails (a crash included)."""
    check_installed("torch", "transformers")   # every peer starts from the PyTorch model
    builder.hf_dir()
    do_lower_case = builder.do_lower_case
    if do_lower_case is None:
        from albert_tf.checkpoints import recorded_casing
        casing = recorded_casing(builder.model_dir)
        do_lower_case = True if casing is None else casing
    command = _child("albert_tf.benchmark.peer_worker", f"--runtime={runtime}",
                     f"--model_dir={builder.model_dir}", f"--work_dir={builder.work_dir}",
                     _shapes_flag(shapes),
                     "--do_lower_case" if do_lower_case else "--no-do_lower_case",
                     *([f"--data_dir={builder.data_dir}"] if builder.data_dir else []),
                     *(["--fusions_shown"] if builder.fusions_shown else []))
    report = None
    with tempfile.TemporaryFile("w+", encoding="utf-8") as stderr:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True) as child:
            for line in child.stdout:
                line = line.rstrip("\n")
                if line.startswith("{"):   # its result (or missing-package) JSON
                    report = line
                    continue
                builder.echo(line)
                if FUSIONS_LINE in line:
                    builder.fusions_shown = True
        stderr.seek(0)
        errors = stderr.read()
    if child.returncode == MISSING_PACKAGE_EXIT and report:
        raise _missing(report)
    if child.returncode or report is None:
        raise RuntimeFailed("export", child.returncode, errors)
    result = json.loads(report)
    return result["worker_runtime"], result["artifact"]


def time_in_worker(runtime: str, artifact: str, shapes: list[tuple[int, int]], vocab_size: int,
                   threads: int, min_seconds: float) -> dict:
    """Runs `albert_tf.benchmark.worker` in a fresh process; returns its JSON. Raises
    ModuleNotFoundError (``name``: the package) when the worker reports that the runtime's
    package is not installed, `RuntimeFailed` when the worker fails (a crash included)."""
    command = _child("albert_tf.benchmark.worker", f"--runtime={runtime}",
                     f"--artifact={artifact}", _shapes_flag(shapes),
                     f"--vocab_size={vocab_size}", f"--threads={threads}",
                     f"--min_seconds={min_seconds}")
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode == MISSING_PACKAGE_EXIT:
        raise _missing(result.stdout)
    if result.returncode != 0:
        raise RuntimeFailed("timing", result.returncode, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def file_size(runtime: str, artifact: str, batch: int, seq: int) -> float:
    if runtime.startswith("tflite_"):
        return _size_mib(artifact.format(batch=batch, seq=seq))
    if runtime in ("torch", "torch_int8"):
        return _size_mib(os.path.join(artifact, "model.safetensors"))
    if runtime.startswith(("openvino", "ir_")):   # IR: the graph (.xml) and its weights
        return _size_mib(artifact) + _size_mib(os.path.splitext(artifact)[0] + ".bin")
    return _size_mib(artifact)


def _profile(name: str, runtime: str, worker_runtime: str, artifact: str, shapes,
             vocab_size: int, threads: int, profiles: list, echo) -> None:
    """Appends a kernel profile per shape (`albert_tf.benchmark.profile`); a machine
    where perf cannot sample gets one line, and the timings stand."""
    from albert_tf.benchmark import profile
    for batch, seq in shapes:
        try:
            kernels, timed = profile.profile_worker(worker_runtime, artifact, (batch, seq),
                                                    vocab_size, threads)
        except profile.PerfUnavailable as e:
            echo(f"  profile skipped: {e}")
            return
        title = (f"{name} {runtime} {batch} x {seq} "
                 f"({timed['results'][0]['median_ms']:.1f} ms under the profiler)")
        profiles.append((title, kernels))
        top = sorted(kernels.by_category.items(), key=lambda kv: -kv[1])[:3]
        echo("    profile: " + ", ".join(f"{c} {100 * v:.0f}%" for c, v in top))


def merge_rounds(timings: list[dict]) -> dict:
    """One worker result from the results of ``rounds`` workers of the same runtime and
    shapes: per shape the median of their medians and of their p90s, and the largest peak
    RSS (each worker is a fresh process)."""
    import statistics
    merged = dict(timings[0], peak_rss_mib=max(t["peak_rss_mib"] for t in timings),
                  results=[])
    for shape_results in zip(*(t["results"] for t in timings)):
        median = statistics.median(r["median_ms"] for r in shape_results)
        merged["results"].append(dict(
            shape_results[0], median_ms=median,
            p90_ms=statistics.median(r["p90_ms"] for r in shape_results),
            sequences_per_s=shape_results[0]["batch"] / median * 1e3,
            round_medians_ms=[r["median_ms"] for r in shape_results]))
    return merged


def benchmark_model(name: str, model_dir: str, runtimes, shapes, work_dir: str, data_dir: str,
                    threads: int, min_seconds: float, cpu, echo=print,
                    skipped: dict[str, str] | None = None,
                    profiles: list | None = None, rounds: int = 1,
                    failed: dict[str, str] | None = None) -> list[Measurement]:
    """Builds and times each runtime of one model; returns its measurements.

    ``rounds`` > 1: every runtime is timed that many times, round-robin (a fresh worker each
    time, the runtimes in turn), and each figure is the median over the rounds, so that a
    slow minute of a shared machine hits every runtime alike instead of the one it falls on.

    ``profiles``: when a list, each runtime is then also profiled by kernel under ``perf``
    at each shape (`albert_tf.benchmark.profile`) and ``(title, KernelProfile)`` appended.

    ``skipped`` (runtime -> reason) collects the runtimes that could not run, across models:
    one whose package is missing is reported with one line the first time and then left
    out for every later model (the package will not appear mid-run).

    ``failed`` (runtime -> ``"model: reason"``, ``"; "``-joined across models) collects the
    runtimes whose export or timing failed (`RuntimeFailed`: a peer's export and every
    timing run in child processes, so a crash included): each is named with one line, its
    rows of this model are left out (every round's), and the other runtimes run on."""
    import albert_tf
    from albert_tf.benchmark.flops import flops_per_sequence
    from albert_tf.checkpoints import load_config_from_dir
    config = load_config_from_dir(model_dir)
    builder = ArtifactBuilder(model_dir, os.path.join(work_dir, name), data_dir, echo)
    skipped = {} if skipped is None else skipped
    failed = {} if failed is None else failed
    missing = {r for r, reason in skipped.items() if reason.endswith(" is not installed")}
    timings: dict[str, list[dict]] = {}
    artifacts: dict[str, tuple[str, str]] = {}
    for round_index in range(rounds):
        for runtime in runtimes:
            if runtime in missing or (round_index and runtime not in timings):
                continue
            if runtime in HF_RUNTIMES:
                if config.sharing != "all" and not config.is_bert:
                    echo(f"  {name}: {runtime} skipped (no Hugging Face layout for "
                         f"sharing={config.sharing})")
                    skipped.setdefault(runtime, f"{name}: no Hugging Face layout for "
                                       f"sharing={config.sharing}")
                    continue
            try:
                if runtime not in artifacts:
                    artifacts[runtime] = (build_peer(builder, runtime, shapes)
                                          if runtime in HF_RUNTIMES
                                          else builder.artifact(runtime, shapes))
                worker_runtime, artifact = artifacts[runtime]
                echo(f"  timing {name} {runtime} {shapes}"
                     + (f" (round {round_index + 1}/{rounds})" if rounds > 1 else ""))
                timed = time_in_worker(worker_runtime, artifact, shapes, config.vocab_size,
                                       threads, min_seconds)
            except ModuleNotFoundError as e:
                package = missing_package(e)
                if package is None:
                    raise
                skipped[runtime] = NOT_INSTALLED.format(package)
                missing.add(runtime)
                echo(f"  {runtime}: skipped: {skipped[runtime]} ({pip_fix(package, runtime)})")
                continue
            except RuntimeFailed as e:
                timings.pop(runtime, None)   # and no later round: its rows are left out
                log = builder.path("logs", f"{runtime}.{e.stage}.log")
                os.makedirs(os.path.dirname(log), exist_ok=True)
                with open(log, "w", encoding="utf-8") as f:
                    f.write(e.stderr)
                why = f"{name}: {e.reason}"
                failed[runtime] = f"{failed[runtime]}; {why}" if runtime in failed else why
                echo(f"  {name} {runtime}: FAILED, its rows are left out: {e.reason} "
                     f"(stderr: {log})")
                continue
            timings.setdefault(runtime, []).append(timed)
    rows = []
    for runtime in (r for r in runtimes if r in timings):
        worker_runtime, artifact = artifacts[runtime]
        timed = merge_rounds(timings[runtime])
        for r in timed["results"]:
            gflops = flops_per_sequence(config, r["seq"]) / 1e9
            peak = cpu.peak_int8_gops(threads) if runtime in INT8_RUNTIMES else \
                cpu.peak_fp32_gflops(threads)
            achieved = gflops * r["batch"] / (r["median_ms"] / 1e3)
            rows.append(Measurement(
                model=name, runtime=runtime, batch=r["batch"], seq=r["seq"],
                median_ms=r["median_ms"], p90_ms=r["p90_ms"],
                sequences_per_s=r["sequences_per_s"], peak_rss_mib=timed["peak_rss_mib"],
                file_mib=file_size(runtime, artifact, r["batch"], r["seq"]),
                gflops_per_sequence=gflops, peak_fraction=achieved / peak,
                vector_peak_fraction=(achieved / cpu.peak_int8_vector_gops(threads)
                                      if runtime in INT8_RUNTIMES else None),
                rounds=len(timings[runtime])))
            spread = (" (rounds: " + ", ".join(f"{m:.1f}" for m in r["round_medians_ms"])
                      + ")") if rounds > 1 else ""
            echo(f"    {name:16s} {runtime:15s} {r['batch']:3d} x {r['seq']:4d}: "
                 f"median {r['median_ms']:8.1f} ms, p90 {r['p90_ms']:8.1f} ms, "
                 f"{100 * achieved / peak:5.1f}% of peak{spread}")
        if profiles is not None:
            _profile(name, runtime, worker_runtime, artifact, shapes, config.vocab_size,
                     threads, profiles, echo)
    del albert_tf
    return rows
