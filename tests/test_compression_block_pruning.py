"""Block sparsity (``pruning.block_size``, TF-MOT's ``block_size``): whole blocks at the
scheduled sparsity in optimizer steps on ALBERT's shared block, TF-MOT's masks, one-line
checks before training, the report's block check, the pipeline's ``prune<s>_<RxC>``."""

import numpy as np
import pytest
import tensorflow_model_optimization as tfmot
from tensorflow_model_optimization.python.core.sparsity.keras import pruning_impl

from albert_tf.backend import keras, tf
from albert_tf.compression import pruning
from albert_tf.compression.compression_config import (CompressionConfigError, PruningConfig,
                                                      build_compression_config,
                                                      parse_block_size, validate_pruning)
from albert_tf.hyperparams import ConfigValueError
from albert_tf.models import build_classifier
from albert_tf.pipeline import candidates
from albert_tf.pipeline.pipeline_config import CompressConfig, load_pipeline_config
from tests.compression_fixtures import random_features, tiny_config


def _blocks_of(weight, block):
    r, c = block
    return weight.reshape(weight.shape[0] // r, r, weight.shape[1] // c, c)


@pytest.mark.slow
def test_16x1_blocks_follow_the_schedule_in_optimizer_steps_on_a_shared_block():
    """albert_tiny, all layers sharing one block called L=3 times per step: every mask is
    whole 16x1 blocks of the [in, out] kernel, at the schedule's sparsity of the
    *optimizer* step (within one block), updated once per step; the stripped model's
    report says so."""
    keras.utils.set_random_seed(0)
    config = tiny_config(sharing="all", num_hidden_layers=3)
    cfg = PruningConfig(final_sparsity=0.75, begin_step=1, end_step=5, frequency=2, power=1,
                        train_steps=6, block_size="16x1",
                        targets=["attention", "ffn", "embedding_projection", "head"])
    model = pruning.prune_model(build_classifier(config, 2), cfg)
    wrappers = pruning.pruning_wrappers(model)
    assert sum(1 for w in wrappers if "attention" in w.name) == 1      # one shared block
    assert all(tuple(w.block_size) == (16, 1) for w in wrappers)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = random_features(config, batch=4), np.array([0, 1, 0, 1])
    schedule, callback, done = pruning.make_schedule(cfg), pruning.PruningStepCallback(), 0
    for step in (2, 3, 6):
        model.fit(x, y, batch_size=4, epochs=step - done, callbacks=[callback], verbose=0)
        done = step
        assert int(model.optimizer.iterations.numpy()) == step
        expected = pruning.expected_sparsity(schedule, step)
        for layer in wrappers:
            assert int(layer.mask_update_step.numpy()) <= step
            for weight, mask, _ in layer.pruning_vars:
                mask = mask.numpy()
                blocks = _blocks_of(mask, (16, 1))
                assert np.all(blocks.min(axis=(1, 3)) == blocks.max(axis=(1, 3))), weight.name
                n_blocks = mask.size // 16
                assert abs((1 - mask.mean()) - expected) <= 1 / n_blocks + 1e-6, \
                    (step, weight.name, 1 - mask.mean(), expected)
    assert pruning.expected_sparsity(schedule, 6) == pytest.approx(0.75)
    names = pruning.pruned_weight_names(model)
    assert "classifier/kernel" in names and "group_0_inner_0_ffn/intermediate/kernel" in names
    final = pruning.strip_pruning(model)
    report = pruning.sparsity_report(final, names, cfg.block_size)
    assert report.block_sparse == {name: True for name in names}
    assert report.as_dict()["block_size"] == "16x1" and report.as_dict()["all_block_sparse"]
    assert "| whole 16x1 blocks |" in report.table()
    for name, value in report.sparsity.items():
        assert value == pytest.approx(0.75, abs=0.25 if name == "classifier/kernel" else 0.04)
    # The same zeros are not 32x1 blocks; unstructured pruning is not 16x1 blocks.
    assert not all(pruning.sparsity_report(final, names, "32x1").block_sparse.values())
    saved = wrappers[0].get_config()
    assert (saved["block_size"], saved["block_pooling_type"]) == ([16, 1], "AVG")


@pytest.mark.parametrize("block", [(4, 1), (2, 2), (1, 4)])
@pytest.mark.parametrize("pooling", ["AVG", "MAX"])
def test_block_mask_is_tfmots_block_mask(block, pooling):
    """`pruning.block_mask` gives TF-MOT's ``_maybe_update_block_mask`` result on a shape
    the blocks tile, and also handles a one-column kernel, where TF-MOT's squeeze fails."""
    rng = np.random.default_rng(0)
    weight = tf.Variable(rng.normal(size=(32, 8)).astype(np.float32))
    schedule = tfmot.sparsity.keras.ConstantSparsity(0.75, 0, frequency=1)
    obj = pruning_impl.Pruning(lambda: tf.constant(1, tf.int64),
                               [(weight, tf.Variable(tf.ones_like(weight)), tf.Variable(0.0))],
                               schedule, block_size=block, block_pooling_type=pooling)
    expected_threshold, expected = obj._maybe_update_block_mask(weight)   # noqa: SLF001
    threshold, mask = pruning.block_mask(obj, weight, block, pooling)
    np.testing.assert_array_equal(mask.numpy(), expected.numpy())
    assert float(threshold) == pytest.approx(float(expected_threshold))
    assert pruning.is_block_sparse(weight.numpy() * mask.numpy(), block)
    assert 1 - mask.numpy().mean() == pytest.approx(0.75)
    column = tf.constant(rng.normal(size=(32, 1)).astype(np.float32))
    if block[1] == 1:
        _, mask = pruning.block_mask(obj, column, block, pooling)
        assert mask.shape == (32, 1) and pruning.is_block_sparse(mask.numpy(), block)
        assert 1 - mask.numpy().mean() == pytest.approx(0.75)


def test_is_block_sparse():
    weight = np.ones((8, 4), np.float32)
    weight[0:4, 1] = 0.0
    assert pruning.is_block_sparse(weight, (4, 1)) and pruning.is_block_sparse(weight, (1, 1))
    assert not pruning.is_block_sparse(weight, (8, 1))
    assert not pruning.is_block_sparse(weight, (2, 2))
    assert pruning.is_block_sparse(weight, (3, 1)) is None         # 3 does not divide 8
    weight[5, 0] = 0.0                                              # a stray zero
    assert not pruning.is_block_sparse(weight, (4, 1))


@pytest.mark.parametrize("changes, match", [
    (dict(block_size="16"), r"pruning.block_size: expected 'RxC' such as '16x1'.*got '16'"),
    (dict(block_size="16x1x2"), "pruning.block_size: expected 'RxC'"),
    (dict(block_size="ax4"), "pruning.block_size: expected 'RxC'"),
    (dict(block_size="0x4"), r"pruning.block_size: both sides of 'RxC' must be >= 1, got '0x4'"),
    (dict(block_size="-4x1"), "pruning.block_size: both sides"),
    (dict(block_pooling="mean"), r"pruning.block_pooling: 'mean' is not one of \['AVG', 'MAX'\]"),
    (dict(block_size="16x1", m_by_n="2:4"),
     "pruning.block_size: '16x1' and pruning.m_by_n '2:4' are two different sparsity patterns"),
])
def test_bad_block_settings_are_one_line_errors(changes, match):
    cfg = PruningConfig(**dict(dict(end_step=1000, frequency=100, train_steps=1000), **changes))
    with pytest.raises(CompressionConfigError, match=match) as error:
        validate_pruning(cfg)
    assert "\n" not in str(error.value)


def test_block_size_parses():
    assert parse_block_size("16x1") == (16, 1) and parse_block_size("4X1") == (4, 1)
    assert parse_block_size("") == (1, 1) and parse_block_size("1x1") == (1, 1)
    config = build_compression_config([], ["pruning.block_size=16x1,pruning.block_pooling=MAX"])
    assert (config.pruning.block_size, config.pruning.block_pooling) == ("16x1", "MAX")


@pytest.mark.parametrize("block, targets, match", [
    ("3x1", ["attention"], r"3x1 cannot prune layer 'group_0_inner_0_attention': its kernel "
                           r"group_0_inner_0_attention/\w+/kernel \[32, 32\] \[in, out\] is not "
                           "a whole number of 3x1 blocks"),
    ("1x4", ["head"], r"1x4 cannot prune layer 'classifier': its kernel classifier/kernel "
                      r"\[32, 2\]"),
    ("32x1", ["embedding_projection"], r"'embedding_projection'.* \[16, 32\]"),
])
def test_a_block_that_does_not_tile_a_kernel_fails_before_wrapping(block, targets, match):
    model = build_classifier(tiny_config(), 2)
    cfg = PruningConfig(block_size=block, targets=targets)
    with pytest.raises(pruning.BlockSizeError, match=match) as error:
        pruning.prune_model(model, cfg)
    assert "\n" not in str(error.value)
    assert not pruning.pruning_wrappers(model)
    with pytest.raises(pruning.BlockSizeError):
        pruning.check_blocks(model, cfg)


# --------------------------------------------------------------------------- pipeline
def test_pipeline_names_block_sparse_candidates_and_passes_the_block():
    plain = candidates.compressions(CompressConfig(prune_sparsities=[0.5, 0.9]))
    assert [c.label for c in plain][:2] == ["prune0.5", "prune0.9"]           # unchanged
    assert [c.label for c in candidates.compressions(
        CompressConfig(prune_sparsities=[0.9], prune_block_size="1x1"))][0] == "prune0.9"
    blocked = candidates.compressions(CompressConfig(prune_sparsities=[0.5, 0.9],
                                                     prune_block_size="16x1"))
    assert [c.label for c in blocked][:2] == ["prune0.5_16x1", "prune0.9_16x1"]
    assert blocked[1].candidate("albert_small") == "albert_small+prune0.9_16x1"
    config = load_pipeline_config("run_quick", ["compress.prune_block_size=16x1"])
    [compression] = [c for c in candidates.compressions(config.compress) if c.stage == "pruning"]
    assert compression.label == "prune0.5_16x1"
    resolved = candidates.compression_config(config, compression, "albert_small", 200,
                                             "finetuned", "out")
    assert resolved.pruning.block_size == "16x1" and resolved.pruning.final_sparsity == 0.5
    default = load_pipeline_config("run_quick", [])
    [compression] = [c for c in candidates.compressions(default.compress)
                     if c.stage == "pruning"]
    assert candidates.compression_config(default, compression, "albert_small", 200,
                                         "finetuned", "out").pruning.block_size == "1x1"


@pytest.mark.parametrize("override, match", [
    ("compress.prune_block_size=16", "compress.prune_block_size: expected 'RxC'"),
    ("compress.prune_block_size=0x1", "compress.prune_block_size: both sides"),
    ("compress.prune_block_size=3x1", r"compress.prune_block_size: 3x1 does not tile "
                                      r"albert_small's \[in, out\] kernel \[256, 256\]"),
])
def test_bad_pipeline_block_sizes_fail_naming_the_key(override, match):
    with pytest.raises(ConfigValueError, match=match):
        load_pipeline_config("run_quick", [override])


# ----------------------------------------------------------------------- albert-tf-compress
def _compress_config(tmp_path, data_dir, **pruning_changes):
    from albert_tf.compression.compression_config import CompressionConfig
    from tests.compression_fixtures import tiny_model_dir, tiny_sst2_dir
    config = CompressionConfig(
        init_model=tiny_model_dir(str(tmp_path / "m"), tiny_config(num_hidden_layers=2)),
        model_dir=str(tmp_path / "out"), stages=["pruning"], run_eagerly=True)
    config.data.data_dir = tiny_sst2_dir(str(tmp_path / "data"), data_dir, 32, 16)
    config.data.batch_size = 16
    config.export.tflite = False
    settings = {"final_sparsity": 0.5, "begin_step": 0, "end_step": 2, "frequency": 1,
                "train_steps": 3, "block_size": "16x1", **pruning_changes}
    for key, value in settings.items():
        setattr(config.pruning, key, value)
    return config


@pytest.mark.slow
def test_compress_writes_the_block_check_to_the_report(tmp_path, data_dir):
    import json

    from albert_tf.compression import compressor
    config = _compress_config(tmp_path, data_dir)
    report = compressor.run(config, log=lambda m: None)
    with open(tmp_path / "out" / "report.json") as f:
        sparsity = json.load(f)["sparsity"]
    assert sparsity["block_size"] == "16x1" and sparsity["all_block_sparse"] is True
    assert set(sparsity["block_sparse"]) == set(report["pruned_weights"])
    assert abs(sparsity["total"] - 0.5) < 0.02
    assert "| whole 16x1 blocks |" in (tmp_path / "out" / "sparsity.md").read_text()


def test_a_block_that_structured_pruning_breaks_fails_before_any_training(
        tmp_path, data_dir, monkeypatch):
    """albert_tiny's q kernel [32, 32] takes 1x16 blocks; after removing 1 of 4 heads it is
    [32, 24]: the check runs on the model each stage will see, before the first one."""
    from albert_tf.compression import compressor
    from albert_tf.compression import data as data_lib

    def no_training(*args, **kwargs):
        raise AssertionError("training started")
    monkeypatch.setattr(data_lib, "fit_steps", no_training)
    config = _compress_config(tmp_path, data_dir, block_size="1x16")
    config.stages = ["structured", "pruning"]
    config.structured.importance = "magnitude"
    with pytest.raises(pruning.BlockSizeError, match=r"1x16 cannot prune layer "
                       r"'group_0_inner_0_attention': .* \[32, 24\] \[in, out\]"):
        compressor.run(config, log=lambda m: None)
    assert not (tmp_path / "out").exists()
