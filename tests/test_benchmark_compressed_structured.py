"""``albert-tf-benchmark --compressed --structured`` (albert_tf/benchmark/compressed_structured.py
and `albert_tf.compression.structured.prune_by_magnitude` / ``keep_layers``, issue #28): the
smaller copies really are smaller (parameters, kernel shapes) and run; the plan times every
recipe on every dense int8 target; the summary line picks the fastest of sparse and
structured rows; bad ``--structured`` values are one line. Tiny random encoders only (no
timing: the binary's run is tests/test_benchmark_compressed.py's)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from albert_tf.benchmark import compressed, compressed_structured
from albert_tf.benchmark.compressed import CompressedInputError, Row
from albert_tf.benchmark.compressed_structured import parse_recipes
from albert_tf.config import load_config
from tests.compression_fixtures import VOCAB, random_features, tiny_config


def _encoder(sharing: str):
    from albert_tf.backend import keras
    from albert_tf.networks.encoder import build_encoder
    keras.utils.set_random_seed(0)
    return build_encoder(tiny_config(sharing=sharing))


@pytest.mark.slow
@pytest.mark.parametrize("sharing, blocks", [("all", 1), ("none", 4)])
def test_prune_by_magnitude_makes_every_block_physically_smaller(sharing, blocks):
    """albert_tiny (H=32, 4 heads of 8, I=64, 4 layers): ALBERT's shared block is pruned
    once, an unshared model's 4 blocks each; the kept units are those of largest norm."""
    from albert_tf.checkpoints import named_weights
    from albert_tf.compression import structured
    model = _encoder(sharing)
    before = {n: v.numpy() for n, v in named_weights(model).items()}
    smaller, plan = structured.prune_by_magnitude(model, head_fraction=0.5, ffn_fraction=0.5)
    after = {n: v.numpy() for n, v in named_weights(smaller).items()}
    assert (plan.config.num_attention_heads, plan.config.intermediate_size) == (2, 32)
    assert smaller.albert_config == plan.config
    assert len(plan.heads) == len(plan.neurons) == blocks
    # 2 heads x 8 fewer columns in q, k, v (+ biases) and rows of the output; 32 neurons
    removed = blocks * (3 * (32 * 16 + 16) + 16 * 32 + 2 * 32 * 32 + 32)
    assert model.count_params() - smaller.count_params() == removed
    for name, value in after.items():
        block, _, rest = name.partition("/")
        if rest in ("query/kernel", "key/kernel", "value/kernel"):
            assert value.shape == (32, 16), name
        elif rest in ("query/bias", "key/bias", "value/bias"):
            assert value.shape == (16,), name
        elif rest == "intermediate/bias":
            assert value.shape == (32,), name
        elif rest == "output_dense/kernel":
            assert value.shape == ((16, 32) if block.endswith("attention") else (32, 32)), name
        elif rest == "intermediate/kernel":
            assert value.shape == (32, 32), name
            norms = (before[name] ** 2).sum(0) + (before[f"{block}/output_dense/kernel"]
                                                  ** 2).sum(1)
            kept = np.zeros(64, bool)
            kept[plan.neurons[block]] = True
            assert norms[kept].min() >= norms[~kept].max(), name
            np.testing.assert_array_equal(value, before[name][:, kept])
        else:
            np.testing.assert_array_equal(value, before[name], err_msg=name)
    outputs = smaller(random_features(tiny_config(), batch=2), training=False)
    assert outputs["sequence_output"].shape == (2, 16, 32)
    assert outputs["pooled_output"].shape == (2, 32)
    assert np.isfinite(outputs["sequence_output"]).all()


@pytest.mark.slow
@pytest.mark.parametrize("sharing", ["all", "none"])
def test_keep_layers_keeps_evenly_spaced_layers(sharing):
    from albert_tf.checkpoints import named_weights
    from albert_tf.compression import structured
    from albert_tf.compression.compression_config import CompressionConfigError
    model = _encoder(sharing)
    before = {n: v.numpy() for n, v in named_weights(model).items()}
    smaller = structured.keep_layers(model, 2)
    assert smaller.albert_config.num_hidden_layers == 2
    after = {n: v.numpy() for n, v in named_weights(smaller).items()}
    if sharing == "all":    # the one shared block, now run at 2 depths: the same weights
        assert smaller.count_params() == model.count_params()
        assert after.keys() == before.keys()
    else:                   # layers 2 and 4 (1-based) of 4 become layers 1 and 2
        assert smaller.count_params() < model.count_params()
        assert not any(n.startswith(("layer_2", "layer_3")) for n in after)
        np.testing.assert_array_equal(after["layer_0_inner_0_ffn/intermediate/kernel"],
                                      before["layer_1_inner_0_ffn/intermediate/kernel"])
        np.testing.assert_array_equal(after["layer_1_inner_0_ffn/intermediate/kernel"],
                                      before["layer_3_inner_0_ffn/intermediate/kernel"])
    x = random_features(tiny_config(), batch=2)
    got = np.asarray(smaller(x, training=False)["sequence_output"])
    assert got.shape == (2, 16, 32) and np.isfinite(got).all()
    assert not np.allclose(got, model(x, training=False)["sequence_output"], atol=1e-3)
    with pytest.raises(CompressionConfigError, match="removes none"):
        structured.keep_layers(model, 4)


@pytest.mark.slow
def test_structured_model_dir_is_a_smaller_model_directory(tmp_path):
    import albert_tf
    model_dir = albert_tf.save_model_dir(_encoder("all"), str(tmp_path / "tiny"),
                                         vocab_file=VOCAB)
    recipe = parse_recipes(["heads50_ffn50_layers50"])[0]
    out = compressed_structured.structured_model_dir(model_dir, str(tmp_path / "s"), recipe)
    reloaded = albert_tf.load_encoder(out)
    config = reloaded.albert_config
    assert (config.num_attention_heads, config.intermediate_size,
            config.num_hidden_layers, config.head_size) == (2, 32, 2, 8)
    assert reloaded.count_params() < albert_tf.load_encoder(model_dir).count_params()
    assert recipe.describe(tiny_config()) == "structured heads 2/4, ffn 32/64, layers 2/4"


def test_recipes_names_and_descriptions():
    base, bert = load_config("albert_base"), load_config("bert_base")
    recipes = parse_recipes(["heads50_ffn50", "ffn50", "layers50", "ffn25_heads25"])
    assert [(r.heads, r.ffn, r.layers) for r in recipes] == [
        (0.5, 0.5, 0), (0, 0.5, 0), (0, 0, 0.5), (0.25, 0.25, 0)]
    assert recipes[0].describe(base) == "structured heads 6/12, ffn 1536/3072"
    assert recipes[1].describe(bert) == "structured ffn 1536/3072"
    assert recipes[2].describe(base) == "structured layers 6/12"
    assert recipes[3].describe(base) == "structured heads 9/12, ffn 2304/3072"
    assert parse_recipes(["none"]) == []
    assert [r.name for r in parse_recipes(list(compressed_structured.DEFAULT_RECIPES))] == [
        "heads50_ffn50", "ffn50"]


def test_the_plan_times_every_recipe_on_every_dense_int8_target():
    recipes = parse_recipes(["heads50_ffn50", "ffn50"])
    plan = compressed.plan(None, ["unstructured"], recipes)
    assert plan.baselines == compressed.baseline_names()
    assert len(plan.baselines) >= 2 and "ir_int8_sparse" not in plan.baselines
    assert plan.structured_runs == [(r.name, b) for r in recipes for b in plan.baselines]
    # dense int8 targets only: no sparse target, and that is fine with a recipe ...
    dense = compressed.plan(["tflite_dynamic", "ir_int8"], ["unstructured"], recipes[:1])
    assert (dense.sparse, dense.q4) == ([], [])
    assert dense.structured_runs == [("heads50_ffn50", "tflite_dynamic"),
                                     ("heads50_ffn50", "ir_int8")]
    # ... but not without one
    with pytest.raises(CompressedInputError, match="--structured=none"):
        compressed.plan(["tflite_dynamic", "ir_int8"], ["unstructured"], [])


def _row(runtime, kind, ms, sparsity=0.0, model="albert_base"):
    return Row(model, 1, 128, runtime, kind, sparsity, ms, 1.0)


def test_the_summary_line_picks_the_fastest_of_sparse_and_structured_rows():
    heads = "structured heads 6/12, ffn 1536/3072"
    rows = compressed.mark_baselines([
        _row("tflite_int8", "dense int8", 30.0), _row("ir_int8", "dense int8", 20.0),
        _row("ir_int8_sparse", "unstructured", 16.0, sparsity=0.9),
        _row("tflite_int8", heads, 12.0), _row("ir_int8", heads, 8.0),
        _row("ir_int8", "structured ffn 1536/3072", 14.0),
        _row("ir_int8", "dense int8", 1.0, model="bert_base")])   # another model's
    assert compressed.summary_line(rows, "albert_base", 1, 128) == (
        f"{compressed.SUMMARY} albert_base 1 x 128 2.50x (ir_int8, {heads})")
    # a sparse row faster than every structured one wins
    rows.append(_row("ir_int8_sparse", "unstructured", 5.0, sparsity=0.95))
    assert compressed.summary_line(rows, "albert_base", 1, 128) == (
        f"{compressed.SUMMARY} albert_base 1 x 128 4.00x (ir_int8_sparse, unstructured 95% "
        "sparse)")
    # the baseline is a dense int8 row, never a structured one of the same runtime
    assert [r.runtime for r in rows if r.baseline] == ["ir_int8", "ir_int8"]
    assert next(r for r in rows if r.baseline).kind == "dense int8"
    table = compressed.markdown_table(rows)
    assert f"| albert_base | 1 x 128 | ir_int8 | {heads} | - | 8.00 | 1.0 | 2.50x |" in table


@pytest.mark.parametrize("value, message", [
    ("heads50_ffn2x", "--structured: unknown recipe 'heads50_ffn2x'; use parts heads<P>, "
                      "ffn<P>, layers<P> (P: percent removed, 1-99) joined by _"),
    ("heads0", "--structured: unknown recipe 'heads0'"),
    ("ffn50_ffn25", "--structured: unknown recipe 'ffn50_ffn25'"),
    ("heads1", "--structured=heads1: structured.head_fraction: 0.01 of 12 heads rounds to "
               "none removed"),
])
def test_bad_structured_values_are_one_line_before_any_work(value, message, tmp_path):
    out = tmp_path / "bench"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.benchmark", "--compressed",
         "--models=albert_base", f"--structured={value}", f"--output_dir={out}"],
        capture_output=True, text=True)
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr, result.stderr
    assert not out.exists()
