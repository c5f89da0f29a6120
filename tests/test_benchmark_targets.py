"""The deployment-target registry (`albert_tf.benchmark.targets`): every list the benchmark,
its tables, the end-to-end runs, the pipeline and the docs use is derived from it; a target
added there (``onnx_q4``) builds and times with nothing else touched."""

from __future__ import annotations

import ast
import os
import re

import numpy as np
import pytest

from albert_tf.benchmark import targets
from albert_tf.export import formats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_target_names_a_runner_and_ours_a_real_export():
    from albert_tf.runtime.sessions import SESSIONS
    for target in targets.every_target():
        assert target.worker in SESSIONS, target.name
        if target.owner == targets.OURS:
            fmt, quantization = target.export
            assert quantization in formats.get(fmt).quantizations(), target.name
        else:
            assert target.extra == targets.PEERS_EXTRA, target.name
    assert set(targets.quick_names()) <= set(targets.default_names()) <= set(targets.names())
    assert "onnx_q4" in targets.names() and "onnx_q4" not in targets.default_names()


def test_lookups_by_export_and_the_pipelines_labels():
    assert targets.of_export("tflite", "int8").name == "tflite_int8"
    assert targets.of_export("openvino", "none").name == "ir_none"   # the first: f32
    assert targets.export_label("onnx", "int8") == "ort_int8"
    assert targets.export_label("tflite", "qat") == "tflite_qat"     # no target times it
    with pytest.raises(ValueError, match="unknown runtime 'tflite_int4'; use one of tf, "):
        targets.get("tflite_int4")
    with pytest.raises(ValueError, match="registered twice"):
        targets.register(targets.get("ort_int8"))


def test_the_peer_table_compares_by_the_registrys_owner_and_arithmetic():
    from albert_tf.benchmark.tables import Measurement, peer_table

    def row(runtime, ms):
        return Measurement("m", runtime, 1, 128, ms, ms, 1e3 / ms, 50, 1, 0.1, 0.01)

    table = peer_table([row("ort_int8", 10.0), row("onnx_opt_int8", 15.0),
                        row("ir_bf16", 8.0), row("openvino_bf16", 4.0),
                        row("onnx_q4", 30.0)])
    assert "| m | 1 x 128 | int8 | ort_int8 | 10.0 | onnx_opt_int8 | 15.0 | 1.50x |" in table
    assert "| m | 1 x 128 | bf16 | ir_bf16 | 8.0 | openvino_bf16 | 4.0 | 0.50x |" in table
    # The fastest of ours (bf16, 8 ms) against the fastest int8 peer; the q4 peer is not int8.
    assert "| any vs int8 peers | ir_bf16 | 8.0 | onnx_opt_int8 | 15.0 | 1.88x |" in table
    assert "| q4 |" not in table   # no q4 of ours to compare


def test_the_docs_table_is_the_registrys():
    with open(os.path.join(ROOT, "docs", "cpu-benchmark.md"), encoding="utf-8") as f:
        assert targets.markdown_table() in f.read(), (
            "docs/cpu-benchmark.md's table of runtimes differs from the registry: paste "
            "`python -m albert_tf.benchmark.targets`")


def _string_literals(path: str) -> set[str]:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_target_names_are_spelled_only_in_the_registry():
    """Names that are only target names (not also a runner, a format or a package) appear as
    a string literal in no other module of the package: adding a target touches one module.
    (``--quick`` and the tour name some in help text and docs, which this does not scan.)"""
    from albert_tf.runtime.sessions import SESSIONS
    # Literals that are other things' names: albert-tf-compress's output directory.
    allowed = {os.path.join("albert_tf", "compression", "compression_config.py"): {"tflite_int8"}}
    only_targets = set(targets.names()) - set(SESSIONS) - set(formats.names())
    offenders = []
    for folder, _, files in os.walk(os.path.join(ROOT, "albert_tf")):
        for name in files:
            path = os.path.join(folder, name)
            if not name.endswith(".py") or path.endswith(os.path.join("benchmark",
                                                                      "targets.py")):
                continue
            found = (only_targets & _string_literals(path)) - allowed.get(
                os.path.relpath(path, ROOT), set())
            offenders += [f"{os.path.relpath(path, ROOT)}: {sorted(found)}"] if found else []
    assert not offenders, offenders


def test_runtime_name_prefixes_are_not_parsed_back():
    pattern = re.compile(r"""\[len\("(tflite|ir|ort|onnx|openvino)_"\):\]|"""
                         r"""startswith\(\("?(tflite|ir|ort)_""")
    for folder, _, files in os.walk(os.path.join(ROOT, "albert_tf")):
        for name in (n for n in files if n.endswith(".py")):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                assert not pattern.search(f.read()), os.path.join(folder, name)


@pytest.fixture(scope="module")
def albert_tiny_builder(tmp_path_factory, data_dir):
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf.benchmark.artifacts import ArtifactBuilder
    keras.utils.set_random_seed(0)
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    root = tmp_path_factory.mktemp("albert_tiny")
    model_dir = str(root / "model")
    vocab = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
    albert_tf.save_model_dir(albert_tf.build_encoder(config), model_dir, vocab_file=vocab)
    return config, ArtifactBuilder(model_dir, str(root / "work"), data_dir, echo=lambda s: None)


@pytest.mark.slow
def test_the_added_target_builds_4_bit_weights_and_times_without_tensorflow(
        albert_tiny_builder):
    """``onnx_q4`` through the driver's own path (a peer: built in a TensorFlow-free child,
    timed in a worker): every MatMul with constant weights is MatMulNBits at 4 bits and
    accuracy_level 4, and the encoder's output stays close to the float export's."""
    import collections

    import onnx

    from albert_tf.runtime.sessions import OnnxSession, token_inputs
    from albert_tf.benchmark.suite import build_peer, file_size, time_in_worker
    config, builder = albert_tiny_builder
    shapes = [(1, 16), (2, 16)]
    worker, path = build_peer(builder, "onnx_q4", shapes)
    assert worker == "onnx" and path.endswith("model_q4.onnx")
    graph = onnx.load(path).graph
    ops = collections.Counter(n.op_type for n in graph.node)
    constants = {i.name for i in graph.initializer}
    assert ops["MatMulNBits"] >= 6, ops   # Q, K, V, output, FFN in and out
    assert not [n for n in graph.node if n.op_type == "MatMul" and n.input[1] in constants]
    for node in (n for n in graph.node if n.op_type == "MatMulNBits"):
        attributes = {a.name: a.i for a in node.attribute}
        assert (attributes["bits"], attributes["accuracy_level"]) == (4, 4)
    float_path = builder.onnx(int8=False)
    # Its size rule is the registry's (the tiny model's float embeddings dominate it).
    assert file_size("onnx_q4", path, 1, 16) == pytest.approx(os.path.getsize(path) / 2**20)
    inputs = token_inputs(2, 16, config.vocab_size, seed=1)
    exact = OnnxSession(float_path, threads=1).outputs(inputs)[0]
    q4 = OnnxSession(path, threads=1).outputs(inputs)[0]
    a, b = exact.reshape(-1, exact.shape[-1]), q4.reshape(-1, q4.shape[-1])
    cosine = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    assert cosine.min() > 0.95 and np.abs(exact - q4).max() > 0, cosine.min()
    timed = time_in_worker(worker, path, shapes, config.vocab_size, threads=1,
                           min_seconds=0.05)
    assert not timed["imported_tensorflow"]
    assert [(r["batch"], r["seq"]) for r in timed["results"]] == shapes


def test_every_worker_runtime_names_the_package_that_runs_it():
    """The latency cache keys and --target's install check read the runtime's package from
    one table beside the workers (`sessions.runtime_package`)."""
    from albert_tf.runtime import sessions
    from albert_tf.benchmark import targets

    for worker in sessions.SESSIONS:
        assert sessions.runtime_package(worker), worker
    for target in targets.every_target():
        assert target.worker in sessions.SESSIONS, target.name
    assert sessions.runtime_package("openvino_int8_sparse") == ("openvino", "openvino")
    assert sessions.runtime_package("nope") is None
