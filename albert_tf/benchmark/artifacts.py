"""The artifacts the benchmark times, built once per model and cached on disk.

`ArtifactBuilder` makes each kind: our exports (`albert_tf.export.formats`: SavedModel,
TFLite per shape or per bucket list, ONNX, OpenVINO IR) and the peers' (the model
directory's Hugging Face layout, the PyTorch ONNX export, ONNX Runtime's optimizer and
quantizers, OpenVINO's conversion and NNCF). Which artifact each runtime times is the
deployment-target registry's business (`albert_tf.benchmark.targets`); `artifact` asks it.

Imports no TensorFlow (the peers' artifacts are built in processes that never load it:
`albert_tf.benchmark.peer_worker`); our exports import it when they run.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Callable

from albert_tf.data.task_data import expected_glue_file
from albert_tf.export.signatures import bucket_lengths
# The converter's sparsify pass: the export's (albert-tf-export --sparse_weights) own.
from albert_tf.export.sparsity import sparsify_bytes

# int8 calibration text: SST-2 *train* sentences (tflite_int8, openvino_int8, ir_int8).
SST2_TRAIN = expected_glue_file("", "sst2", "train")   # under the data root
NNCF_CALIBRATION_SENTENCES = 128
FUSIONS_LINE = "onnx_opt fusions:"   # starts the line of `ArtifactBuilder.onnx_opt`


def require(*packages: str) -> None:
    """Imports ``packages`` now: a missing one raises ModuleNotFoundError before an artifact
    is announced or half built (sympy: the ONNX Runtime optimizer needs it but reports its
    absence as a plain ImportError deep inside)."""
    import importlib
    for package in packages:
        importlib.import_module(package)


def size_mib(path: str) -> float:
    if os.path.isfile(path):
        return os.path.getsize(path) / 2**20
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files) / 2**20


def sparsify_tflite(src: str, dst: str) -> str:
    """`sparsify_bytes` of the file ``src``, written to ``dst`` (via a temporary name)."""
    with open(src, "rb") as f:
        sparse = sparsify_bytes(f.read())
    tmp = dst + ".tmp"
    with open(tmp, "wb") as f:
        f.write(sparse)
    os.replace(tmp, dst)
    return dst


def quantize_tflite_q4(src: str, dst: str) -> str:
    """AI Edge Quantizer's dynamic int4 recipe on the float TFLite ``src``, written to ``dst``
    (via a temporary name): every FULLY_CONNECTED weight (the dense kernels: embedding
    projection, Q, K, V, attention output, FFN in and out, pooler) becomes INT4, symmetric,
    one scale per output channel, with ``compute_precision`` INTEGER and no explicit
    dequantize, i.e. activations stay float in the file and XNNPACK quantizes them to int8
    per row on the fly: its QD8 x QC4W fully-connected GEMMs. The embedding tables
    (GATHER) and the attention's activation x activation BATCH_MATMULs stay float.

    A file to time, not to ship: the quantizer stores every buffer of 1 KiB or more past the
    flatbuffer, by offset (0.10), the SDK metadata's too, which
    `albert_tf.export.metadata_schema.read` does not follow, and it drops the files our export appends (the
    tokenizer model and labels: 0.9 MiB of albert_base's float file)."""
    from ai_edge_quantizer import qtyping, quantizer, recipe_manager
    recipes = recipe_manager.RecipeManager()
    recipes.add_dynamic_config(regex=".*",
                               operation_name=qtyping.TFLOperationName.FULLY_CONNECTED,
                               num_bits=4, granularity=qtyping.QuantGranularity.CHANNELWISE)
    # quantize() does not pass enable_progress_bar to its last stage (0.10), whose tqdm bar
    # then shows on any model of 100 tensors or more: its stderr is dropped.
    with contextlib.redirect_stderr(io.StringIO()):
        result = quantizer.Quantizer(src, recipes.get_quantization_recipe()).quantize(
            enable_progress_bar=False, enable_progress_report=False)
    tmp = dst + ".tmp"
    with open(tmp, "wb") as f:   # not export_model: it makes the file executable
        f.write(result.quantized_model)
    os.replace(tmp, dst)
    return dst


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
                 echo: Callable[[str], None] = print, do_lower_case: bool | None = None,
                 calibration_file: str | None = None):
        """``do_lower_case``: the casing of the model directory's tokenizer for the NNCF
        calibration text (None: read from the model directory, which imports TensorFlow;
        `build_peer` passes it to its TensorFlow-free child). ``calibration_file``: the
        int8 calibration text (a TSV as ``albert-tf-export --calibration_file`` reads;
        None: SST-2 train, `sst2_train`)."""
        self.model_dir, self.work_dir, self.data_dir, self.echo = \
            model_dir, work_dir, data_dir, echo
        self.calibration_file = calibration_file
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

    def calibration_text(self) -> str:
        """The int8 calibration TSV: ``calibration_file``, else SST-2 train."""
        return self.calibration_file or self.sst2_train()

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
            samples = calibration_samples(self.model_dir, self.calibration_text(), seq,
                                          NNCF_CALIBRATION_SENTENCES, self.do_lower_case)
            self.echo(f"  quantizing {xml} (NNCF, {len(samples)} SST-2 train sentences, "
                      f"seq {seq})")
            quantize_openvino_int8(float_xml, xml, samples)
        return xml

    def ir(self, quantization: str) -> str:
        """``model.xml`` of our OpenVINO export (`albert_tf.export.openvino`, dynamic
        ``[batch, seq]``: the runner reshapes it per shape) at ``quantization`` (``none``,
        ``int8``: NNCF on `NNCF_CALIBRATION_SENTENCES` SST-2 train sentences, as the peer)."""
        out = self.path(f"ir_{quantization}")
        if not os.path.exists(out):
            require("openvino", *(["nncf"] if quantization == "int8" else []))
            train = self.calibration_text() if quantization == "int8" else None
            self.echo(f"  exporting {out}")
            self.export("openvino", out, quantization=quantization, calibration_file=train,
                        num_calibration=NNCF_CALIBRATION_SENTENCES if train else None)
        return os.path.join(out, "model.xml")

    def ort(self, quantization: str) -> str:
        """``model.onnx`` of our ONNX export (`albert_tf.export.onnx`, dynamic
        ``[batch, seq]``) at ``quantization`` (``none``, ``int8``: ONNX Runtime dynamic)."""
        out = self.path(f"ort_{quantization}")
        if not os.path.exists(out):
            require("onnx", "onnxruntime")
            self.echo(f"  exporting {out}")
            self.export("onnx", out, quantization=quantization)
        return os.path.join(out, "model.onnx")

    def export(self, format_name: str, out: str, **options) -> str:
        """Our export of the model directory in ``format_name`` (`albert_tf.export.formats`:
        the one interface every format shares) at ``out``."""
        from albert_tf.export import formats
        return formats.export(format_name, self.model_dir, out, formats.ExportOptions(**options))

    def saved_model(self) -> str:
        out = self.path("saved_model", "encoder", "1")
        if not os.path.exists(out):
            self.echo(f"  exporting {out}")
            self.export("saved_model", self.path("saved_model"), name="encoder", version=1)
        return out

    def _export_tflite(self, out: str, quantization: str, seq_lengths: list[int],
                       batch: int) -> None:
        if os.path.exists(out):
            return
        self.echo(f"  converting {out}")
        # Calibrate on real text: SST-2 *train* sentences, enough for at least two
        # batches per signature (the calibration texts are spread over the buckets).
        from albert_tf.export import quantization as recipes
        calibrated = recipes.get(quantization).needs_calibration
        self.export("tflite", out, quantization=quantization, seq_lengths=tuple(seq_lengths),
                    batch_size=batch,
                    num_calibration=max(64, 2 * batch * len(seq_lengths)) if calibrated else None,
                    calibration_file=self.calibration_text() if calibrated else None)

    def tflite(self, quantization: str, shapes: list[tuple[int, int]]) -> str:
        """A path template ``.../b{batch}_s{seq}/model.tflite``, one export per shape."""
        template = self.path(f"tflite_{quantization}", "b{batch}_s{seq}")
        for batch, seq in shapes:
            self._export_tflite(template.format(batch=batch, seq=seq), quantization, [seq], batch)
        return os.path.join(template, "model.tflite")

    def tflite_sparse(self, quantization: str, shapes: list[tuple[int, int]]) -> str:
        """`tflite` at ``quantization`` with its weights stored sparse, the way
        ``Optimize.EXPERIMENTAL_SPARSITY`` stores them (`sparsify_tflite`): a template
        ``.../b{batch}_s{seq}/model_sparse.tflite``."""
        dense = self.tflite(quantization, shapes)
        template = os.path.join(os.path.dirname(dense), "model_sparse.tflite")
        for batch, seq in shapes:
            out = template.format(batch=batch, seq=seq)
            if not os.path.exists(out):
                self.echo(f"  sparsifying {out}")
                sparsify_tflite(dense.format(batch=batch, seq=seq), out)
        return template

    def tflite_q4(self, shapes: list[tuple[int, int]]) -> str:
        """`tflite` (float) with 4-bit per-channel FULLY_CONNECTED weights
        (`quantize_tflite_q4`): a template ``.../b{batch}_s{seq}/model_q4.tflite``."""
        require("ai_edge_quantizer")   # before the float export is announced
        dense = self.tflite("none", shapes)
        template = os.path.join(os.path.dirname(dense), "model_q4.tflite")
        for batch, seq in shapes:
            out = template.format(batch=batch, seq=seq)
            if not os.path.exists(out):
                self.echo(f"  quantizing {out} (AI Edge Quantizer: int4 per-channel "
                          "FULLY_CONNECTED weights, dynamic int8 activations)")
                quantize_tflite_q4(dense.format(batch=batch, seq=seq), out)
        return template

    def tflite_buckets(self, quantization: str, batch: int, seq_lengths: list[int]) -> str:
        """One export directory with a static ``[batch, seq]`` signature ``seq_<n>`` per
        sequence-length bucket (a single bucket is named ``serving_default``)."""
        seq_lengths = bucket_lengths(seq_lengths)
        out = self.path(f"tflite_{quantization}",
                        f"b{batch}_buckets_" + "-".join(str(s) for s in seq_lengths))
        self._export_tflite(out, quantization, seq_lengths, batch)
        return out

    def artifact(self, runtime: str, shapes: list[tuple[int, int]]) -> tuple[str, str]:
        """``(worker runtime, artifact path or template)`` of the deployment target named
        ``runtime`` (`albert_tf.benchmark.targets`), built here if not yet on disk."""
        from albert_tf.benchmark import targets
        target = targets.get(runtime)
        return target.worker, target.build(self, shapes)
