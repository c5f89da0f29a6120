"""Every registered head, from the registry alone (issue #45, item 1): the test names no head.
Each head declares what the rest of the package derives (its model and its own layers,
pruning's ``head`` group, QAT's head Dense layers, its training task, its export outputs and
interop layers); a new head is covered by registering it.

Gate tier: the declarations, checked on an untrained ``albert_tiny`` model of each head
(about a second per head). The end-to-end tier (train a step, compress, export, run every
head) needs compression of every head's data (issue #45 item 1, step 6) and comes with it.
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
    assert head.decoded_output is None or head.decoded_output in (
        *head.sdk_outputs, *head.onnx_outputs, "probabilities", "value"), name


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
