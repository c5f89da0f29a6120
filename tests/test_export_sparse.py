"""``albert-tf-export --sparse_weights`` (albert_tf/export/sparsity.py, issue #28): a pruned
model's weights stored sparse where a runtime has sparse kernels, refused in one line
elsewhere.

* the refusals before anything is read: each names the exports that run the pattern;
* what the model's zeros form (`sparsity.find`), on kernels pruned here with numpy;
* a tiny SST-2 classifier pruned to 16x1 blocks of its Keras kernels, exported int8 with
  ``1x16``: the flatbuffer stores its FULLY_CONNECTED weights sparse in 1x16 blocks and
  LiteRT's builtin kernels (no XNNPACK) give the dense int8 export's logits; ``auto`` on the
  float export stores 1x4 blocks and gives the Keras model's logits;
* the refusals after reading: a model pruned to 1x4 asked for 1x16, a dense model;
* OpenVINO int8: the metadata asks for CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE and
  OpenVinoClassifier compiles with it.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from albert_tf.export import formats, sparsity
from albert_tf.export.errors import ExportError
from albert_tf.export.formats import ExportOptions
from tests.compression_fixtures import VOCAB, tiny_model_dir

SPARSITY = 0.75
SEQ = 16
EVERY = "tflite none (1x4), tflite int8 (1x16), openvino int8 (unstructured, AMX CPUs)"


# ------------------------------------------------------------------ refusals, no model read
@pytest.mark.parametrize("fmt, quantization, pattern, words, absent", [
    ("onnx", None, "1x16", ["--sparse_weights=1x16 --format=onnx: ONNX Runtime multiplies "
                            "the zeros (no sparse kernels)", f"sparse weights run on: {EVERY}."],
     []),
    ("saved_model", None, "auto", ["--format=saved_model", "multiplies the zeros",
                                   f"run on: {EVERY}."], []),
    ("tflite", "dynamic", "1x16", ["--quantization=dynamic", "none (1x4) or int8 (1x16) only, "
                                   "not dynamic", f"run on: {EVERY}."], []),
    ("openvino", None, "unstructured", ["--format=openvino --quantization=none",
                                        "int8 (unstructured) only, not none"], []),
    # a pattern the export's kernel does not take: only the exports that run it are named
    ("tflite", "int8", "1x4", ["takes 1x16 blocks", "1x4 runs on: tflite none (1x4), "
                               "openvino int8 (unstructured, AMX CPUs)."], ["tflite int8"]),
    ("tflite", "none", "unstructured", ["takes 1x4 blocks", "unstructured runs on: openvino "
                                        "int8 (unstructured, AMX CPUs)."],
     ["tflite none", "tflite int8"]),
])
def test_a_pattern_no_runtime_runs_is_refused_naming_the_runtimes_that_can(
        fmt, quantization, pattern, words, absent):
    line = formats.get(fmt).problem(ExportOptions(quantization=quantization,
                                                  sparse_weights=pattern))
    assert line and "\n" not in line
    for w in words:
        assert w in line, (w, line)
    for w in absent:
        assert w not in line, (w, line)
    with pytest.raises(ExportError, match="--sparse_weights"):   # before anything is read
        formats.export(fmt, "no/such/model", "no/such/output",
                       ExportOptions(quantization=quantization, sparse_weights=pattern))


@pytest.mark.parametrize("fmt, quantization, pattern", [
    ("tflite", None, "1x4"), ("tflite", None, "1x16"), ("tflite", None, "auto"),
    ("tflite", "int8", "1x16"), ("tflite", "int8", "auto"), ("openvino", "int8", "unstructured"),
    ("openvino", "int8", "1x4"), ("openvino", "int8", "auto")])
def test_what_a_runtime_runs_is_taken(fmt, quantization, pattern):
    assert formats.get(fmt).problem(ExportOptions(quantization=quantization,
                                                  sparse_weights=pattern)) is None


def test_the_benchmark_times_the_pattern_each_export_runs():
    """One vocabulary: the benchmark's sparse targets and patterns are the export layer's."""
    from albert_tf.benchmark import compressed, targets
    assert compressed.PATTERNS is sparsity.PATTERNS
    sparse = {t.export: t.sparse_patterns for t in targets.every_target() if t.sparse_patterns}
    assert sparse == {(k.format, k.quantization): (k.pattern,) for k in sparsity.SPARSE_KERNELS}


# ------------------------------------------------------------------ what the zeros form
def prune_blocks(kernel: np.ndarray, sparsity_: float, length: int) -> np.ndarray:
    """``kernel`` [in, out] with the ``length`` x 1 blocks of least L1 norm set to zero."""
    rows, cols = kernel.shape
    blocks = kernel.reshape(rows // length, length, cols)
    scores = np.abs(blocks).sum(axis=1)
    cut = np.sort(scores, axis=None)[int(round(sparsity_ * scores.size)) - 1]
    keep = scores > cut
    return (blocks * keep[:, None, :]).reshape(rows, cols).astype(kernel.dtype)


def test_the_largest_pattern_the_zeros_form_is_found():
    rng = np.random.default_rng(0)
    kernel = rng.standard_normal((64, 48)).astype(np.float32)
    for length, pattern in ((16, "1x16"), (4, "1x4"), (1, "unstructured")):
        found = sparsity.find({"k": prune_blocks(kernel, SPARSITY, length)}, 0.3)
        assert (found.pattern, found.sparse, found.kernels) == (pattern, 1, 1)
        assert found.sparsity == pytest.approx(SPARSITY, abs=0.01)
    # blocks along the outputs (1x16 of the Keras kernel: the transposed layout) are not
    # TFLite's 1x16
    transposed = prune_blocks(kernel.T.copy(), SPARSITY, 16).T
    assert sparsity.find({"k": transposed}, 0.3).pattern == "unstructured"
    # a few zeros outside whole blocks (< 10% of them) keep the pattern; more do not
    blocked = prune_blocks(kernel, SPARSITY, 16)
    kept = rng.permutation(np.argwhere(blocked != 0))     # scattered, not whole blocks
    few, many = blocked.copy(), blocked.copy()
    few[tuple(kept[:100].T)] = 0       # 100 of 2404 zeros outside whole blocks
    many[tuple(kept[:384].T)] = 0      # 384 of 2688
    assert sparsity.find({"k": few}, 0.3).pattern == "1x16"
    assert sparsity.find({"k": many}, 0.3).pattern != "1x16"
    # a dense kernel beside a pruned one: kept dense, the pattern is the pruned one's
    found = sparsity.find({"dense": kernel, "pruned": blocked}, 0.3)
    assert (found.pattern, found.sparse, found.kernels) == ("1x16", 1, 2)
    assert sparsity.find({"dense": kernel}, 0.3).sparse == 0


# ------------------------------------------------------------------ a real model
def prune_model_dir(model_dir: str, out: str, length: int) -> str:
    """``model_dir`` with every rank-2 kernel outside the embeddings pruned to ``length``
    x 1 blocks at `SPARSITY`; the classifier's kernel drawn at scale 1 first (a random
    head gives logits of ~1e-4, which every export would match)."""
    from albert_tf import checkpoints
    model, task_info = checkpoints.load_task_model(model_dir)
    rng = np.random.default_rng(1)
    for name, variable in checkpoints.named_weights(model).items():
        if len(variable.shape) != 2 or "embeddings/" in name:
            continue
        value = variable.numpy()
        if value.shape[-1] == 2:    # the classifier [hidden, labels]
            value = rng.standard_normal(value.shape).astype(value.dtype)
        variable.assign(prune_blocks(value, SPARSITY, length))
    return checkpoints.save_model_dir(model, out, task_info=task_info, vocab_file=VOCAB)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("sparse_models")
    dense = tiny_model_dir(str(root / "dense"), max_seq_length=SEQ)
    return {"dense": dense, "1x16": prune_model_dir(dense, str(root / "p16"), 16),
            "1x4": prune_model_dir(dense, str(root / "p4"), 4)}


@pytest.fixture(scope="module")
def source(models):
    from albert_tf.export.common import load_source
    return load_source(models["1x16"])


@pytest.fixture(scope="module")
def inputs():
    """Random ids; the first differs per row (the pooler reads it: a random model's logits
    hardly move with the other tokens)."""
    rng = np.random.default_rng(7)
    ids = rng.integers(5, 8000, (6, SEQ)).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": np.zeros_like(ids)}


@pytest.fixture(scope="module")
def tflite_exports(models, source, tmp_path_factory, data_dir):
    from albert_tf.export.tflite import export_tflite
    root = tmp_path_factory.mktemp("sparse_exports")
    common = dict(seq_lengths=[SEQ], source=source, data_dir=data_dir, num_calibration=16)
    return {
        "int8": export_tflite(models["1x16"], str(root / "int8"), quantization="int8",
                              **common),
        "int8_sparse": export_tflite(models["1x16"], str(root / "int8_sparse"),
                                     quantization="int8", sparse_weights="1x16", **common),
        "none_auto": export_tflite(models["1x16"], str(root / "none_auto"),
                                   sparse_weights="auto", **common),
    }


def stored_sparse(path: str) -> dict[str, int]:
    """``{tensor name: block length}`` of the tensors the flatbuffer stores sparse, read with
    TensorFlow's flatbuffer utilities (not the code under test)."""
    from tensorflow.lite.tools import flatbuffer_utils
    model = flatbuffer_utils.read_model(os.path.join(path, "model.tflite"))
    found = {}
    for graph in model.subgraphs:
        for tensor in graph.tensors:
            if tensor.sparsity is not None:
                block = (tensor.sparsity.dimMetadata[-1].denseSize
                         if tensor.sparsity.blockMap is not None else 1)
                found[tensor.name.decode()] = block
    return found


def builtin_logits(path: str, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """log(p1 / p0) per row on LiteRT's builtin kernels (no XNNPACK), as the benchmark's
    ``tflite_builtin`` runner runs the sparse targets."""
    from ai_edge_litert import interpreter as lite
    interpreter = lite.Interpreter(
        model_path=os.path.join(path, "model.tflite"), num_threads=1,
        experimental_op_resolver_type=lite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    run = interpreter.get_signature_runner()
    rows = [run(**{k: v[i:i + 1] for k, v in inputs.items()})["probabilities"][0]
            for i in range(len(inputs["input_word_ids"]))]
    p = np.asarray(rows, np.float64)
    return np.log(p[:, 1]) - np.log(p[:, 0])


@pytest.mark.slow
def test_int8_1x16_stores_sparse_blocks_and_gives_the_dense_logits(tflite_exports, inputs):
    dense, sparse = tflite_exports["int8"], tflite_exports["int8_sparse"]
    assert stored_sparse(dense) == {}
    blocks = stored_sparse(sparse)
    # embedding projection, Q, K, V, attention output, FFN in and out, pooler, classifier
    assert len(blocks) == 9 and set(blocks.values()) == {16}, blocks
    assert os.path.getsize(os.path.join(sparse, "model.tflite")) < \
        os.path.getsize(os.path.join(dense, "model.tflite"))
    with open(os.path.join(sparse, "metadata.json"), encoding="utf-8") as f:
        meta = json.load(f)
    entry = meta["sparse_weights"]
    assert (entry["pattern"], entry["requested"], entry["tensors"]) == ("1x16", "1x16", 9)
    assert entry["model"]["pattern"] == "1x16"
    assert entry["model"]["sparsity"] == pytest.approx(SPARSITY, abs=0.01)
    assert "BUILTIN_WITHOUT_DEFAULT_DELEGATES" in entry["run_with"]
    want, got = builtin_logits(dense, inputs), builtin_logits(sparse, inputs)
    assert np.ptp(want) > 0.1, want          # logits that differ between inputs
    np.testing.assert_allclose(got, want, atol=0.05)   # ~ one step of the int8 output
    # our runner (albert-tflite-run / -evaluate, the pipeline's scoring and timing) runs the
    # sparse file on the builtin kernels by itself, and the dense one on XNNPACK
    from albert_tf.runtime.tflite import TFLiteRunner
    assert TFLiteRunner(sparse, 1).xnnpack is False and TFLiteRunner(dense, 1).xnnpack is True
    assert TFLiteRunner(sparse, 1, xnnpack=True).xnnpack is True      # asked for: obeyed


@pytest.mark.slow
def test_auto_on_float_stores_1x4_blocks_and_gives_the_keras_logits(tflite_exports, inputs,
                                                                     source):
    """A model pruned to 16x1 blocks is 4x1-block sparse too: the float kernel runs it."""
    path = tflite_exports["none_auto"]
    blocks = stored_sparse(path)
    assert len(blocks) == 9 and set(blocks.values()) == {4}, blocks
    with open(os.path.join(path, "metadata.json"), encoding="utf-8") as f:
        entry = json.load(f)["sparse_weights"]
    assert (entry["pattern"], entry["requested"], entry["model"]["pattern"]) == \
        ("1x4", "auto", "1x16")
    logits = np.asarray(source.model(inputs, training=False)["logits"], np.float64)
    want = logits[:, 1] - logits[:, 0]
    np.testing.assert_allclose(builtin_logits(path, inputs), want, atol=1e-3 * np.ptp(want))


@pytest.mark.slow
@pytest.mark.parametrize("model, request_, words", [
    ("1x4", "1x16", ["--sparse_weights=1x16: the model's zeros do not form 1x16 blocks "
                     "(16x1 blocks of the Keras [in, out] kernels)", "75.0% zeros",
                     "the largest block pattern that holds: 1x4", "pruning.block_size=16x1",
                     "where 1x4 runs: tflite none (1x4), openvino int8"]),
    ("1x4", "auto", ["--sparse_weights=auto", "do not form 1x16 blocks",
                     "largest block pattern that holds: 1x4"]),
    ("dense", "auto", ["--sparse_weights=auto: the model has 0.0% zeros over its 9 kernels, "
                       "0 of them at least 30% zero", "prune it first"]),
])
def test_a_model_whose_zeros_do_not_form_the_pattern_is_refused(models, tmp_path, model,
                                                                request_, words):
    from albert_tf.export.tflite import export_tflite
    out = tmp_path / "out"
    with pytest.raises(ExportError) as e:
        export_tflite(models[model], str(out), quantization="int8", sparse_weights=request_)
    line = str(e.value)
    assert "\n" not in line
    for w in words:
        assert w in line, (w, line)
    assert not out.exists()


@pytest.mark.slow
def test_openvino_int8_asks_for_sparse_weights_and_the_runner_compiles_with_it(
        models, source, tmp_path, data_dir):
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    from albert_tf.export.openvino import export_openvino
    from albert_tf.runtime.openvino import OpenVinoClassifier
    out = export_openvino(models["1x16"], str(tmp_path / "ir"), quantization="int8",
                          seq_length=SEQ, sparse_weights="auto", source=source,
                          data_dir=data_dir, num_calibration=16)
    with open(os.path.join(out, "metadata.json"), encoding="utf-8") as f:
        entry = json.load(f)["sparse_weights"]
    assert entry["pattern"] == "unstructured" and entry["model"]["pattern"] == "1x16"
    assert entry["compile_config"] == {sparsity.OPENVINO_SPARSE_CONFIG:
                                       sparsity.OPENVINO_SPARSE_RATE}
    # NNCF's int8 kernels keep the zeros (its symmetric weight quantization maps 0 to 0)
    import openvino as ov
    shapes = {s for k in sparsity.kernels_of(source.model).values()
              for s in (k.shape, k.shape[::-1])}
    int8 = [op.get_data() for op in ov.Core().read_model(os.path.join(out, "model.xml")).get_ops()
            if op.get_type_name() == "Constant" and op.get_element_type() == ov.Type.i8
            and op.get_data().shape in shapes]
    assert len(int8) >= 8 and all(np.mean(w == 0) >= SPARSITY - 0.01 for w in int8), \
        [float(np.mean(w == 0)) for w in int8]
    runner = OpenVinoClassifier(out, threads=1)
    assert runner.config[sparsity.OPENVINO_SPARSE_CONFIG] == sparsity.OPENVINO_SPARSE_RATE
    answers = runner.predict(["a gorgeous , witty film", "dull and lifeless"])
    assert [sorted(a) for a in answers] == [["label", "label_id", "probabilities"]] * 2
