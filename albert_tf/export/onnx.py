"""ONNX export for ONNX Runtime: our encoder written as ONNX Runtime's fused operators.

    export_onnx("runs/sst2", "ort/sst2")                        # float32, dynamic [batch, seq]
    export_onnx("runs/sst2", "ort/sst2_int8", quantization="int8")   # dynamic-range int8

Why this format: on x86 servers without VNNI (AVX2 + FMA only, e.g. AMD Zen 3), ONNX Runtime's
int8 GEMMs (MLAS) are the fastest maintained int8 kernels we measured for these models, well
ahead of XNNPACK's (LiteRT) on the same machine (docs/cpu-benchmark.md). TFLite stays the edge
format; this file is for servers.

The graph is written from the model's weights (no tracing, no exporter in between), one node
per fused operator that ONNX Runtime's CPU provider runs as one kernel:

* embeddings: ``Gather`` word / type rows + the first ``S`` position rows, ``LayerNormalization``
  (opset 17), and the E -> H projection (``MatMul`` + ``Add``) when E != H;
* each layer: ``com.microsoft.Attention`` (Q, K and V as one ``[H, 3A]`` weight, the raw
  ``input_mask`` as its mask, masked logits at ``MASK_ADDER``), the output ``MatMul``,
  ``com.microsoft.SkipLayerNormalization`` (residual, bias and LayerNorm in one), the FFN
  ``MatMul`` with ``com.microsoft.FastGelu`` (tanh GELU with its bias) / ``BiasGelu`` (exact
  GELU) / ``Relu``, the second ``MatMul`` and a second ``SkipLayerNormalization``;
* pooler (``Gather`` of ``[CLS]``, ``MatMul``, ``Add``, ``Tanh``) and the head.

**Shared weights are stored once**: every layer of a hidden group references the same
initializers, so an ALBERT file holds one block (the Hugging Face -> ONNX route, fused by ONNX
Runtime's optimizer, writes a copy per layer). ``quantization="int8"``: ONNX Runtime's dynamic
quantizer (``quantize_dynamic``: weights int8 per tensor, activations quantized per call;
``Attention`` becomes ``QAttention``, ``MatMul`` becomes ``MatMulInteger``), which quantizes
each shared initializer once.

Heads: ``pretraining`` model directories (and encoders) give ``sequence_output`` and
``pooled_output``; ``classification`` gives ``probabilities`` and ``label_id``; ``regression``
``value``. Other heads are refused with the formats that export them. Inputs: int32
``input_word_ids``, ``input_mask``, ``input_type_ids`` ``[batch, seq]`` (dynamic, or static
with ``seq_length`` / ``batch_size``). No tokenizer inside: raw text goes through our Python
tokenizer (`albert_tf.runtime.onnx.OnnxClassifier`), as for OpenVINO.

The export directory (written to a temporary sibling and moved into place): ``model.onnx``,
``metadata.json`` (format ``albert-tf-onnx``), the vocabulary and ``labels.txt`` for heads
with labels. Importing this module imports neither TensorFlow nor ONNX.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Sequence

import numpy as np

import albert_tf.heads.registry as heads
from albert_tf.outputs import export_kind
from albert_tf.export import metadata as meta_lib
from albert_tf.export import server_checks as checks

_error = checks.export_error

MODEL_FILE = meta_lib.ONNX_MODEL_FILE              # model.onnx
KIND = export_kind("onnx")                         # what its output marker records
SIGNATURE = "serving_default"
OPSET = 17                  # LayerNormalization
CONTRIB = "com.microsoft"   # Attention, SkipLayerNormalization, FastGelu, BiasGelu
PIP_FIX = "pip install 'albert-tf[onnx]' (onnx and onnxruntime)"
ACTIVATIONS = {"gelu": "FastGelu", "gelu_tanh": "FastGelu", "gelu_new": "FastGelu",
               "gelu_exact": "BiasGelu", "relu": "Relu"}


def require(*packages: str) -> None:
    """Imports ``packages`` (``onnx``, ``onnxruntime``); a one-line `ExportError` naming
    ``pip install 'albert-tf[onnx]'`` when one is not installed."""
    checks.require("ONNX", PIP_FIX, *packages)


class Graph:
    """Nodes and initializers of one ONNX graph; each initializer is added once by name. A
    head adds its outputs to it (`albert_tf.heads.base.Head.onnx_graph`)."""

    def __init__(self):
        self.nodes: list = []
        self.initializers: dict[str, Any] = {}

    def weight(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper
        if name not in self.initializers:
            self.initializers[name] = numpy_helper.from_array(np.array(value, order="C"), name)
        return name

    def node(self, op: str, inputs: Sequence[str], output: str, domain: str = "",
             **attributes) -> str:
        from onnx import helper
        self.nodes.append(helper.make_node(op, list(inputs), [output], name=output,
                                           domain=domain, **attributes))
        return output


def _weights(layer) -> dict[str, np.ndarray]:
    """``{"kernel": ..., "bias": ...}`` (or ``gamma``/``beta``, ``embeddings``) of a layer."""
    return {w.name.split("/")[-1].split(":")[0]: w.numpy() for w in layer.weights}


def dense(g: Graph, x: str, layer, name: str) -> str:
    """``x @ kernel + bias`` of an unshared Dense layer (its node names come from ``name``)."""
    w = _weights(layer)
    y = g.node("MatMul", [x, g.weight(f"{name}/kernel", w["kernel"])], f"{name}/matmul")
    if "bias" in w:
        y = g.node("Add", [y, g.weight(f"{name}/bias", w["bias"])], f"{name}/out")
    return y


def _layer_norm(g: Graph, x: str, layer, name: str, eps: float) -> str:
    w = _weights(layer)
    return g.node("LayerNormalization", [x, g.weight(f"{name}/gamma", w["gamma"]),
                                         g.weight(f"{name}/beta", w["beta"])],
                  f"{name}/out", axis=-1, epsilon=float(eps))


def _skip_layer_norm(g: Graph, x: str, skip: str, bias_layer, ln_layer, name: str,
                     eps: float) -> str:
    """``LayerNorm(x + bias + skip)`` as one SkipLayerNormalization."""
    ln = _weights(ln_layer)
    bias = _weights(bias_layer)["bias"]
    return g.node("SkipLayerNormalization",
                  [x, skip, g.weight(f"{name}/layer_norm/gamma", ln["gamma"]),
                   g.weight(f"{name}/layer_norm/beta", ln["beta"]),
                   g.weight(f"{name}/output_dense/bias", bias)],
                  f"{name}/out", domain=CONTRIB, epsilon=float(eps))


def _embeddings(g: Graph, model, config) -> str:
    """``[B, S, H]`` after embeddings, LayerNorm and (E != H) the projection."""
    layer = model.get_layer("embeddings")
    words = g.node("Gather", [g.weight("embeddings/word", layer.embedding_table.numpy()),
                              "input_word_ids"], "embeddings/words")             # [B, S, E]
    types = g.node("Gather", [g.weight("embeddings/type",
                                       layer.token_type_embeddings.embeddings.numpy()),
                              "input_type_ids"], "embeddings/types")
    seq = g.node("Shape", ["input_word_ids"], "embeddings/seq", start=1, end=2)   # [1]
    positions = g.node("Slice", [g.weight("embeddings/position", layer.position_embeddings.numpy()),
                                 g.weight("const/zero", np.array([0], np.int64)), seq,
                                 g.weight("const/axis0", np.array([0], np.int64))],
                       "embeddings/positions")                                   # [S, E]
    x = g.node("Add", [g.node("Add", [words, types], "embeddings/sum"), positions],
               "embeddings/all")
    x = _layer_norm(g, x, layer.layer_norm, "embeddings/layer_norm", config.layer_norm_eps)
    if config.embedding_size != config.hidden_size:
        x = dense(g, x, model.get_layer("embedding_projection"), "embedding_projection")
    return x


def _attention(g: Graph, x: str, block, name: str, config, index: int) -> str:
    """One post-LN attention sublayer: ``LayerNorm(x + Dense(Attention(x)))``."""
    from albert_tf.layers.attention import MASK_ADDER
    q, k, v = (_weights(layer) for layer in (block.query, block.key, block.value))
    qkv_w = g.weight(f"{name}/qkv/kernel",
                     np.concatenate([q["kernel"], k["kernel"], v["kernel"]], axis=1))
    qkv_b = g.weight(f"{name}/qkv/bias", np.concatenate([q["bias"], k["bias"], v["bias"]]))
    # qkv_hidden_sizes only when heads were pruned (N * D != H): ONNX Runtime's quantizer
    # leaves an Attention with that attribute in float (no QAttention for it).
    sizes = ({} if block.all_head_size == config.hidden_size
             else {"qkv_hidden_sizes": [block.all_head_size] * 3})
    context = g.node("Attention", [x, qkv_w, qkv_b, "input_mask"], f"layer_{index}/{name}/context",
                     domain=CONTRIB, num_heads=int(block.num_heads),
                     mask_filter_value=float(MASK_ADDER), **sizes)
    out = g.node("MatMul", [context, g.weight(f"{name}/output_dense/kernel",
                                             _weights(block.output_dense)["kernel"])],
                 f"layer_{index}/{name}/projected")
    return _skip_layer_norm(g, out, x, block.output_dense, block.layer_norm,
                            f"layer_{index}/{name}", config.layer_norm_eps)


def _ffn(g: Graph, x: str, block, name: str, config, index: int) -> str:
    """One post-LN feed-forward sublayer: ``LayerNorm(x + Dense(act(Dense(x))))``."""
    act = ACTIVATIONS[config.hidden_act]
    inner = _weights(block.intermediate)
    h = g.node("MatMul", [x, g.weight(f"{name}/intermediate/kernel", inner["kernel"])],
               f"layer_{index}/{name}/intermediate")
    bias = g.weight(f"{name}/intermediate/bias", inner["bias"])
    if act == "Relu":
        h = g.node("Relu", [g.node("Add", [h, bias], f"layer_{index}/{name}/biased")],
                   f"layer_{index}/{name}/activation")
    else:
        h = g.node(act, [h, bias], f"layer_{index}/{name}/activation", domain=CONTRIB)
    out = g.node("MatMul", [h, g.weight(f"{name}/output_dense/kernel",
                                       _weights(block.output_dense)["kernel"])],
                 f"layer_{index}/{name}/projected")
    return _skip_layer_norm(g, out, x, block.output_dense, block.layer_norm,
                            f"layer_{index}/{name}", config.layer_norm_eps)


def check_exportable(source) -> None:
    """An `ExportError` naming the fix when ``source`` cannot be written as this graph."""
    config, head = source.config, source.head
    if not head.onnx_outputs:
        raise _error(f"--format=onnx exports {sorted(heads.onnx_heads())} models; this one "
                     f"has a {head.name!r} head: export it with --format=tflite or "
                     "--format=openvino.")
    if config.hidden_act not in ACTIVATIONS:
        raise _error(f"--format=onnx: hidden_act {config.hidden_act!r} has no fused ONNX "
                     f"Runtime operator here (supported: {sorted(ACTIVATIONS)}); export with "
                     "--format=openvino or --format=tflite.")
    from albert_tf.networks.encoder import sublayer_name
    from albert_tf.layers import FeedForwardBlock, SelfAttentionBlock
    for i in range(config.num_hidden_layers):
        for k in range(config.inner_group_num):
            for kind, cls in (("attention", SelfAttentionBlock), ("ffn", FeedForwardBlock)):
                name = sublayer_name(config, i, kind, k)
                try:
                    layer = source.model.get_layer(name)
                except ValueError:
                    layer = None
                if not isinstance(layer, cls):
                    raise _error(f"--format=onnx: the model has no plain {cls.__name__} "
                                 f"{name!r} (a quantization-aware or pruning-wrapped model?); "
                                 "strip the wrappers first (albert-tf-compress writes a "
                                 "plain best/ directory) or export with --format=tflite.")


def __getattr__(name: str):
    """``HEAD_GRAPHS`` (head class -> its output graph builder): read from the heads'
    ``onnx_graph`` when asked (kept for existing imports)."""
    if name == "HEAD_GRAPHS":
        return {type(head): head.onnx_graph for head in heads.every_head().values()
                if head.onnx_outputs}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_graph(source, seq_length: int | None = None, batch_size: int | None = None):
    """The float32 ``onnx.ModelProto`` of ``source`` (an `ExportSource`)."""
    from onnx import TensorProto, helper
    from albert_tf.networks.encoder import INPUT_NAMES, sublayer_name
    check_exportable(source)
    model, config = source.model, source.config
    g = Graph()
    x = _embeddings(g, model, config)
    for i in range(config.num_hidden_layers):
        for k in range(config.inner_group_num):
            attention_name = sublayer_name(config, i, "attention", k)
            ffn_name = sublayer_name(config, i, "ffn", k)
            x = _attention(g, x, model.get_layer(attention_name), attention_name, config, i)
            x = _ffn(g, x, model.get_layer(ffn_name), ffn_name, config, i)
    sequence = g.node("Identity", [x], "sequence_output")
    cls = g.node("Gather", [sequence, g.weight("const/index0", np.array(0, np.int64))],
                 "pooler/cls", axis=1)                                           # [B, H]
    pooled = g.node("Tanh", [dense(g, cls, model.get_layer("pooler").dense, "pooler/dense")],
                    "pooled")
    dims = [batch_size or "batch"]
    outputs = source.head.onnx_graph(g, pooled, source, dims, seq_length or "seq")
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT32,
                                            dims + [seq_length or "seq"])
              for name in INPUT_NAMES]
    graph = helper.make_graph(g.nodes, f"albert_tf_{source.head.name}", inputs, outputs,
                              initializer=list(g.initializers.values()))
    proto = helper.make_model(graph, producer_name="albert-tf", opset_imports=[
        helper.make_opsetid("", OPSET), helper.make_opsetid(CONTRIB, 1)])
    proto.ir_version = min(proto.ir_version, 9)   # readable by every ONNX Runtime >= 1.16
    return proto


def quantize_int8(path: str, output: str) -> str:
    """ONNX Runtime dynamic int8 of the float graph at ``path`` (weights per tensor; contrib
    operators carry no type inference, so unknown tensors are declared float32)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(path, output, weight_type=QuantType.QInt8, per_channel=False,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return output


def _io(value_info) -> dict[str, Any]:
    from onnx import helper
    tensor = value_info.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
    return {"dtype": str(helper.tensor_dtype_to_np_dtype(tensor.elem_type)), "shape": shape}


def export_onnx(model_dir: str, output: str, quantization: str = "none",
                seq_length: int | None = None, batch_size: int | None = None,
                overwrite: bool = False, vocab_file: str | None = None, source=None) -> str:
    """Writes ``model_dir`` as the ONNX export directory ``output``; returns it.

    ``quantization``: ``"none"`` (float32) or ``"int8"`` (ONNX Runtime dynamic int8: no
    calibration data). ``seq_length`` / ``batch_size``: static input dimensions (None:
    dynamic). Every problem is a one-line `ExportError`.
    """
    from albert_tf import outputs
    from albert_tf.export.common import export_inputs, load_source
    checks.check_request("onnx", quantization, batch_size)
    inputs = export_inputs(model_dir, vocab_file)
    outputs.check_output(output, kind=KIND, inputs=inputs, overwrite=overwrite)
    require("onnx", *(["onnxruntime"] if quantization == "int8" else []))
    import onnx

    source = source or load_source(model_dir, vocab_file)
    checks.check_seq_length(seq_length, source.config.max_position_embeddings)
    proto = build_graph(source, seq_length, batch_size)
    with outputs.staged_output(output, kind=KIND, inputs=inputs,
                               overwrite=overwrite) as tmp:
        path = os.path.join(tmp, MODEL_FILE)
        if quantization == "int8":
            float_path = os.path.join(tmp, "float.onnx")
            onnx.save(proto, float_path)
            quantize_int8(float_path, path)
            os.remove(float_path)
        else:
            onnx.save(proto, path)
        written = onnx.load(path, load_external_data=False)
        ops = Counter(node.op_type for node in written.graph.node)
        info = dict(source.task_info.__dict__)
        meta = {"format": meta_lib.ONNX_FORMAT, "format_version": meta_lib.FORMAT_VERSION,
                "model_file": MODEL_FILE,
                **meta_lib.task_metadata(info, source.vocab_file),
                "quantization": quantization,
                "signatures": {SIGNATURE: {
                    "inputs": {i.name: _io(i) for i in written.graph.input},
                    "outputs": {o.name: _io(o) for o in written.graph.output},
                    "batch_size": batch_size, "seq_length": seq_length}},
                "text_inputs": list(source.text_inputs),
                "onnx_opset": OPSET,
                "ops": {"num_ops": sum(ops.values()), "by_type": dict(sorted(ops.items()))},
                "model_bytes": os.path.getsize(path)}
        meta_lib.write_files(tmp, meta, source.vocab_file)
    return output
