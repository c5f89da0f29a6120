"""Every registered head, from the registry alone (issue #45, item 1): the test names no head.
Each head declares what the rest of the package derives (its model and its own layers,
pruning's ``head`` group, QAT's head Dense layers, its training task, its export outputs and
interop layers); a new head is covered by registering it.

Gate tier: the declarations, checked on an untrained ``albert_tiny`` model of each head
(about a second per head).

Slow tier: each head end to end on its own smoke data (``Head.smoke_files``): one training
step through the trainer, one step of each compression stage it allows
(``compression_stages``: pruning, QAT) with the library on its training task's loss, every
export format it has (SavedModel, TFLite, ONNX), and the exports' answers to its smoke
inputs. An ``export_only`` head is exported from a trained head's model (``--head``).
A head read from a custom file of its own format also goes through albert-tf-compress.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from albert_tf.heads import registry as heads
from albert_tf.heads.base import Head

EVERY_HEAD = sorted(heads.every_head())


def smoke_info(head: Head):
    """A `TaskInfo` of ``head`` for a model of it: two labels when it needs labels, text
    pairs when it takes them."""
    from albert_tf.checkpoints import TaskInfo
    labels = ("first", "second") if head.labels_required else None
    return TaskInfo(task="smoke", head=head.name, label_list=labels, max_seq_length=16,
                    text_pair=bool(head.text_pair))


@pytest.fixture(scope="module")
def tiny():
    import albert_tf
    return albert_tf.load_config("albert_tiny")


def _overrides(head: Head, method: str) -> bool:
    return getattr(type(head), method) is not getattr(Head, method)


@pytest.mark.parametrize("name", EVERY_HEAD)
def test_every_head_declares_what_the_rest_derives(name, tiny):
    head = heads.get(name)
    assert head.name == name and heads.every_head()[name] is head
    assert head.answer_keys, name         # what the end-to-end tier checks in the answers
    if head.export_only:                  # an export view on any model: never built, trained
        assert not head.task_type and not head.head_layers and not _overrides(
            head, "training_task"), name
        return
    model = head.build_model(tiny, smoke_info(head))
    layers = {layer.name: layer for layer in model.layers}
    assert head.head_layers and set(head.head_layers) <= set(layers), (name, sorted(layers))
    for dense in (head.hf_dense, head.keras_hub_dense):       # interop layers are head layers
        assert dense is None or dense.split("/")[0] in head.head_layers, (name, dense)

    from albert_tf.compression import pruning, qat
    from albert_tf.compression.compression_config import QATConfig
    assert sorted(pruning.resolve_targets(model, ["head"])) == sorted(head.head_layers), name
    from albert_tf.backend import keras
    cfg = QATConfig(quantize_head=True)
    quantized = {n for n, layer in layers.items() if n in head.head_layers
                 and qat.quantize_config_for(layer, cfg) is not None}
    assert quantized == {n for n in head.head_layers
                         if isinstance(layers[n], keras.layers.Dense)}, name
    assert not {n for n in head.head_layers if qat.quantize_config_for(
        layers[n], QATConfig(quantize_head=False)) is not None}, name

    if head.task_type:                    # trained by its own task, found by its task type
        assert heads.for_task_type(head.task_type) is head
        assert _overrides(head, "training_task"), name
    else:                                 # trained by another head's task
        assert _overrides(head, "training_task"), name
    assert bool(head.onnx_outputs) == _overrides(head, "onnx_graph"), name
    assert bool(head.sdk_outputs) == bool(head.sdk_runners), name
    assert bool(head.example_task) == _overrides(head, "example_data"), name
    assert bool(head.file_header) == bool(head.custom_syntax), name
    assert _overrides(head, "smoke_files"), name      # the end-to-end tier trains on it
    assert head.decoded_output is None or head.decoded_output in (
        *head.sdk_outputs, *head.onnx_outputs, "probabilities", "value"), name


# ------------------------------------------------------------------------------ end to end
#: One training step of albert_tiny (the ``tiny_ci`` config) on a few short texts.
ONE_STEP = ["trainer.train_steps=1", "trainer.steps_per_loop=1", "trainer.checkpoint_interval=1",
            "task.max_seq_length=48", "task.train_data.global_batch_size=8"]


def _train(head: Head, directory) -> tuple[str, object]:
    """Trains ``head`` one step on its smoke data: its ``final/`` model directory and the
    experiment config."""
    from albert_tf.bin.finetune import defaults
    from albert_tf.resources import DEFAULT_VOCAB, resolve
    from albert_tf.training.experiment_config import build_experiment
    from albert_tf.training.trainer import run_experiment
    overrides = head.smoke_files(str(directory / "data"), resolve(DEFAULT_VOCAB))
    config = build_experiment(defaults(), ["tiny_ci"], [
        f"model_dir={directory / 'run'}", *overrides, *ONE_STEP])
    assert run_experiment(config, "train")["step"] == 1
    return str(directory / "run" / "final"), config


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``trained(name)``: head ``name`` trained once (`_train`), for its test and the
    export-only heads (on the first trained head)."""
    runs: dict = {}

    def train(name: str):
        if name not in runs:
            runs[name] = _train(heads.get(name), tmp_path_factory.mktemp(name))
        return runs[name]
    return train


def _one_step(model, task, batch) -> float:
    """One SGD step of ``model`` on ``batch`` with ``task``'s training loss; the loss."""
    from albert_tf.backend import keras, tf
    with tf.GradientTape() as tape:
        loss, _ = task.train_loss(batch, model(task.features(batch), training=True))
    pairs = [(g, v) for g, v in zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables) if g is not None]
    keras.optimizers.SGD(0.01).apply_gradients(pairs)
    return float(loss)


def _compress(head: Head, final: str, config) -> None:
    """One step of each of ``head.compression_stages`` on its smoke data: its head layers are
    pruned (to the schedule's sparsity) or QAT-wrapped (the Dense ones; QAT wraps the
    encoder's in any case)."""
    import numpy as np

    from albert_tf.backend import keras
    from albert_tf.checkpoints import load_task_model
    from albert_tf.compression import pruning, qat
    from albert_tf.compression.compression_config import PruningConfig, QATConfig
    assert set(head.compression_stages) <= {"pruning", "qat"}, head.compression_stages
    task = head.training_task(config)
    batch = next(iter(task.build_inputs(config.task.train_data)))
    if "pruning" in head.compression_stages:
        model, _ = load_task_model(final, **task.model_kwargs())   # as the task trains it
        pruned = pruning.prune_model(model, PruningConfig(
            targets=["head"], final_sparsity=0.5, begin_step=0, end_step=1, frequency=1))
        wrappers = pruning.pruning_wrappers(pruned)
        assert sorted(w.layer.name for w in wrappers) == sorted(head.head_layers), head.name
        keras.backend.batch_set_value([(w.pruning_step, 1) for w in wrappers])
        assert np.isfinite(_one_step(pruned, task, batch)), head.name
        names = pruning.pruned_weight_names(pruned)
        report = pruning.sparsity_report(pruning.strip_pruning(pruned), names)
        assert names and all(abs(v - 0.5) <= 0.01 for v in report.sparsity.values()), (
            head.name, report.sparsity)
    if "qat" in head.compression_stages:
        model, _ = load_task_model(final, **task.model_kwargs())   # as the task trains it
        dense = {n for n in head.head_layers
                 if isinstance(model.get_layer(n), keras.layers.Dense)}
        quantized = qat.quantize_model(model, QATConfig(quantize_head=True))
        wrapped = {w.layer.name for w in qat.quantize_wrappers(quantized)}
        assert wrapped and dense <= wrapped, (head.name, sorted(wrapped))
        assert np.isfinite(_one_step(quantized, task, batch)), head.name


def _serve(head: Head, final: str, directory) -> None:
    """The SavedModel's ``serving_default`` on the head's raw-text inputs answers each
    example (batch-first outputs, the decoded output among them)."""
    from albert_tf.backend import tf
    from albert_tf.checkpoints import load_task_info
    from albert_tf.export.saved_model import export_saved_model
    path = export_saved_model(final, str(directory / "saved_model"), name="smoke")
    serve = tf.saved_model.load(path).signatures["serving_default"]
    texts_a, texts_b = head.smoke_inputs()
    names = head.text_inputs(load_task_info(final))
    assert sorted(serve.structured_input_signature[1]) == sorted(names), head.name
    out = serve(**{name: tf.constant(texts) for name, texts in zip(names, (texts_a, texts_b))})
    assert out and all(v.shape[0] == len(texts_a) for v in out.values()), head.name
    assert head.decoded_output is None or head.decoded_output in out, (head.name, sorted(out))


def _edge_exports(head: Head, final: str, directory) -> dict:
    """Every edge export of the head: TFLite (float), ONNX when it has ONNX outputs."""
    from albert_tf.export.tflite import export_tflite
    exports = {"tflite": export_tflite(final, str(directory / "tflite"),
                                       head=head.name if head.export_only else None)}
    if head.onnx_outputs:
        from albert_tf.export.onnx import export_onnx
        exports["onnx"] = export_onnx(final, str(directory / "onnx"))
    return exports


@pytest.mark.slow
@pytest.mark.parametrize("name", EVERY_HEAD)
def test_every_registered_head_end_to_end(name, trained, tmp_path):
    from albert_tf.checkpoints import load_task_info
    from albert_tf.runtime import open_runner
    head = heads.get(name)
    if head.export_only:                  # put on the first trained head's model
        final, _ = trained(next(iter(heads.HEADS)))
    else:
        final, config = trained(name)
        assert load_task_info(final).head == name
        _compress(head, final, config)
        _serve(head, final, tmp_path)
    texts_a, texts_b = head.smoke_inputs()
    for kind, export in _edge_exports(head, final, tmp_path).items():
        answers = open_runner(export).predict(texts_a, texts_b)
        assert len(answers) == len(texts_a), (name, kind)
        for answer in answers:
            assert set(head.answer_keys) <= set(answer), (name, kind, sorted(answer))


CUSTOM_FILE_HEADS = [head.name for head in heads.custom_heads()]


def _compression_config(init_model: str, data_dir: str, out: str, stages):
    from albert_tf.compression.compression_config import CompressionConfig
    cfg = CompressionConfig()
    cfg.stages, cfg.init_model, cfg.model_dir = list(stages), init_model, out
    cfg.data.data_dir, cfg.data.batch_size, cfg.data.eval_batch_size = data_dir, 8, 16
    cfg.pruning.train_steps, cfg.pruning.end_step, cfg.pruning.frequency = 1, 1, 1
    cfg.pruning.targets = ["head", "ffn"]
    cfg.qat.train_steps, cfg.export.tflite = 1, False
    return cfg


@pytest.mark.parametrize("name", CUSTOM_FILE_HEADS)
def test_a_custom_file_head_compresses_with_pruning_and_qat_only(name, tiny, tmp_path):
    """A head read from a custom file of its own format compresses on its training task's
    data (``data.data_dir``: its train.tsv and dev.tsv): other stages, and a missing file,
    are one-line errors before any training."""
    from albert_tf.compression.compression_config import CompressionConfigError
    from albert_tf.compression.compressor import compress_model
    from albert_tf.resources import DEFAULT_VOCAB, resolve
    head, vocab = heads.get(name), resolve(DEFAULT_VOCAB)
    head.smoke_files(str(tmp_path / "data"), vocab)
    model, info = head.build_model(tiny, smoke_info(head)), smoke_info(head)
    for stages in (["structured"], ["pruning", "structured"]):
        cfg = _compression_config("", str(tmp_path / "data"), "", stages)
        with pytest.raises(CompressionConfigError, match="pruning and qat only"):
            compress_model(model, info, vocab, cfg)
    cfg = _compression_config("", str(tmp_path / "data"), "", ["pruning", "qat"])
    cfg.export.tflite = True
    with pytest.raises(CompressionConfigError, match="export.tflite"):
        compress_model(model, info, vocab, cfg)
    (tmp_path / "empty").mkdir()
    cfg = _compression_config("", str(tmp_path / "empty"), "", ["pruning"])
    with pytest.raises(FileNotFoundError, match="data.data_dir"):
        compress_model(model, info, vocab, cfg)


@pytest.mark.parametrize("name", CUSTOM_FILE_HEADS)
def test_albert_tf_compress_reads_a_custom_file_head_from_its_folder(name, tmp_path):
    """albert-tf-compress's check before TensorFlow loads: a model of such a head trains on
    the data folder's train.tsv and dev.tsv (not on a GLUE task), a one-line error without."""
    import json

    from albert_tf.data.task_checks import check_compression_task
    from albert_tf.data.task_data import TaskDataError
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "task.json").write_text(json.dumps({"task": "mine", "head": name}))
    (tmp_path / "data").mkdir()
    with pytest.raises(TaskDataError, match=f"a {name} model: .*train.tsv, which does not"):
        check_compression_task(str(tmp_path / "model"), "", str(tmp_path / "data"))
    heads.get(name).smoke_files(str(tmp_path / "data"), "vocab.model")
    check_compression_task(str(tmp_path / "model"), "", str(tmp_path / "data"))


@pytest.mark.slow
@pytest.mark.parametrize("name", CUSTOM_FILE_HEADS)
def test_albert_tf_compress_prunes_and_quantizes_a_custom_file_head(name, trained, tmp_path):
    """albert-tf-compress's run on a trained model directory of the head: one step of
    pruning then of QAT on its own data, scored by its training task's dev metrics."""
    import os

    from albert_tf.checkpoints import load_task_info
    from albert_tf.compression.compressor import run
    final, config = trained(name)
    cfg = _compression_config(final, os.path.dirname(config.task.train_file),
                              str(tmp_path / "compressed"), ["pruning", "qat"])
    report = run(cfg, log=lambda message: None)
    assert set(report["dev"]) == {"start", "pruning", "qat"}, report["dev"]
    assert all(result["examples"] == 16 for result in report["dev"].values()), report["dev"]
    assert report["sparsity"]["total"] > 0.5, report["sparsity"]
    assert load_task_info(report["model_dir"]).head == name


def test_importing_the_heads_loads_no_tensorflow():
    """The registry, every head and its training task import without TensorFlow (the edge
    runner reads the heads; albert-tf-finetune checks its flags before TensorFlow loads)."""
    code = ("import sys; import albert_tf.heads as h; from albert_tf.training import tasks; "
            "assert h.every_head(); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'tf_keras', "
            "'keras')]; print(bad); sys.exit(1 if bad else 0)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
