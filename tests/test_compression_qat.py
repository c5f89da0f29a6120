"""QAT: QuantizeConfigs for the ALBERT blocks, per-depth ranges, full-int8 TFLite."""

import collections

import numpy as np
import pytest

from albert_tf.backend import keras
from albert_tf.checkpoints import load_task_model, named_weights, save_model_dir
from albert_tf.compression import qat
from albert_tf.compression.compression_config import QATConfig
from albert_tf.models import build_classifier
from tests.compression_fixtures import VOCAB, random_features, sst2_task_info, tiny_config


def _model(layers=3, seed=0):
    keras.utils.set_random_seed(seed)
    return build_classifier(tiny_config(num_hidden_layers=layers), 2)


def _train(model, x, steps=3):
    model.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, np.arange(len(x["input_mask"])) % 2, batch_size=len(x["input_mask"]),
              epochs=steps, verbose=0)


def _wrapped(model, suffix):
    return [l.name for l in qat.quantize_wrappers(model) if l.name.endswith(suffix)]


@pytest.mark.slow
@pytest.mark.parametrize("ranges, n_wrappers", [("per_depth", 3), ("shared", 1)])
def test_one_weight_set_and_the_requested_ranges(ranges, n_wrappers):
    model = _model()
    x = random_features(model.albert_config, pad_from=10)
    before = model(x)["logits"].numpy()
    quantized = qat.quantize_model(model, QATConfig(activation_ranges=ranges))
    assert len(_wrapped(quantized, "group_0_inner_0_attention")) == n_wrappers
    assert len(_wrapped(quantized, "group_0_inner_0_ffn")) == n_wrappers
    names = [w.name for w in quantized.weights]
    assert len(names) == len(set(names))
    # The block's kernels are trained once, whatever the number of wrappers.
    assert len(quantized.trainable_weights) == len(model.trainable_weights)
    assert sorted(qat.float_weights(quantized)) == sorted(named_weights(model))
    np.testing.assert_allclose(quantized(x)["logits"], before, atol=0.05)
    _train(quantized, x)
    np.testing.assert_allclose(model(x)["logits"], before, atol=1e-6)   # float model untouched
    points = qat.activation_ranges(quantized)
    residual = sorted(k for k in points if k.endswith("_attention/residual"))
    assert len(residual) == n_wrappers
    if n_wrappers > 1:   # each depth learned its own range
        assert len({points[k] for k in residual}) == n_wrappers
    masked = [v for k, v in points.items() if k.endswith("masked_scores")]
    assert masked and all(lo > -100 for lo, _ in masked)   # the -10000 mask is not in range


@pytest.mark.slow
@pytest.mark.parametrize("sharing", ["all", "none"])
def test_int8_tflite_is_integer_only_and_follows_the_qat_model(tmp_path, sharing):
    from ai_edge_litert.interpreter import Interpreter

    from albert_tf.export.common import load_source
    keras.utils.set_random_seed(0)
    model = build_classifier(tiny_config(num_hidden_layers=2, sharing=sharing), 2)
    config = model.albert_config
    quantized = qat.quantize_model(model, QATConfig())
    x = random_features(config, batch=16, seq=16, pad_from=9, seed=1)
    _train(quantized, x, steps=4)

    directory = str(tmp_path / "qat_model")
    save_model_dir(quantized, directory, config, sst2_task_info(16), VOCAB)
    qat.save_qat_config(directory, QATConfig())
    reloaded = qat.load_qat_model(directory)
    np.testing.assert_allclose(reloaded(x)["logits"], quantized(x)["logits"], atol=1e-5)
    float_model, _ = load_task_model(directory)        # the float weights load as usual
    assert float_model.count_params() == model.count_params()

    content = qat.convert_int8(reloaded, load_source(directory), x, seq_length=16)
    interpreter = Interpreter(model_content=content)
    interpreter.allocate_tensors()
    details = interpreter.get_tensor_details()
    ops = collections.Counter(op["op_name"] for op in interpreter._get_ops_details())
    assert ops["FULLY_CONNECTED"] >= 2 * 6 + 3
    attention_softmax = 0
    for op in interpreter._get_ops_details():
        if op["op_name"] in ("FULLY_CONNECTED", "BATCH_MATMUL", "GELU"):
            assert all(details[i]["dtype"] == np.int8 for i in op["inputs"][:2] if i >= 0), op
        if op["op_name"] == "SOFTMAX" and details[op["inputs"][0]]["dtype"] == np.int8:
            attention_softmax += 1   # its input range is the QAT one, not [-10000, .]
            scale, zero = details[op["inputs"][0]]["quantization"]
            assert (-128 - zero) * scale > -100
    assert attention_softmax >= 2     # 2 layers (+ the signature's output softmax)

    runner = interpreter.get_signature_runner()
    expected = keras.activations.softmax(reloaded(x)["logits"]).numpy()
    got = [runner(**{k: v[i:i + 1] for k, v in x.items()})["probabilities"][0]
           for i in range(len(x["input_mask"]))]
    np.testing.assert_allclose(np.array(got), expected, atol=0.05)


@pytest.mark.slow
def test_int8_tflite_masks_padded_keys(tmp_path):
    """Padded inputs in the int8 file: padded keys get no attention, outputs ignore the
    padded positions and follow the QAT model. Regression: TFLite's int8 ADD of the
    scores and the raw -10000 mask bias wrapped around int16 (in output quanta) and, for
    some masked-scores ranges, made padded keys the range's *maximum*: a 2-layer student
    predicted one class on padded SST-2 inputs."""
    from ai_edge_litert.interpreter import Interpreter

    from tests.compression_fixtures import tiny_model_dir
    from albert_tf.export.common import load_source
    seq, pad_from = 32, 9                    # seq >= 16: TFLite's vectorized int8 ADD
    config = tiny_config(num_hidden_layers=2, sharing="none")
    directory = tiny_model_dir(str(tmp_path / "float"), config, max_seq_length=seq)
    model, _ = load_task_model(directory)
    quantized = qat.quantize_model(model, QATConfig())
    x = random_features(config, batch=8, seq=seq, pad_from=pad_from, seed=1)
    _train(quantized, x, steps=2)
    # The masked-scores range that student learned in its first layer ([-9.32, 1.73] once
    # extended): -10000 is -230786 output quanta there, +31358 after an int16 wrap.
    for variable in quantized.weights:
        if "masked_scores_m" in variable.name:
            variable.assign(-1.32 if "masked_scores_min" in variable.name else 1.73)
    content = qat.convert_int8(quantized, load_source(directory), x, seq_length=seq)
    interpreter = Interpreter(model_content=content, experimental_preserve_all_tensors=True)
    runner = interpreter.get_signature_runner()
    details = interpreter.get_tensor_details()
    attention_probs = [op["outputs"][0] for op in interpreter._get_ops_details()   # noqa
                       if op["op_name"] == "SOFTMAX"
                       and len(details[op["inputs"][0]]["shape"]) == 4]
    assert len(attention_probs) == 2

    def run(features):
        out, probs = [], []
        for i in range(len(features["input_mask"])):
            out.append(runner(**{k: v[i:i + 1] for k, v in features.items()})["probabilities"][0])
            probs.append([interpreter.get_tensor(t)[0] for t in attention_probs])
        scale, zero = details[attention_probs[0]]["quantization"]
        return np.array(out), (np.array(probs, np.float32) - zero) * scale  # [B, L, N, F, T]

    got, probs = run(x)
    padded = x["input_mask"] == 0
    real_rows = probs[padded.any(1)][..., :pad_from, :]
    assert real_rows.size and np.all(real_rows[..., pad_from:] == 0)   # padded keys: weight 0
    np.testing.assert_allclose(real_rows.sum(-1), 1.0, atol=0.03)
    other = dict(x, input_word_ids=np.where(
        padded, (x["input_word_ids"] * 7 + 3) % config.vocab_size, x["input_word_ids"]))
    np.testing.assert_array_equal(run(other)[0], got)      # padded tokens are invisible
    expected = keras.activations.softmax(quantized(x)["logits"]).numpy()
    np.testing.assert_allclose(got, expected, atol=0.02)


def test_registers_what_the_export_qat_recipe_needs():
    """Issue #16: the export package does not import compression; compression registers
    its QAT model loader and custom-object scope with the export's recipe registry, and
    `convert_int8` is the export's ``qat`` recipe (one converter path)."""
    from albert_tf.export import quantization
    assert qat.load_qat_model in quantization.QAT_LOADERS
    assert qat.quantize_scope in quantization.QAT_SCOPES
    assert quantization.get("qat").needs_qat_model
