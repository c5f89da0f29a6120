"""Sparse weights in an export: the pruning patterns, which runtime runs which, the checks.

    albert-tf-export --model_dir=runs/sst2_pruned --format=tflite --quantization=int8 \\
        --sparse_weights=1x16        # or auto: the pattern the model's zeros form

The one home of the pattern vocabulary (`PATTERNS`, read by ``albert-tf-benchmark
--compressed`` too) and of the facts of which export runs which pattern's zeros
(`SPARSE_KERNELS`, which `albert_tf.benchmark.targets` derives its sparse targets from).

**Patterns.** TFLite stores a FULLY_CONNECTED weight as ``[out, in]``; a ``1xN`` block is one
output row x N consecutive inputs. A Keras ``Dense`` kernel is ``[in, out]`` (the transpose),
so the same block is N consecutive rows of one column of the kernel: shape ``(N, 1)``
(`keras_block`; ``pruning.block_size=Nx1`` of albert-tf-compress).
``unstructured`` is ``1x1``. Rows that do not fill a last block make a shorter block of
their own. A model pruned to ``1x16`` blocks is ``1x4``-block sparse and unstructured sparse
too: a kernel that takes N-blocks runs any pattern whose block length is a multiple of N.

**Who runs what** (`SPARSE_KERNELS`): LiteRT's builtin FULLY_CONNECTED has a sparse float
kernel (1x4 blocks) and a sparse int8 one (1x16 blocks), for weights stored sparse by the
converter's sparsify pass (`sparsify_bytes`: ``Optimize.EXPERIMENTAL_SPARSITY``); XNNPACK,
LiteRT's default CPU delegate, computes dense. OpenVINO's CPU plugin keeps int8 MatMul weights
with more zeros than ``CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE`` sparse and decompresses them on
the fly (unstructured; on CPUs with AMX): a compile option, recorded in the export's
``metadata.json`` and applied by `albert_tf.runtime.openvino.OpenVinoClassifier`. ONNX
Runtime and TensorFlow multiply the zeros.

`problem` refuses a (format, quantization, pattern) no runtime runs, in one line naming the
exports that can, before anything is read; `check_model` refuses, after the model is read, a
model whose zeros do not form the pattern, saying what it found. Measured speed (docs/results/
sparse-kernels.md): the files shrink, but on AMX CPUs dense int8 on XNNPACK
stays faster.

Imports no TensorFlow at import time (`sparsify_bytes` and `kernels_of` do, when called).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from albert_tf.export.errors import ExportError

# pattern -> block length N along the inputs (TFLite "1xN" on the [out, in] weight)
PATTERNS = {"unstructured": 1, "1x4": 4, "1x16": 16}
AUTO = "auto"                       # --sparse_weights=auto: the pattern the zeros form
CHOICES = (AUTO, *PATTERNS)         # the --sparse_weights choices
# The sparsify pass keeps a tensor dense below this zero fraction (TensorFlow's
# dense_to_sparse pass: kMinSparsityLevel) ...
TFLITE_MIN_SPARSITY = 0.3
# ... and stores it in blocks when at least this share of its zeros lies in whole blocks
# (kBlockOverRandomSparsityRatio for float; 0.8 for int8, after quantization): what
# "the zeros form the pattern" means here (`block_share`).
BLOCK_SHARE = 0.9
# OpenVINO CPU: int8 weights with more zeros than this are kept sparse
# (CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE; the benchmark's ``ir_int8_sparse`` too).
OPENVINO_SPARSE_RATE = 0.5
OPENVINO_SPARSE_CONFIG = "CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE"


@dataclasses.dataclass(frozen=True)
class SparseKernel:
    """A runtime's sparse kernel that an export stores weights for.

    Attributes:
      format, quantization: the export (`albert_tf.export.formats`) it runs.
      pattern: the pattern its kernel takes (a key of `PATTERNS`); it runs the zeros of any
        pattern whose block length is a multiple of this one's.
      engine: the runtime ("LiteRT", "OpenVINO").
      runtime: its kernel's name in messages.
      min_sparsity: a weight with fewer zeros than this stays dense.
      note: what else it needs, for messages ("AMX CPUs").
    """

    format: str
    quantization: str
    pattern: str
    engine: str
    runtime: str
    min_sparsity: float
    note: str = ""

    @property
    def label(self) -> str:
        """``tflite int8 (1x16)``: the export and its pattern, as the refusals name it."""
        return (f"{self.format} {self.quantization} "
                f"({self.pattern}{', ' + self.note if self.note else ''})")

    def runs(self, pattern: str) -> bool:
        """True when this kernel skips the zeros of a model pruned to ``pattern``."""
        return PATTERNS[pattern] % PATTERNS[self.pattern] == 0


SPARSE_KERNELS = (
    SparseKernel("tflite", "none", "1x4", "LiteRT", "LiteRT's sparse float FULLY_CONNECTED kernel",
                 TFLITE_MIN_SPARSITY),
    SparseKernel("tflite", "int8", "1x16", "LiteRT", "LiteRT's sparse int8 FULLY_CONNECTED kernel",
                 TFLITE_MIN_SPARSITY),
    SparseKernel("openvino", "int8", "unstructured", "OpenVINO", "OpenVINO's sparse int8 weights "
                 f"({OPENVINO_SPARSE_CONFIG})", OPENVINO_SPARSE_RATE, note="AMX CPUs"),
)
# Formats with no sparse kernel at all: why, for the refusal.
NO_SPARSE_KERNELS = {
    "onnx": "ONNX Runtime multiplies the zeros (no sparse kernels)",
    "saved_model": "TensorFlow (Serving) multiplies the zeros (no sparse kernels)",
}


def kernel(format_name: str, quantization: str) -> SparseKernel | None:
    """The sparse kernel that runs ``format_name`` at ``quantization`` (None: none does)."""
    return next((k for k in SPARSE_KERNELS
                 if (k.format, k.quantization) == (format_name, quantization)), None)


def kernel_pattern(format_name: str, quantization: str) -> str:
    """The pattern the export ``format_name`` at ``quantization`` runs (a `ValueError` when
    it runs none): `albert_tf.benchmark.targets` derives its sparse targets from it."""
    found = kernel(format_name, quantization)
    if found is None:
        raise ValueError(f"no sparse kernel runs {format_name} {quantization}")
    return found.pattern


def runs_on(pattern: str | None = None) -> str:
    """``tflite none (1x4), tflite int8 (1x16), openvino int8 (unstructured, AMX CPUs)``:
    the exports that run ``pattern``'s zeros (None: every sparse export)."""
    return ", ".join(k.label for k in SPARSE_KERNELS if pattern is None or k.runs(pattern))


def keras_block(pattern: str) -> tuple[int, int]:
    """The block of a Keras ``[in, out]`` kernel that is TFLite's ``1xN`` of ``[out, in]``."""
    return PATTERNS[pattern], 1


def kernels_for_block(format_name: str, block: tuple[int, int],
                      quantizations: list[str]) -> dict[str, str]:
    """quantization -> the pattern its sparse kernel takes, for those of ``quantizations``
    whose ``format_name`` export runs a model pruned to ``block`` (``pruning.block_size``
    ``(rows, cols)`` of the Keras ``[in, out]`` kernel; ``(1, 1)`` = unstructured): TFLite's
    ``1xN`` is the Keras block ``Nx1``, N-blocks run any multiple of N, and an unstructured
    kernel runs any zeros."""
    rows, cols = block
    out = {}
    for quantization in quantizations:
        found = kernel(format_name, quantization)
        length = PATTERNS[found.pattern] if found else 0
        if length == 1 or (length and cols == 1 and rows % length == 0):
            out[quantization] = found.pattern
    return out


def problem(format_name: str, quantization: str | None, sparse_weights: str) -> str | None:
    """Why ``--sparse_weights`` cannot be exported as ``format_name`` at ``quantization``, in
    one line naming the exports that can (None: it can). Needs no model."""
    quantization = quantization or "none"
    if sparse_weights not in CHOICES:
        return f"--sparse_weights={sparse_weights}: use one of {', '.join(CHOICES)}."
    where = f"--sparse_weights={sparse_weights} --format={format_name}"
    everywhere = f"sparse weights run on: {runs_on()}."
    if format_name in NO_SPARSE_KERNELS:
        return f"{where}: {NO_SPARSE_KERNELS[format_name]}; {everywhere}"
    kernels = [k for k in SPARSE_KERNELS if k.format == format_name]
    if not kernels:
        return f"{where}: no sparse kernel runs this format; {everywhere}"
    found = kernel(format_name, quantization)
    where += f" --quantization={quantization}"
    if found is None:
        takes = " or ".join(f"{k.quantization} ({k.pattern})" for k in kernels)
        return (f"{where}: {kernels[0].engine} runs sparse weights at --quantization={takes} "
                f"only, not {quantization}; {everywhere}")
    if sparse_weights != AUTO and not found.runs(sparse_weights):
        length = PATTERNS[found.pattern]
        return (f"{where}: {found.runtime} takes {found.pattern} blocks ({length} consecutive "
                f"inputs of one output), which {sparse_weights} zeros do not form; "
                f"{sparse_weights} runs on: {runs_on(sparse_weights) or 'nothing'}.")
    return None


# ------------------------------------------------------------------ the model's zeros
def prunable(name: str, shape) -> bool:
    """A rank-2 kernel outside the embeddings (the word, position and type tables): the
    weights pruning prunes and the sparse kernels multiply."""
    return len(shape) == 2 and not (name.startswith("embeddings/") or "/embeddings/" in name)


def kernels_of(model) -> dict[str, np.ndarray]:
    """``{name: array}`` of ``model``'s `prunable` kernels (each shared weight once)."""
    from albert_tf.checkpoints import named_weights
    return {name: np.asarray(v.numpy()) for name, v in named_weights(model).items()
            if prunable(name, v.shape)}


def block_share(kernel_value: np.ndarray, pattern: str) -> float:
    """The share of the zeros of a Keras ``[in, out]`` kernel that lie in whole all-zero
    blocks of ``pattern`` (`keras_block`; rows that do not fill a last block make a shorter
    block); 1.0 for a kernel with no zeros and for ``unstructured``."""
    zeros = np.asarray(kernel_value) == 0
    total = int(zeros.sum())
    length = PATTERNS[pattern]
    if total == 0 or length == 1:
        return 1.0
    rows = zeros.shape[0] // length * length
    whole = int(zeros[:rows].reshape(-1, length, zeros.shape[1]).all(axis=1).sum()) * length
    if rows < zeros.shape[0]:
        whole += int(zeros[rows:].all(axis=0).sum()) * (zeros.shape[0] - rows)
    return whole / total


@dataclasses.dataclass(frozen=True)
class Found:
    """What a model's kernels hold: ``sparsity`` (zero fraction over all of them),
    ``sparse`` / ``kernels`` (how many have at least ``min_sparsity`` zeros / in all) and
    ``pattern``, the largest pattern the sparse kernels' zeros form (`BLOCK_SHARE`)."""

    sparsity: float
    sparse: int
    kernels: int
    min_sparsity: float
    pattern: str

    def describe(self) -> str:
        return (f"{100 * self.sparsity:.1f}% zeros over its {self.kernels} kernels, "
                f"{self.sparse} of them at least {100 * self.min_sparsity:g}% zero"
                + (f", the largest block pattern that holds: {self.pattern}" if self.sparse
                   else ""))

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def find(kernels: Mapping[str, np.ndarray], min_sparsity: float) -> Found:
    """The zeros of ``kernels`` (`kernels_of`): their sparsity and the largest pattern whose
    whole blocks hold at least `BLOCK_SHARE` of the zeros of every kernel with at least
    ``min_sparsity`` zeros."""
    values = [np.asarray(v) for v in kernels.values()]
    size = sum(v.size for v in values)
    zeros = sum(int(np.sum(v == 0)) for v in values)
    sparse = [v for v in values if v.size and np.mean(v == 0) >= min_sparsity]
    holds = [p for p in PATTERNS
             if all(block_share(v, p) >= BLOCK_SHARE for v in sparse)]
    pattern = max(holds, key=PATTERNS.get)     # unstructured always holds
    return Found(zeros / max(size, 1), len(sparse), len(values), min_sparsity, pattern)


def check_model(kernels: Mapping[str, np.ndarray], format_name: str, quantization: str,
                sparse_weights: str) -> dict:
    """The ``metadata.json`` entry of a sparse export of ``kernels`` (`kernels_of`), or a
    one-line `ExportError` when their zeros do not form the pattern the export needs
    (``sparse_weights``, or with ``auto`` the runtime's) or no kernel has zeros enough to be
    stored sparse. `problem` has passed."""
    runtime = kernel(format_name, quantization or "none")
    found = find(kernels, runtime.min_sparsity)
    where = f"--sparse_weights={sparse_weights}"
    if not found.sparse:
        raise ExportError(
            f"{where}: the model has {found.describe()}: nothing for {runtime.runtime} to "
            "store sparse; prune it first (albert-tf-compress --stages=pruning, "
            "docs/compression.md) or export it dense.")
    needed = runtime.pattern if sparse_weights == AUTO else sparse_weights
    if PATTERNS[found.pattern] % PATTERNS[needed]:
        block = "x".join(str(d) for d in keras_block(needed))
        also = runs_on(found.pattern)
        raise ExportError(
            f"{where}: the model's zeros do not form {needed} blocks ({block} blocks of the "
            f"Keras [in, out] kernels): it has {found.describe()}; prune with "
            f"pruning.block_size={block}"
            + (f", or export where {found.pattern} runs: {also}." if also else "."))
    return {"pattern": runtime.pattern, "requested": sparse_weights,
            "runtime": runtime.runtime, "model": found.as_dict()}


# ------------------------------------------------------------------ TFLite: the sparsify pass
def sparsify_bytes(model: bytes) -> bytes:
    """A ``.tflite`` flatbuffer with its constant weights stored sparse where they are sparse
    enough: the pass ``Optimize.EXPERIMENTAL_SPARSITY`` runs after conversion (float: 1x4
    blocks or random; int8: 1x16 blocks), so it applies to any of our exports."""
    from albert_tf.backend import tf  # noqa: F401  (TensorFlow's converter below)
    try:
        from tensorflow.lite.python.convert import mlir_sparsify
    except ImportError as e:
        raise ExportError(f"--sparse_weights: TensorFlow's sparsify pass is not importable "
                          f"(tf.lite is gone from this TensorFlow: {e}).") from e
    return mlir_sparsify(model)


def sparse_tensors(model: bytes) -> dict[str, str]:
    """``{tensor name: "1xN" or "unstructured"}`` of the tensors a ``.tflite`` flatbuffer
    stores sparse (LiteRT's schema; no TensorFlow)."""
    from ai_edge_litert import schema_py_generated as schema
    m = schema.Model.GetRootAs(model, 0)
    found = {}
    for s in range(m.SubgraphsLength()):
        graph = m.Subgraphs(s)
        for t in range(graph.TensorsLength()):
            tensor = graph.Tensors(t)
            sparsity = tensor.Sparsity()
            if sparsity is None:
                continue
            block = (sparsity.DimMetadata(sparsity.DimMetadataLength() - 1).DenseSize()
                     if sparsity.BlockMapLength() else 1)
            found[tensor.Name().decode()] = f"1x{block}" if block > 1 else "unstructured"
    return found


def sparsify_tflite(content: bytes, entry: dict) -> tuple[bytes, dict]:
    """``content`` with its weights stored sparse (`sparsify_bytes`) and ``entry``
    (`check_model`) with what the file stores; an `ExportError` when the pass stored no
    weight sparse in the pattern the kernel takes."""
    sparse = sparsify_bytes(content)
    stored = sparse_tensors(sparse)
    kept = {name: p for name, p in stored.items() if p == entry["pattern"]}
    if not kept:
        raise ExportError(f"--sparse_weights={entry['requested']}: the sparsify pass stored "
                          f"no weight in {entry['pattern']} blocks ({len(stored)} sparse "
                          "tensors in all); the export would compute dense.")
    return sparse, dict(entry, tensors=len(kept),
                        run_with="LiteRT's builtin kernels (OpResolverType."
                                 "BUILTIN_WITHOUT_DEFAULT_DELEGATES): XNNPACK computes dense")


def openvino_entry(entry: dict) -> dict:
    """``entry`` (`check_model`) with the compile option an OpenVINO runner must set."""
    return dict(entry, compile_config={OPENVINO_SPARSE_CONFIG: OPENVINO_SPARSE_RATE},
                run_with=f"{OPENVINO_SPARSE_CONFIG}={OPENVINO_SPARSE_RATE} at compile "
                         "(OpenVinoClassifier sets it; sparse on CPUs with AMX)")


def compile_config(meta: Mapping) -> dict:
    """The OpenVINO compile options an export's ``metadata.json`` asks for (``{}``: none)."""
    return dict((meta.get("sparse_weights") or {}).get("compile_config") or {})
