"""Peer artifacts on the same weights: Hugging Face PyTorch, ONNX Runtime and OpenVINO models.

Our model directory is exported to a Hugging Face directory (`albert_tf.interop`),
which PyTorch loads directly; ONNX files are exported from that PyTorch model and

* quantized with ONNX Runtime's dynamic int8 quantizer (`quantize_onnx_dynamic`);
* fused by ONNX Runtime's transformer optimizer (`optimize_onnx`: Attention,
  SkipLayerNormalization, FastGelu, ...), then optionally quantized the same way;
* converted to OpenVINO IR (`export_openvino`), and quantized to int8 by NNCF
  post-training quantization calibrated on real task text (`quantize_openvino_int8`,
  `calibration_samples`).

Every file is written atomically (a temporary name, then `os.replace`), so an
interrupted run never leaves a half-written artifact that a later run would reuse.
"""

from __future__ import annotations

import json
import os

import numpy as np

# The ONNX input names of `export_onnx` and our packed-feature names, in that order.
ONNX_INPUTS = (("input_ids", "input_word_ids"), ("attention_mask", "input_mask"),
               ("token_type_ids", "input_type_ids"))
# The fused operators of ONNX Runtime's transformer optimizer that the benchmark reports.
FUSIONS = ("Attention", "MultiHeadAttention", "SkipLayerNormalization",
           "EmbedLayerNormalization", "Gelu", "FastGelu", "BiasGelu")


def export_onnx(hf_dir: str, path: str, opset: int = 17,
                attn_implementation: str | None = None) -> str:
    """Exports the HF encoder to ONNX with dynamic batch and sequence axes.

    ``attn_implementation``: `transformers`' attention code to trace (None: its default,
    ``sdpa``, which the exporter decomposes into MatMul/Softmax/Where/IsNaN nodes; ``eager``:
    the explicit MatMul/Div/Add-mask/Softmax/MatMul pattern).
    """
    import torch
    import transformers

    class Encoder(torch.nn.Module):
        """Keyword call with exactly our three inputs: tracing the HF model with
        positional inputs collides with some forward signatures (transformers 5
        BertModel: "multiple values for argument 'use_cache'")."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids, return_dict=True)
            return out.last_hidden_state, out.pooler_output

    kwargs = {"attn_implementation": attn_implementation} if attn_implementation else {}
    model = Encoder(transformers.AutoModel.from_pretrained(hf_dir, **kwargs).eval()).eval()
    ids = torch.ones((1, 16), dtype=torch.int64)
    names = [name for name, _ in ONNX_INPUTS]
    axes = {name: {0: "batch", 1: "seq"} for name in names}
    axes["last_hidden_state"] = {0: "batch", 1: "seq"}
    axes["pooler_output"] = {0: "batch"}
    tmp = path + ".tmp.onnx"
    with torch.inference_mode():
        torch.onnx.export(model, (ids, ids, torch.zeros_like(ids)), tmp, input_names=names,
                          output_names=["last_hidden_state", "pooler_output"],
                          dynamic_axes=axes, opset_version=opset, dynamo=False)
    os.replace(tmp, path)
    return path


def quantize_onnx_dynamic(path: str, output: str, per_channel: bool = False,
                          optimized: bool = False) -> str:
    """ONNX Runtime dynamic-range int8 (weights int8, activations quantized per call).

    ``optimized``: ``path`` is an `optimize_onnx` graph. The quantizer needs the element type
    of every tensor it quantizes, and the contrib operators of such a graph (Attention,
    SkipLayerNormalization, FastGelu, ...) have no ONNX type inference, so it fails ("Unable
    to find data type for weight_name=...") unless told that unknown tensors are float32
    (``DefaultTensorType``), which they are in these graphs.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic
    extra = {}
    if optimized:
        import onnx
        extra["DefaultTensorType"] = onnx.TensorProto.FLOAT
    tmp = output + ".tmp.onnx"
    quantize_dynamic(path, tmp, weight_type=QuantType.QInt8, per_channel=per_channel,
                     extra_options=extra)
    os.replace(tmp, output)
    return output


def optimize_onnx(path: str, output: str, num_heads: int, hidden_size: int) -> dict[str, int]:
    """ONNX Runtime's transformer optimizer (BERT fusions) on a float export; writes the
    optimized model to ``output`` and ``fusions_path(output)``; returns the fused-operator
    counts (`FUSIONS` always, other fused operators where nonzero).

    ``opt_level=0``: only the optimizer's Python fusions; ONNX Runtime applies its own graph
    optimizations when a session is created (`albert_tf.runtime.sessions.OnnxSession`).
    The fused Attention operator takes one concatenated QKV weight per layer, so an ALBERT
    graph, whose layers share one set of weights, gets a copy of that QKV weight per fused
    layer (the file grows; the other shared weights stay shared).
    """
    from onnxruntime.transformers.optimizer import optimize_model
    model = optimize_model(path, model_type="bert", num_heads=num_heads, hidden_size=hidden_size,
                           opt_level=0, use_gpu=False)
    statistics = model.get_fused_operator_statistics()
    fusions = {name: int(statistics.get(name, 0)) for name in FUSIONS}
    fusions.update({k: int(v) for k, v in statistics.items() if v and k not in fusions})
    tmp = output + ".tmp.onnx"
    model.save_model_to_file(tmp)
    os.replace(tmp, output)
    _write_json(fusions_path(output), {"source": os.path.basename(path),
                                       "fused_operators": fusions})
    return fusions


def fusions_path(optimized: str) -> str:
    """The sidecar JSON of an optimized ONNX model: its fused-operator counts."""
    return os.path.splitext(optimized)[0] + ".fusions.json"


def read_fusions(optimized: str) -> dict[str, int]:
    with open(fusions_path(optimized), encoding="utf-8") as f:
        return json.load(f)["fused_operators"]


def describe_fusions(fusions: dict[str, int], num_layers: int) -> str:
    """``Attention 12, SkipLayerNormalization 24, ...``, saying how many of the
    ``num_layers`` encoder layers did *not* get a fused Attention operator."""
    text = ", ".join(f"{name} {count}" for name, count in fusions.items())
    attention = fusions.get("Attention", 0) + fusions.get("MultiHeadAttention", 0)
    if attention < num_layers:
        text += (f" (Attention NOT fused in {num_layers - attention} of {num_layers} layers: "
                 "those run the unfused MatMul/Softmax graph)")
    return text


def _write_json(path: str, content: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(content, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def _save_openvino(model, xml: str) -> str:
    """Saves IR atomically: ``.xml`` and ``.bin`` under temporary names, then both
    renamed, the ``.bin`` first (a present ``.xml`` means a complete pair)."""
    import openvino as ov
    tmp = os.path.splitext(xml)[0] + ".tmp.xml"
    ov.save_model(model, tmp, compress_to_fp16=False)
    os.replace(os.path.splitext(tmp)[0] + ".bin", os.path.splitext(xml)[0] + ".bin")
    os.replace(tmp, xml)
    return xml


def export_openvino(onnx_path: str, xml: str) -> str:
    """OpenVINO IR (float32 weights: ``compress_to_fp16=False``) of an ONNX export, with its
    dynamic ``[batch, seq]`` inputs (`albert_tf.runtime.sessions.OpenVinoSession` reshapes
    it to each static shape it times)."""
    import openvino as ov
    os.makedirs(os.path.dirname(os.path.abspath(xml)), exist_ok=True)
    return _save_openvino(ov.convert_model(onnx_path), xml)


def calibration_samples(model_dir: str, train_tsv: str, seq: int, num: int = 128,
                        do_lower_case: bool | None = None) -> list[dict[str, np.ndarray]]:
    """The first ``num`` sentences of a ``sentence<TAB>label`` TSV (SST-2 *train*), tokenized
    with the model directory's own tokenizer (its recorded casing, or ``do_lower_case`` when
    given: reading the casing imports TensorFlow, which a peer's build process must not) and
    packed as ``[CLS] sentence [SEP]`` padded to ``seq``: ``[1, seq]`` int64 inputs named as
    the ONNX inputs (`ONNX_INPUTS`)."""
    from albert_tf.data.task_data import read_examples
    from albert_tf.text.vocabulary import load_tokenizer
    if do_lower_case is None:
        from albert_tf.checkpoints import recorded_casing
        casing = recorded_casing(model_dir)
        do_lower_case = True if casing is None else casing
    tokenizer = load_tokenizer(model_dir, do_lower_case=do_lower_case)
    examples = read_examples(train_tsv, ["sentence"], None, has_header=True)[:num]
    if not examples:
        raise ValueError(f"{train_tsv}: no sentences (expected a 'sentence' header column).")
    samples = []
    for example in examples:
        packed = tokenizer.pack(example.text_a, max_seq_length=seq)
        samples.append({name: np.asarray([packed[ours]], np.int64) for name, ours in ONNX_INPUTS})
    return samples


def quantize_openvino_int8(xml: str, output: str, samples: list[dict[str, np.ndarray]]) -> str:
    """NNCF post-training int8 (`nncf.quantize`, transformer preset: FakeQuantize on the
    MatMul inputs and weights, LayerNorm/Softmax/GELU left float) of an IR, calibrated on
    ``samples`` (all of them); saved as IR.

    An ALBERT int8 IR is larger than its float IR: NNCF quantizes each MatMul's weight on its
    own, so the one weight set that ALBERT's layers share becomes one int8 copy per layer
    (albert_base: 12 int8 copies of each 768x768 / 768x3072 matrix, 86.8 MiB of IR against
    44.9 MiB float; bert_base: 105.6 against 417.5).
    """
    import openvino as ov

    from albert_tf.export.openvino import quantize_int8
    return _save_openvino(quantize_int8(ov.Core().read_model(xml), samples), output)
