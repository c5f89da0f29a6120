"""The deployment targets: one record per thing ``albert-tf-benchmark`` can time.

A target is an artifact on a runtime at an arithmetic: our TFLite export at ``int8`` on
LiteRT (``tflite_int8``), our OpenVINO IR at OpenVINO's bf16 (``ir_bf16``), the Hugging Face
model exported by PyTorch to ONNX and quantized by ONNX Runtime (``onnx_int8``, a peer).
Each `Target` holds everything that used to be spelled in separate lists: whose artifact it
is (``ours`` / ``peer``), its arithmetic (the peak it is measured against and the column of
"ours vs the fastest peer"), how the artifact is built (`Target.build`, on an
`albert_tf.benchmark.artifacts.ArtifactBuilder`), which worker runner times it
(`albert_tf.runtime.sessions.SESSIONS`), how its file size is counted, the albert-tf extra
that installs its runtime, whether it calibrates on SST-2 train text, and, for ours, the
export format and quantization (`albert_tf.export.formats`) it is made with.

Everything else is derived from this table: ``--runtimes`` (choices, default, ``--quick``),
the report's tables and peaks (`albert_tf.benchmark.tables`), the SST-2 end-to-end runs
(`albert_tf.benchmark.end_to_end`), the pipeline's runtime labels, and the table in
docs/cpu-benchmark.md (``python -m albert_tf.benchmark.targets`` prints it; a test holds the
docs to it).

Adding a target is one `register` call in this module and a test
(tests/test_benchmark_targets.py): ``onnx_q4`` below was added that way, its artifact
builder beside it, and so were ``ort_q4`` and the sparse targets of ``--compressed``
(`Target.sparse_patterns`). A new runner (a runtime not yet in
`albert_tf.runtime.sessions`) also adds one entry there.

Imports no TensorFlow and no runtime: the benchmark's children read it.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable

from albert_tf.export import sparsity   # no TensorFlow

OURS, PEER = "ours", "peer"
ARITHMETICS = ("fp32", "bf16", "int8", "q4")   # q4: 4-bit weights, int8 dot products
INTEGER = ("int8", "q4")                         # timed against the machine's int8 peak
PEERS_EXTRA = "peers"   # every peer starts from the Hugging Face PyTorch model

Shapes = list[tuple[int, int]]


def size_mib(path: str) -> float:
    """A file's size, or the sum of a directory's files, in MiB."""
    if os.path.isfile(path):
        return os.path.getsize(path) / 2**20
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files) / 2**20


# ------------------------------------------------------------------ size rules
def file_size(artifact: str, batch: int, seq: int) -> float:
    """One file (or directory) for every shape."""
    return size_mib(artifact)


def per_shape_size(template: str, batch: int, seq: int) -> float:
    """A file per shape: ``template`` holds ``{batch}`` and ``{seq}``."""
    return size_mib(template.format(batch=batch, seq=seq))


def hf_weights_size(hf_dir: str, batch: int, seq: int) -> float:
    """A Hugging Face directory: its weights."""
    return size_mib(os.path.join(hf_dir, "model.safetensors"))


def ir_size(xml: str, batch: int, seq: int) -> float:
    """An OpenVINO IR: the graph (.xml) and its weights (.bin)."""
    return size_mib(xml) + size_mib(os.path.splitext(xml)[0] + ".bin")


@dataclasses.dataclass(frozen=True)
class Target:
    """One ``--runtimes`` choice.

    Attributes:
      name: the ``--runtimes`` value and the report's runtime column.
      owner: `OURS` (albert-tf's export) or `PEER` (built from the Hugging Face model).
      arithmetic: one of `ARITHMETICS`.
      worker: the runner that times it (`albert_tf.runtime.sessions.SESSIONS`).
      build: ``build(builder, shapes) -> artifact`` (a path, or a template with ``{batch}``
        and ``{seq}``), cached by the builder.
      size: ``size(artifact, batch, seq) -> MiB``.
      extra: the albert-tf extra that installs its runtime (None: the base install).
      description: one line for ``--help`` and the docs.
      export: ours: ``(format, quantization)`` of `albert_tf.export.formats`.
      calibrated: calibrates on SST-2 train text (needs the data directory).
      default: timed when ``--runtimes`` is not given.
      quick: timed by ``--quick``.
      latency_target: the default ``--target`` of ``albert-tf-compress --target_speedup``
        (exactly one target; `latency_target`).
      sparse_patterns: the pruning patterns whose zeros its kernels skip
        (`albert_tf.export.sparsity.PATTERNS`; its export's kernel runs each:
        `albert_tf.export.sparsity.SPARSE_KERNELS`): ``--compressed`` times it on copies of
        the model pruned to each of them; empty: a dense target.
    """

    name: str
    owner: str
    arithmetic: str
    worker: str
    build: Callable[[object, Shapes], str]
    size: Callable[[str, int, int], float]
    extra: str | None
    description: str
    export: tuple[str, str] | None = None
    calibrated: bool = False
    default: bool = True
    quick: bool = False
    sparse_patterns: tuple[str, ...] = ()
    latency_target: bool = False

    @property
    def integer(self) -> bool:
        return self.arithmetic in INTEGER

    @property
    def peer(self) -> bool:
        return self.owner == PEER


_TARGETS: dict[str, Target] = {}


def register(target: Target) -> Target:
    if target.name in _TARGETS:
        raise ValueError(f"deployment target {target.name!r} is registered twice")
    if target.owner not in (OURS, PEER) or target.arithmetic not in ARITHMETICS:
        raise ValueError(f"{target.name}: owner {target.owner!r}, arithmetic "
                         f"{target.arithmetic!r}")
    if (target.owner == OURS) != (target.export is not None):
        raise ValueError(f"{target.name}: ours has an export (format, quantization), a "
                         "peer none")
    runs = target.export and sparsity.kernel(*target.export)
    if target.sparse_patterns and not (runs and all(map(runs.runs, target.sparse_patterns))):
        raise ValueError(f"{target.name}: no sparse kernel of {target.export} runs "
                         f"{target.sparse_patterns} (albert_tf.export.sparsity)")
    _TARGETS[target.name] = target
    return target


def names() -> tuple[str, ...]:
    """Every target, in registration order (``--runtimes`` choices)."""
    return tuple(_TARGETS)


def get(name: str) -> Target:
    try:
        return _TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown runtime {name!r}; use one of {', '.join(names())}.") \
            from None


def every_target() -> tuple[Target, ...]:
    return tuple(_TARGETS.values())


def latency_target() -> str:
    """The target ``albert-tf-compress --target_speedup`` times unless told another."""
    chosen = [t.name for t in _TARGETS.values() if t.latency_target]
    if len(chosen) != 1:
        raise ValueError(f"one target must be the latency target, not {chosen}")
    return chosen[0]


def default_names() -> list[str]:
    return [t.name for t in _TARGETS.values() if t.default]


def quick_names() -> list[str]:
    return [t.name for t in _TARGETS.values() if t.quick]


def of_export(format_name: str, quantization: str, sparse: bool = False) -> Target | None:
    """Our target made with ``albert-tf-export --format=format_name
    --quantization=quantization`` (the first registered: ``ir_none`` before ``ir_bf16``),
    ``--sparse_weights`` given or not (``sparse``: a target with `Target.sparse_patterns`)."""
    return next((t for t in _TARGETS.values() if t.export == (format_name, quantization)
                 and bool(t.sparse_patterns) == sparse), None)


def export_label(format_name: str, quantization: str, sparse: bool = False) -> str:
    """The report's runtime name of an export (its target's name; an export no target
    times, e.g. TFLite ``qat``, is ``<format>_<quantization>``, plus ``_sparse`` for
    sparse weights)."""
    target = of_export(format_name, quantization, sparse)
    return target.name if target else f"{format_name}_{quantization}" + \
        ("_sparse" if sparse else "")


def markdown_table() -> str:
    """The docs' table of targets (docs/cpu-benchmark.md)."""
    lines = ["| runtime | whose | arithmetic | artifact | runner | extra | default |",
             "|---|---|---|---|---|---|---|"]
    for t in _TARGETS.values():
        made = (f"`albert-tf-export --format={t.export[0]} --quantization={t.export[1]}`"
                if t.export else "Hugging Face model")
        lines.append(f"| `{t.name}` | {t.owner} | {t.arithmetic} | {made}: {t.description} | "
                     f"{t.worker} | {t.extra or '-'} | {'yes' if t.default else 'no'} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ ours
def _tflite(quantization: str) -> Callable[[object, Shapes], str]:
    return lambda builder, shapes: builder.tflite(quantization, shapes)


register(Target("tf", OURS, "fp32", "tf", lambda b, shapes: b.saved_model(), file_size, None,
                "our SavedModel's `encode` signature (ids in) on TensorFlow",
                export=("saved_model", "none")))
register(Target("tflite_none", OURS, "fp32", "tflite", _tflite("none"), per_shape_size, None,
                "a static [batch, seq] file per shape on LiteRT + XNNPACK",
                export=("tflite", "none")))
register(Target("tflite_dynamic", OURS, "int8", "tflite", _tflite("dynamic"), per_shape_size,
                None, "int8 weights, activations quantized on the fly",
                export=("tflite", "dynamic"), quick=True))
register(Target("tflite_int8", OURS, "int8", "tflite", _tflite("int8"), per_shape_size, None,
                "int8 weights and activations, calibrated", export=("tflite", "int8"),
                calibrated=True, quick=True, latency_target=True))
register(Target("ir_none", OURS, "fp32", "openvino", lambda b, shapes: b.ir("none"), ir_size,
                "openvino", "our graph as OpenVINO IR (shared layer stored once), f32 forced",
                export=("openvino", "none")))
register(Target("ir_bf16", OURS, "bf16", "openvino_bf16", lambda b, shapes: b.ir("none"),
                ir_size, "openvino", "the same IR at OpenVINO's bf16 (AVX-512 BF16 / AMX)",
                export=("openvino", "none")))
register(Target("ir_int8", OURS, "int8", "openvino_int8", lambda b, shapes: b.ir("int8"),
                ir_size, "openvino", "NNCF int8 of our IR, at OpenVINO's default precision",
                export=("openvino", "int8"), calibrated=True))
register(Target("ort_none", OURS, "fp32", "onnx", lambda b, shapes: b.ort("none"), file_size,
                "onnx", "our graph as ONNX Runtime's fused operators",
                export=("onnx", "none")))
register(Target("ort_int8", OURS, "int8", "onnx", lambda b, shapes: b.ort("int8"), file_size,
                "onnx", "the same, ONNX Runtime dynamic int8", export=("onnx", "int8"),
                quick=True))

# ------------------------------------------------------------------ peers
register(Target("torch", PEER, "fp32", "torch", lambda b, shapes: b.hf_dir(), hf_weights_size,
                PEERS_EXTRA, "transformers on PyTorch"))
register(Target("torch_int8", PEER, "int8", "torch_int8", lambda b, shapes: b.hf_dir(),
                hf_weights_size, PEERS_EXTRA, "PyTorch dynamic int8 (Linear layers)",
                quick=True))
register(Target("onnx", PEER, "fp32", "onnx", lambda b, shapes: b.onnx(int8=False), file_size,
                PEERS_EXTRA, "PyTorch's ONNX export on ONNX Runtime"))
register(Target("onnx_int8", PEER, "int8", "onnx", lambda b, shapes: b.onnx(int8=True),
                file_size, PEERS_EXTRA, "the same, ONNX Runtime dynamic int8"))
register(Target("onnx_opt", PEER, "fp32", "onnx", lambda b, shapes: b.onnx_opt(int8=False),
                file_size, PEERS_EXTRA, "ONNX Runtime's transformer optimizer on the export"))
register(Target("onnx_opt_int8", PEER, "int8", "onnx",
                lambda b, shapes: b.onnx_opt(int8=True), file_size, PEERS_EXTRA,
                "the optimized graph, ONNX Runtime dynamic int8", quick=True))
register(Target("openvino", PEER, "fp32", "openvino", lambda b, shapes: b.openvino(), ir_size,
                PEERS_EXTRA, "OpenVINO IR of the ONNX export, f32 forced"))
register(Target("openvino_bf16", PEER, "bf16", "openvino_bf16",
                lambda b, shapes: b.openvino(), ir_size, PEERS_EXTRA,
                "the same IR at OpenVINO's bf16 (AVX-512 BF16 / AMX)"))
register(Target("openvino_int8", PEER, "int8", "openvino_int8",
                lambda b, shapes: b.openvino_int8(shapes), ir_size, PEERS_EXTRA,
                "NNCF int8 of that IR, at OpenVINO's default precision", calibrated=True))


# ------------------------------------------------------------------ added as a target
Q4_BLOCK_SIZE = 32   # weights per scale (ONNX Runtime's MatMulNBits block)
Q4_ACCURACY_LEVEL = 4   # int8 activations: int8 dot products (MLAS), not float ones


def quantize_q4(builder, float_path: str, name: str) -> str:
    """ONNX Runtime's 4-bit weight-only quantization of ``float_path`` to ``builder.path(name)``:
    every MatMul with constant weights becomes ``MatMulNBits`` (symmetric, `Q4_BLOCK_SIZE`
    weights per scale) at ``accuracy_level`` `Q4_ACCURACY_LEVEL`, i.e. activations quantized
    to int8 on the fly and int8 dot products; without it MLAS dequantizes to float. Written
    under a temporary name and renamed, like every peer artifact."""
    out = builder.path(name)
    if not os.path.exists(out):
        import onnx
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
        builder.echo(f"  quantizing {out} (MatMulNBits 4-bit, block {Q4_BLOCK_SIZE}, "
                     f"accuracy_level {Q4_ACCURACY_LEVEL})")
        quantizer = MatMulNBitsQuantizer(onnx.load(float_path), bits=4,
                                         block_size=Q4_BLOCK_SIZE, is_symmetric=True,
                                         accuracy_level=Q4_ACCURACY_LEVEL)
        quantizer.process()
        tmp = out + ".tmp"
        onnx.save_model(quantizer.model.model, tmp)
        os.replace(tmp, out)
    return out


def build_onnx_q4(builder, shapes: Shapes) -> str:
    """`quantize_q4` of the plain ONNX peer."""
    return quantize_q4(builder, builder.onnx(int8=False), "model_q4.onnx")


register(Target("onnx_q4", PEER, "q4", "onnx", build_onnx_q4, file_size, PEERS_EXTRA,
                "the ONNX export with 4-bit MatMulNBits weights, accuracy_level 4",
                default=False))
register(Target("ort_q4", OURS, "q4", "onnx",
                lambda b, shapes: quantize_q4(b, b.ort("none"), "ort_q4.onnx"), file_size,
                "onnx", "our ONNX export with 4-bit MatMulNBits weights (the MatMuls: output "
                "and FFN; the fused Attention's QKV stays float), accuracy_level 4",
                export=("onnx", "none"), default=False))
# AI Edge Quantizer (the ``quantizer`` extra) on our float TFLite export: INT4 per-channel
# FULLY_CONNECTED weights, activations quantized to int8 on the fly by XNNPACK (its
# QD8 x QC4W GEMMs); the embeddings and attention's BATCH_MATMULs stay float.
register(Target("tflite_q4", OURS, "q4", "tflite", lambda b, shapes: b.tflite_q4(shapes),
                per_shape_size, "quantizer",
                "tflite_none with 4-bit per-channel FULLY_CONNECTED weights (AI Edge "
                "Quantizer, dynamic int4), int8 activations on the fly: XNNPACK's QD8 x QC4W "
                "kernels", export=("tflite", "none"), default=False))


# ------------------------------------------------------------------ sparse (--compressed)
# Timed by ``albert-tf-benchmark --compressed`` on pruned copies of the model
# (`albert_tf.benchmark.compressed`): each runs the zeros of its ``sparse_patterns``, the
# pattern the export layer says its export's kernel takes (`albert_tf.export.sparsity`,
# which albert-tf-export --sparse_weights reads too).
def _sparse(export: tuple[str, str]) -> tuple[str, ...]:
    return (sparsity.kernel_pattern(*export),)


register(Target("tflite_sparse", OURS, "fp32", "tflite_builtin",
                lambda b, shapes: b.tflite_sparse("none", shapes), per_shape_size, None,
                "tflite_none with its weights stored sparse (TFLite "
                f"{_sparse(('tflite', 'none'))[0]} blocks), on LiteRT's builtin sparse kernels "
                "(no XNNPACK)", export=("tflite", "none"),
                default=False, sparse_patterns=_sparse(("tflite", "none"))))
register(Target("tflite_sparse_int8", OURS, "int8", "tflite_builtin",
                lambda b, shapes: b.tflite_sparse("int8", shapes), per_shape_size, None,
                "tflite_int8 with its weights stored sparse (TFLite "
                f"{_sparse(('tflite', 'int8'))[0]} blocks), on LiteRT's builtin sparse kernels "
                "(no XNNPACK)", export=("tflite", "int8"),
                calibrated=True, default=False, sparse_patterns=_sparse(("tflite", "int8"))))
register(Target("ir_int8_sparse", OURS, "int8", "openvino_int8_sparse",
                lambda b, shapes: b.ir("int8"), ir_size, "openvino",
                f"ir_int8 compiled with {sparsity.OPENVINO_SPARSE_CONFIG} (sparse int8 "
                "weights, decompressed on the fly)", export=("openvino", "int8"),
                calibrated=True, default=False, sparse_patterns=_sparse(("openvino", "int8"))))


def sparse_names() -> list[str]:
    """The targets that run a pruning pattern's zeros (``--compressed``)."""
    return [t.name for t in _TARGETS.values() if t.sparse_patterns]


if __name__ == "__main__":
    print(markdown_table())
