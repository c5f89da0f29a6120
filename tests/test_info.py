"""Parameter counts from the config alone (`albert_tf.parameter_count`) and the
``albert-tf-info`` console script that prints them without importing TensorFlow.

Every count is checked against the encoder Keras actually builds, part by part
(embeddings, projection, attention, FFN, pooler), not only in total. The encoders are
built inside a fresh ``tf.Graph``: the same `build_encoder`, the same variables and
shapes, but their random initial values are never computed (in eager mode that is half
the cost of building a base-size model) and nothing accumulates between builds.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import albert_tf
from albert_tf.config import AlbertConfig
from albert_tf.parameter_count import (PARTS, encoder_parameter_breakdown,
                                       encoder_parameter_count, float32_mib, sublayer_count)

SHARING = ("all", "attention", "ffn", "none")
# Official configs built under every sharing mode: one of each structure the formula
# has (E != H with a projection: albert_tiny; hidden groups with inner layers:
# albert_tiny_groups; E == H, no projection: bert_tiny) and the base model with published
# counts under every mode (albert_base). albert_mini, albert_small and bert_mini differ
# from these only in dimensions (the formula does not branch on the name or the sizes),
# and bert_base's one published count is its own sharing, "none" (BUILT_PUBLISHED below).
CHEAP_OFFICIAL = ("albert_tiny", "albert_tiny_groups", "bert_tiny", "albert_base")
BIN = os.path.dirname(sys.executable)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OFFICIAL = sorted(f[:-len(".json")] for f in os.listdir(os.path.join(ROOT, "official_configs",
                                                                     "models"))
                  if f.endswith(".json"))


def built_parts(config: AlbertConfig) -> dict[str, int]:
    """``{part: parameters}`` of ``build_encoder(config)``, from its layers by name, plus
    ``total``: the model's own ``count_params()``."""
    from albert_tf.backend import tf
    with tf.Graph().as_default():
        model = albert_tf.build_encoder(config)
        layers = {layer.name: layer.count_params() for layer in model.layers}
        total = model.count_params()
    parts = {"embeddings": layers.pop("embeddings"),
             "projection": layers.pop("embedding_projection", 0),
             "attention": sum(n for name, n in layers.items() if name.endswith("_attention")),
             "ffn": sum(n for name, n in layers.items() if name.endswith("_ffn")),
             "pooler": layers.pop("pooler")}
    unaccounted = {name: n for name, n in layers.items()
                   if n and not name.endswith(("_attention", "_ffn"))}
    assert not unaccounted, f"layers with weights outside the formula: {unaccounted}"
    assert sum(parts.values()) == total
    return dict(parts, total=total)


def assert_counts_match(config: AlbertConfig) -> dict[str, int]:
    """The formula's parts and total equal the built encoder's; returns the built ones."""
    expected = built_parts(config)
    breakdown = encoder_parameter_breakdown(config)
    assert list(breakdown) == list(PARTS)
    assert dict(breakdown, total=encoder_parameter_count(config)) == expected, config
    return expected


# ------------------------------------------------------------- official configs
# The published counts of the base models, as built (the built larger ones: test_model.py's
# test_published_parameter_counts). albert_base's own sharing is "all", bert_base's "none".
BUILT_PUBLISHED = {("albert_base", "all"): 11_683_584, ("albert_base", "attention"): 63_647_232,
                   ("albert_base", "ffn"): 37_686_528, ("albert_base", "none"): 89_650_176,
                   ("bert_base", "none"): 109_482_240}


@pytest.mark.slow
@pytest.mark.parametrize("name, sharing", [(name, sharing) for name in CHEAP_OFFICIAL
                                           for sharing in SHARING] + [("bert_base", "none")])
def test_count_equals_built_official_encoder(name, sharing):
    built = assert_counts_match(albert_tf.load_config(name).replace(sharing=sharing))
    if (name, sharing) in BUILT_PUBLISHED:
        assert built["total"] == BUILT_PUBLISHED[name, sharing]


def test_counts_of_every_official_config_without_building():
    """The published counts, including the configs too large to build in a test."""
    counts = {name: encoder_parameter_count(albert_tf.load_config(name))
              for name in ("albert_base", "albert_large", "albert_xlarge", "albert_xxlarge",
                           "bert_base")}
    assert counts == {"albert_base": 11_683_584, "albert_large": 17_683_968,
                      "albert_xlarge": 58_724_864, "albert_xxlarge": 222_595_584,
                      "bert_base": 109_482_240}
    base = albert_tf.load_config("albert_base")
    assert [encoder_parameter_count(base.replace(sharing=s)) for s in SHARING] == [
        11_683_584, 63_647_232, 37_686_528, 89_650_176]
    assert encoder_parameter_breakdown(base) == {
        "embeddings": (30000 + 512 + 2) * 128 + 2 * 128, "projection": 128 * 768 + 768,
        "attention": 4 * (768 * 768 + 768) + 2 * 768,
        "ffn": 2 * 768 * 3072 + 3072 + 768 + 2 * 768, "pooler": 768 * 768 + 768}
    assert float32_mib(2**18) == 1.0


# ------------------------------------------ hidden groups, inner layers, E vs H (small)
SMALL = AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=4,
                     num_attention_heads=2, intermediate_size=24, max_position_embeddings=16,
                     type_vocab_size=3)


@pytest.mark.slow
@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("layers, groups, inner, embedding", [
    (3, 2, 2, 16),     # G > 1 and K > 1, uneven groups (2 + 1 layers), E == H
    (3, 3, 1, 8),      # a group per layer (G == L), E != H
    (2, 1, 2, 8),      # one group of two inner layers, E != H
])   # (L=4, G=2, K=2, E != H) is albert_tiny_groups, above
def test_count_equals_built_encoder_with_groups(layers, groups, inner, embedding, sharing):
    assert_counts_match(SMALL.replace(num_hidden_layers=layers, num_hidden_groups=groups,
                                      inner_group_num=inner, embedding_size=embedding,
                                      sharing=sharing))


def test_pruned_heads_count():
    """N * D != H after structured head pruning (``attention_head_size``)."""
    assert_counts_match(SMALL.replace(num_attention_heads=3, attention_head_size=4,
                                      sharing="none"))


@pytest.mark.parametrize("sharing", SHARING)
def test_groups_that_no_layer_uses_have_no_weights(sharing):
    """Layer i uses group int(i / L * G) in floating point (as the original): for
    L = G = 22 one group is skipped, so the encoder has 21 groups' weights, not 22.
    Checked against the encoder's own naming rule (`sublayer_name`, which decides which
    sublayers `encoder_graph` creates) rather than by building 22 layers."""
    from albert_tf.networks.encoder import sublayer_name
    config = SMALL.replace(num_hidden_layers=22, num_hidden_groups=22, inner_group_num=2,
                           sharing=sharing)
    for kind in ("attention", "ffn"):
        names = {sublayer_name(config, i, kind, k)
                 for i in range(config.num_hidden_layers) for k in range(2)}
        assert sublayer_count(config, kind) == len(names)
        assert len(names) == (42 if sharing in ("all", kind) else 44)


def test_sublayer_count_rejects_unknown_kind():
    with pytest.raises(ValueError, match="'attention' or 'ffn'"):
        sublayer_count(SMALL, "pooler")


# ------------------------------------------------------------- the console script
def test_info_prints_every_official_config_without_tensorflow(tmp_path):
    """Runs the installed ``albert-tf-info`` console script in a Python process that
    then reports whether TensorFlow (or Keras) was imported."""
    script = os.path.join(BIN, "albert-tf-info")
    if not os.path.exists(script):
        pytest.fail(f"console script albert-tf-info is not installed in {BIN} (pip install -e .)")
    probe = (
        "import runpy, sys\n"
        "code = 0\n"
        f"sys.argv = [{script!r}]\n"
        "try:\n"
        "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    code = e.code\n"
        "heavy = sorted(m for m in ('tensorflow', 'tf_keras', 'keras') if m in sys.modules)\n"
        "print('IMPORTED', ','.join(heavy) or '-')\n"
        "sys.exit(code)\n")
    env = {k: v for k, v in os.environ.items() if k != "ALBERT_TF_VERBOSE"}
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, text=True,
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "IMPORTED -", f"albert-tf-info imported {lines[-1]}"
    table = lines[:-1]
    assert table[0].startswith("| model | V | E | H | L | G x K | heads | I | sharing | "
                               "parameters |")
    assert "| albert_base | 30000 | 128 | 768 |" in result.stdout
    rows = {line.split("|")[1].strip(): line for line in table[2:]}
    assert sorted(rows) == OFFICIAL, table
    for name, line in rows.items():
        count = encoder_parameter_count(albert_tf.load_config(name))
        assert f"| {count:,} |" in line, line
    assert not result.stderr.strip(), result.stderr


def test_info_describes_a_model_directory_by_its_config(tmp_path):
    """Issue #44 (fresh pass): ``albert-tf-info --models=runs/sst2/best`` was a 32-line
    IsADirectoryError traceback; a model directory is described by its config.json, and
    any other directory is one line saying what it is."""
    from albert_tf.bin.info import _config_path, describe
    from albert_tf.user_inputs import InputError
    config = albert_tf.load_config("albert_tiny")
    model = tmp_path / "best"
    model.mkdir()
    config.to_json(str(model / "config.json"))
    rows = describe([str(model)], None)
    assert rows[2].startswith(f"| {model} | {config.vocab_size} | {config.embedding_size} | "
                              f"{config.hidden_size} |")
    assert f"| {encoder_parameter_count(config):,} |" in rows[2]
    (tmp_path / "notes").mkdir()
    with pytest.raises(InputError, match=r"--models=.*notes is not an albert-tf model "
                       r"directory \(no config.json\)"):
        _config_path(str(tmp_path / "notes"))
    assert _config_path("albert_base") == "albert_base"
