"""``tflite_q4`` (`albert_tf.benchmark.targets`): our float TFLite export with 4-bit
per-channel FULLY_CONNECTED weights (AI Edge Quantizer, `albert_tf.benchmark.artifacts.
quantize_tflite_q4`), on the tiny ALBERT finetuned on real SST-2 train text
(`tests/sst2_tiny.py`) and its real dev set: the file holds INT4 weights, one symmetric
scale per output channel, at 1/8 of the float bytes; XNNPACK takes them; and the accuracy
gate: its dev labels and logits stay close to the float export's."""

from __future__ import annotations

import collections

import numpy as np
import pytest

pytest.importorskip("ai_edge_quantizer")

import sst2_tiny  # noqa: E402
from sst2_tiny import SEQ, pack  # noqa: E402

# The tiny SST-2 classifier's fixtures (tests/sst2_tiny.py).
dev, model_dir = sst2_tiny.dev, sst2_tiny.model_dir

# The accuracy gate. Measured on the 872 dev sentences (this classifier, Zen 4, XNNPACK):
# float 72.48% dev accuracy, 4-bit 71.79% (6 labels of 872 flipped: 99.31% agree), logits
# at most 0.027 from the float export's (mean 0.0045; its logits reach 0.94 and the median
# margin between the two is 0.62); calibrated int8 on the same file: 72.48%, 2 flips, 0.019.
# The bounds leave room for another CPU's XNNPACK kernels and another training run while a
# wrong scale, a dropped channel or unsigned nibbles (logits off by O(1), labels near chance)
# fail them. A gate on the path on a 32-wide model, not a promise for albert_base: its
# random-weight output drifts further (docs/results/sparse-kernels.md, "4-bit weights instead of zeros").
Q4_AGREEMENT = 0.97
Q4_ACCURACY_DROP = 0.02
Q4_MAX_LOGIT_ERROR = 0.1


@pytest.fixture(scope="module")
def exports(model_dir, data_dir, tmp_path_factory):
    """(float, 4-bit) ``.tflite`` paths at batch 1, seq `SEQ`, through the benchmark's
    artifact builder (the path ``albert-tf-benchmark --runtimes=tflite_q4`` takes)."""
    from albert_tf.benchmark import targets
    from albert_tf.benchmark.artifacts import ArtifactBuilder
    builder = ArtifactBuilder(model_dir, str(tmp_path_factory.mktemp("q4") / "work"), data_dir,
                              echo=lambda s: None)
    worker, template = builder.artifact("tflite_q4", [(1, SEQ)])
    assert worker == "tflite" and targets.get("tflite_q4").arithmetic == "q4"
    return (builder.tflite("none", [(1, SEQ)]).format(batch=1, seq=SEQ),
            template.format(batch=1, seq=SEQ))


def _fully_connected_weights(path: str) -> list:
    """``(tensor, its bytes, buffer index)`` of each FULLY_CONNECTED op's weight, in graph
    order (`read_model` also reads the buffers the quantizer stores past the flatbuffer)."""
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils
    model = flatbuffer_utils.read_model(path)
    graph = model.subgraphs[0]
    weights = []
    for op in graph.operators:
        code = model.operatorCodes[op.opcodeIndex]
        if max(code.builtinCode, code.deprecatedBuiltinCode) == \
                schema.BuiltinOperator.FULLY_CONNECTED:
            tensor = graph.tensors[op.inputs[1]]
            data = np.frombuffer(bytes(model.buffers[tensor.buffer].data), np.uint8)
            weights.append((tensor, data, tensor.buffer))
    return weights


def _unpack_int4(data: np.ndarray, count: int) -> np.ndarray:
    """TFLite's packed INT4: two per byte, the low nibble first, two's complement."""
    nibbles = np.stack([data & 0x0F, data >> 4], axis=-1).reshape(-1)[:count].astype(np.int8)
    return np.where(nibbles > 7, nibbles - 16, nibbles)


@pytest.mark.slow
def test_the_weights_are_int4_per_channel_at_an_eighth_of_the_float_bytes(exports):
    import os

    from ai_edge_litert import schema_py_generated as schema
    float_path, q4_path = exports
    dense, quantized = _fully_connected_weights(float_path), _fully_connected_weights(q4_path)
    # The embedding projection, Q, K, V, attention output, FFN in and out (ALBERT's shared
    # block: one weight per role, referenced by every layer), the pooler, the classifier.
    assert len(quantized) == len(dense) >= 9
    float_bytes = int4_bytes = 0
    seen = set()
    for (f_tensor, f_data, _), (q_tensor, q_data, buffer) in zip(dense, quantized):
        assert q_tensor.type == schema.TensorType.INT4, q_tensor.name
        rows, cols = q_tensor.shape
        scale = np.asarray(q_tensor.quantization.scale, np.float32)
        assert len(scale) == rows and q_tensor.quantization.quantizedDimension == 0
        assert not np.any(q_tensor.quantization.zeroPoint)   # symmetric
        assert len(q_data) == (rows * cols + 1) // 2         # two weights a byte
        w = f_data.view(np.float32).reshape(rows, cols)
        q = _unpack_int4(q_data, rows * cols).reshape(rows, cols)
        # Round to nearest on one scale per output row: within half a step of the float.
        assert np.all(np.abs(w - scale[:, None] * q) <= scale[:, None] * 0.5001 + 1e-7)
        assert np.abs(q).max() >= 7          # each row's range is used, not a wider one
        if buffer not in seen:
            seen.add(buffer)
            float_bytes += w.nbytes
            int4_bytes += len(q_data)
    assert int4_bytes / float_bytes == pytest.approx(1 / 8, rel=0.01)
    # The file shrinks by at least the kernels' 7/8 (the float embedding table stays: no
    # 4-bit recipe for GATHER; the quantizer also drops the tokenizer our export appends).
    saved = os.path.getsize(float_path) - os.path.getsize(q4_path)
    assert saved >= 0.95 * (float_bytes - int4_bytes), (saved, float_bytes, int4_bytes)


@pytest.mark.slow
def test_xnnpack_takes_the_4_bit_fully_connected_ops(exports):
    """XNNPACK's partitions are the same with INT4 weights as with float ones: a
    FULLY_CONNECTED it refused would stay on the builtin kernels and split the graph into
    more delegate nodes (albert-tf-benchmark --profile shows its QD8 x QC4W GEMMs)."""
    from albert_tf.runtime.tflite import make_interpreter

    def ops(path):
        interpreter = make_interpreter(path, 1)
        interpreter.allocate_tensors()   # applies the delegate
        return collections.Counter(o["op_name"] for o in interpreter._get_ops_details())

    float_path, q4_path = exports
    assert ops(q4_path)["DELEGATE"] == ops(float_path)["DELEGATE"] >= 1


def _logits(path: str, feats: dict[str, np.ndarray]) -> np.ndarray:
    from albert_tf.runtime.tflite import make_interpreter
    interpreter = make_interpreter(path, 2)
    interpreter.allocate_tensors()
    inputs = {d["name"]: d for d in interpreter.get_input_details()}
    output = interpreter.get_output_details()[0]
    rows = []
    for i in range(len(feats["input_word_ids"])):
        for name, value in feats.items():
            detail = inputs[next(k for k in inputs if name in k)]
            interpreter.set_tensor(detail["index"], value[i:i + 1].astype(detail["dtype"]))
        interpreter.invoke()
        rows.append(interpreter.get_tensor(output["index"]).reshape(-1))
    return np.array(rows)


@pytest.mark.slow
def test_the_accuracy_gate_on_sst2_dev(exports, dev, data_dir):
    from albert_tf.benchmark.end_to_end import load_sst2_dev, sst2_dev_file
    _, labels = load_sst2_dev(sst2_dev_file(data_dir))
    labels = np.array([int(label) for label in labels])
    feats = pack(dev, SEQ)
    exact, q4 = (_logits(path, feats) for path in exports)
    assert exact.shape == (len(dev), 2)
    error = np.abs(q4 - exact).max()
    assert 0 < error < Q4_MAX_LOGIT_ERROR, error
    agreement = (q4.argmax(-1) == exact.argmax(-1)).mean()
    assert agreement >= Q4_AGREEMENT, agreement
    accuracy = {name: (x.argmax(-1) == labels).mean() for name, x in (("float", exact),
                                                                       ("q4", q4))}
    assert accuracy["float"] > 0.65, accuracy          # a trained classifier
    assert accuracy["q4"] >= accuracy["float"] - Q4_ACCURACY_DROP, accuracy
