"""Google's original TF1 checkpoints -> albert-tf, checked against a NumPy forward pass.

The checkpoints are written here with tf.compat.v1 variables and a v1 Saver, under
exactly the variable names and shapes of google-research/albert (``modeling.py`` and
``run_pretraining.py``), with Adam/LAMB slots and ``global_step``, and a second copy in
the TF-Hub TF1 module layout where every name starts with ``module/``. The reference
forward pass below is written from the original equations, not from our layers.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.backend import tf

import albert_tf
from albert_tf.bin.convert import run_conversion
from albert_tf.checkpoints import recorded_casing
from albert_tf.interop import ConversionError, convert_google
from albert_tf.interop import converter as converter_module
from albert_tf.outputs import (CONVERTED_MODEL, MARKER_FILE, MODEL_DIRECTORY, OutputError,
                               write_marker)
from albert_tf.text.vocabulary import find_vocabulary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Tiny sizes, two hidden groups of two inner layers each.
V, E, H, L, G, K, N, I, P, T = 50, 8, 16, 4, 2, 2, 2, 32, 24, 2
ORIGINAL_CONFIG = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
    "embedding_size": E, "hidden_size": H, "initializer_range": 0.02, "intermediate_size": I,
    "max_position_embeddings": P, "num_attention_heads": N, "num_hidden_layers": L,
    "num_hidden_groups": G, "net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0,
    "inner_group_num": K, "down_scale_factor": 1, "type_vocab_size": T, "vocab_size": V,
}


def original_variables(seed: int = 0) -> dict[str, np.ndarray]:
    """Every variable of an original ALBERT pretraining graph, by its TF1 name."""
    rng = np.random.RandomState(seed)

    def w(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ln(scope, width):
        return {f"{scope}/gamma": (1.0 + rng.standard_normal(width) * 0.2).astype(np.float32),
                f"{scope}/beta": w(width, scale=0.1)}

    v = {"bert/embeddings/word_embeddings": w(V, E, scale=0.5),
         "bert/embeddings/token_type_embeddings": w(T, E, scale=0.5),
         "bert/embeddings/position_embeddings": w(P, E, scale=0.5),
         **ln("bert/embeddings/LayerNorm", E),
         "bert/encoder/embedding_hidden_mapping_in/kernel": w(E, H),
         "bert/encoder/embedding_hidden_mapping_in/bias": w(H, scale=0.1)}
    for g in range(G):
        for k in range(K):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{k}/"
            for name in ("query", "key", "value"):
                v[p + f"attention_1/self/{name}/kernel"] = w(H, H)       # [H, N * D]
                v[p + f"attention_1/self/{name}/bias"] = w(H, scale=0.1)
            v[p + "attention_1/output/dense/kernel"] = w(H, H)
            v[p + "attention_1/output/dense/bias"] = w(H, scale=0.1)
            v.update(ln(p + "LayerNorm", H))
            v[p + "ffn_1/intermediate/dense/kernel"] = w(H, I)
            v[p + "ffn_1/intermediate/dense/bias"] = w(I, scale=0.1)
            v[p + "ffn_1/intermediate/output/dense/kernel"] = w(I, H, scale=0.2)
            v[p + "ffn_1/intermediate/output/dense/bias"] = w(H, scale=0.1)
            v.update(ln(p + "LayerNorm_1", H))
    v["bert/pooler/dense/kernel"] = w(H, H)
    v["bert/pooler/dense/bias"] = w(H, scale=0.1)
    v["cls/predictions/transform/dense/kernel"] = w(H, E)
    v["cls/predictions/transform/dense/bias"] = w(E, scale=0.1)
    v.update(ln("cls/predictions/transform/LayerNorm", E))
    v["cls/predictions/output_bias"] = w(V, scale=0.1)
    v["cls/seq_relationship/output_weights"] = w(2, H)                   # [2, H]
    v["cls/seq_relationship/output_bias"] = w(2, scale=0.1)
    return v


def write_tf1_checkpoint(variables: dict[str, np.ndarray], save_path: str, prefix: str = "",
                         optimizer_slots: bool = True) -> None:
    """A v1 Saver checkpoint of graph variables named ``prefix + name``."""
    graph = tf.Graph()
    with graph.as_default():
        for name, value in variables.items():
            tf.compat.v1.Variable(value, name=prefix + name)
            if optimizer_slots:
                tf.compat.v1.Variable(np.full_like(value, 0.5), name=prefix + name + "/adam_m")
                tf.compat.v1.Variable(np.full_like(value, 0.25), name=prefix + name + "/adam_v")
        tf.compat.v1.Variable(np.int64(125000), name=prefix + "global_step")
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, save_path, write_meta_graph=False)


# ------------------------------------------------------------ NumPy reference (float64)
def _layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x):  # the original's gelu: tanh approximation
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def reference_forward(v, ids, mask, types):
    v = {k: x.astype(np.float64) for k, x in v.items()}
    b, s = ids.shape
    d = H // N
    x = (v["bert/embeddings/word_embeddings"][ids]
         + v["bert/embeddings/token_type_embeddings"][types]
         + v["bert/embeddings/position_embeddings"][:s][None])
    x = _layer_norm(x, v["bert/embeddings/LayerNorm/gamma"], v["bert/embeddings/LayerNorm/beta"])
    x = x @ v["bert/encoder/embedding_hidden_mapping_in/kernel"] + \
        v["bert/encoder/embedding_hidden_mapping_in/bias"]
    adder = (1.0 - mask.astype(np.float64))[:, None, None, :] * -10000.0    # [B, 1, 1, T]
    for layer in range(L):
        g = int(layer / L * G)
        for k in range(K):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{k}/"

            def heads(name):
                y = x @ v[p + f"attention_1/self/{name}/kernel"] + v[p + f"attention_1/self/{name}/bias"]
                return y.reshape(b, s, N, d).transpose(0, 2, 1, 3)          # [B, N, S, D]
            q, kk, vv = heads("query"), heads("key"), heads("value")
            logits = q @ kk.transpose(0, 1, 3, 2) / math.sqrt(d) + adder
            probs = np.exp(logits - logits.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            ctx = (probs @ vv).transpose(0, 2, 1, 3).reshape(b, s, H)
            attn = ctx @ v[p + "attention_1/output/dense/kernel"] + v[p + "attention_1/output/dense/bias"]
            attn = _layer_norm(attn + x, v[p + "LayerNorm/gamma"], v[p + "LayerNorm/beta"])
            inter = _gelu(attn @ v[p + "ffn_1/intermediate/dense/kernel"]
                          + v[p + "ffn_1/intermediate/dense/bias"])
            ffn = inter @ v[p + "ffn_1/intermediate/output/dense/kernel"] + \
                v[p + "ffn_1/intermediate/output/dense/bias"]
            x = _layer_norm(ffn + attn, v[p + "LayerNorm_1/gamma"], v[p + "LayerNorm_1/beta"])
    pooled = np.tanh(x[:, 0] @ v["bert/pooler/dense/kernel"] + v["bert/pooler/dense/bias"])
    t = _gelu(x @ v["cls/predictions/transform/dense/kernel"] + v["cls/predictions/transform/dense/bias"])
    t = _layer_norm(t, v["cls/predictions/transform/LayerNorm/gamma"],
                    v["cls/predictions/transform/LayerNorm/beta"])
    mlm = t @ v["bert/embeddings/word_embeddings"].T + v["cls/predictions/output_bias"]
    sop = pooled @ v["cls/seq_relationship/output_weights"].T + v["cls/seq_relationship/output_bias"]
    return {"sequence_output": x, "pooled_output": pooled, "mlm_logits": mlm, "sop_logits": sop}


def _inputs():
    rng = np.random.RandomState(7)
    ids = rng.randint(0, V, size=(2, 10)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 6:] = 0                                          # padding in the second row
    types = np.zeros_like(ids)
    types[:, 5:] = 1
    return ids, mask, types


def _max_diffs(model, variables) -> dict[str, float]:
    ids, mask, types = _inputs()
    ours = model({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    ref = reference_forward(variables, ids, mask, types)
    return {k: float(np.abs(ours[k].numpy() - ref[k]).max()) for k in ref if k in ours}


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """An original release directory: model.ckpt-best, albert_config.json, 30k-clean.model."""
    root = tmp_path_factory.mktemp("albert_release")
    variables = original_variables()
    write_tf1_checkpoint(variables, str(root / "model.ckpt-best"))
    (root / "albert_config.json").write_text(json.dumps(ORIGINAL_CONFIG))
    (root / "30k-clean.model").write_bytes(b"sentencepiece model bytes")
    return root, variables


@pytest.fixture(scope="module")
def hub_module(tmp_path_factory, release):
    """The same weights as a TF-Hub TF1 module: variables/variables.*, module/ prefix."""
    root = tmp_path_factory.mktemp("albert_hub")
    (root / "variables").mkdir()
    (root / "assets").mkdir()
    write_tf1_checkpoint(release[1], str(root / "variables" / "variables"), prefix="module/",
                         optimizer_slots=False)
    (root / "assets" / "albert_config.json").write_text(json.dumps(ORIGINAL_CONFIG))
    return root


# ------------------------------------------------------------------------------ tests
def test_checkpoint_has_the_original_names_and_shapes(release):
    shapes = tf.train.load_checkpoint(str(release[0] / "model.ckpt-best")).get_variable_to_shape_map()
    assert shapes["bert/encoder/transformer/group_1/inner_group_1/attention_1/self/query/kernel"] == [H, H]
    assert shapes["bert/encoder/transformer/group_0/inner_group_1/ffn_1/intermediate/output/dense/kernel"] == [I, H]
    assert shapes["cls/seq_relationship/output_weights"] == [2, H]
    assert shapes["bert/embeddings/word_embeddings/adam_m"] == [V, E]
    assert "global_step" in shapes


@pytest.mark.slow
def test_release_converts_with_report_and_matches_numpy_reference(release, tmp_path, capsys):
    root, variables = release
    out = tmp_path / "albert_out"
    assert run_conversion("google", "albert_tf", str(root), str(out)) == 0
    printed = capsys.readouterr().out
    # Every source tensor appears in the report exactly once: mapped or skipped (with why).
    source = tf.train.load_checkpoint(str(root / "model.ckpt-best")).get_variable_to_shape_map()
    lines = [ln for ln in printed.splitlines() if ln.startswith(("mapped ", "skipped ", "unknown "))]
    reported = [ln.split()[1].rstrip(":") for ln in lines]
    assert sorted(reported) == sorted(source)
    assert "skipped  bert/embeddings/word_embeddings/adam_m: optimizer slot" in printed
    assert "skipped  global_step: training step counter" in printed
    assert ("mapped   cls/seq_relationship/output_weights [2, 16] -> sop/kernel (transpose)"
            in printed)
    assert "summary: 80 mapped, 161 skipped, 0 unknown, 0 missing" in printed

    # The directory: config.json readable by AlbertConfig.from_json, a TF checkpoint, assets.
    config = albert_tf.AlbertConfig.from_json(str(out / "config.json"))
    assert (config.num_hidden_groups, config.inner_group_num, config.hidden_act) == (G, K, "gelu")
    assert (out / "vocab.model").read_bytes() == b"sentencepiece model bytes"
    assert tf.train.load_checkpoint(str(out / "weights")).has_tensor(
        "group_1_inner_1_ffn/output_dense/kernel")

    diffs = _max_diffs(albert_tf.load_pretrainer(str(out)), variables)
    print("google -> ours vs NumPy reference, max abs diff:", diffs)
    assert set(diffs) == {"sequence_output", "pooled_output", "mlm_logits", "sop_logits"}
    assert max(diffs.values()) <= 1e-5, diffs
    encoder_diffs = _max_diffs(albert_tf.load_encoder(str(out)), variables)
    assert set(encoder_diffs) == {"sequence_output", "pooled_output"}
    assert max(encoder_diffs.values()) <= 1e-5, encoder_diffs


@pytest.mark.slow
def test_tf_hub_module_with_module_prefix(hub_module, release, tmp_path):
    report = convert_google(str(hub_module), str(tmp_path / "from_hub"))
    assert report.unknown == [] and report.missing == []
    assert all(src.startswith("module/") for src, *_ in report.mapped)
    assert ("module/global_step", "training step counter") in report.skipped
    diffs = _max_diffs(albert_tf.load_pretrainer(str(tmp_path / "from_hub")), release[1])
    print("TF-Hub module -> ours vs NumPy reference, max abs diff:", diffs)
    assert max(diffs.values()) <= 1e-5, diffs


def test_shapes_that_disagree_with_the_config_name_the_tensor(release, tmp_path):
    root, _ = release
    bad_config = tmp_path / "albert_config.json"
    bad_config.write_text(json.dumps(dict(ORIGINAL_CONFIG, intermediate_size=48)))
    out = tmp_path / "never_written"
    with pytest.raises(ConversionError) as err:
        convert_google(str(root / "model.ckpt-best"), str(out), config_path=str(bad_config))
    message = str(err.value)
    assert ("bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel: "
            "shape [16, 32] disagrees with the config, which needs [16, 48]") in message
    assert not out.exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".never_written")]


def test_more_groups_than_the_config_are_reported_not_dropped(release, tmp_path):
    root, _ = release
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(dict(ORIGINAL_CONFIG, num_hidden_groups=1)))
    with pytest.raises(ConversionError) as err:
        convert_google(str(root / "model.ckpt-best"), str(tmp_path / "out"),
                       config_path=str(config))
    assert "in no row of the google name map" in str(err.value)
    assert "bert/encoder/transformer/group_1/inner_group_0/LayerNorm/beta" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_config_from_another_model_type_is_rejected(release, tmp_path):
    root, _ = release
    hf_like = tmp_path / "albert_config.json"
    hf_like.write_text(json.dumps({"model_type": "bert", "hidden_size": 16, "vocab_size": 50}))
    with pytest.raises(ConversionError, match=r"albert_config.json: this is a Hugging Face config"):
        convert_google(str(root / "model.ckpt-best"), str(tmp_path / "out"),
                       config_path=str(hf_like))
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(dict(ORIGINAL_CONFIG, net_structure_type=1)))
    with pytest.raises(ConversionError, match=r"odd.json: net_structure_type=1"):
        convert_google(str(root / "model.ckpt-best"), str(tmp_path / "out"),
                       config_path=str(odd))
    assert not (tmp_path / "out").exists()


def test_failure_while_writing_leaves_the_output_directory_untouched(release, tmp_path,
                                                                     monkeypatch):
    root, _ = release
    out = tmp_path / "existing"
    out.mkdir()
    (out / "keep.txt").write_text("old model")
    write_marker(str(out), CONVERTED_MODEL)                 # an earlier conversion

    def broken_write(weights, prefix):
        with open(prefix + ".index", "wb") as f:
            f.write(b"partial")
        raise OSError("disk full")
    monkeypatch.setattr(converter_module, "write_weights", broken_write)
    with pytest.raises(OSError, match="disk full"):
        convert_google(str(root), str(out), overwrite=True)
    assert sorted(os.listdir(out)) == [MARKER_FILE, "keep.txt"]
    assert sorted(os.listdir(tmp_path)) == ["existing"]                    # no temp leftovers
    with pytest.raises(OutputError, match="already exists .*; pass --overwrite"):
        convert_google(str(root), str(out))
    (out / MARKER_FILE).unlink()                                    # not albert-tf's output
    with pytest.raises(OutputError, match="albert-tf did not write"):
        convert_google(str(root), str(out), overwrite=True)
    assert os.listdir(out) == ["keep.txt"]
    write_marker(str(out), MODEL_DIRECTORY)                 # a trained model: never replaced
    with pytest.raises(OutputError, match="is an albert-tf model directory .* not a model "
                                          "directory converted by albert-tf-convert"):
        convert_google(str(root), str(out), overwrite=True)
    assert sorted(os.listdir(out)) == [MARKER_FILE, "keep.txt"]


@pytest.mark.slow
def test_console_command(release, tmp_path):
    root, _ = release
    out = tmp_path / "cli_out"
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-m", "albert_tf.bin.convert", "--from=google",
                           f"--input={root}", f"--output_dir={out}"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "summary: 80 mapped, 161 skipped, 0 unknown, 0 missing" in done.stdout
    assert (out / "config.json").exists()
    bad = subprocess.run([sys.executable, "-m", "albert_tf.bin.convert", "--from=hf",
                          f"--input={root}", f"--output_dir={tmp_path / 'bad'}"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert bad.returncode == 1          # what the input is and the --from that reads it
    assert f"--input={root} is an original ALBERT/BERT TF1 checkpoint, not a Hugging Face " \
        "directory" in bad.stderr and "pass --from=google" in bad.stderr
    assert not (tmp_path / "bad").exists()


# ---------------------------------------------------------- vocabularies beside a release
BERT_CONFIG = {   # an original bert_config.json (the multilingual releases add pooler_* keys)
    "attention_probs_dropout_prob": 0.1, "directionality": "bidi", "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "hidden_size": 16, "initializer_range": 0.02,
    "intermediate_size": 32, "max_position_embeddings": 24, "num_attention_heads": 2,
    "num_hidden_layers": 2, "pooler_fc_size": 16, "pooler_num_attention_heads": 2,
    "pooler_num_fc_layers": 3, "pooler_size_per_head": 8, "pooler_type": "first_token_transform",
    "type_vocab_size": 2, "vocab_size": 30}
CASED_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "The", "the", "Paris", "a", "##s",
               ",", "."] + [f"w{i}" for i in range(18)]


def bert_tf1_variables(model) -> dict[str, np.ndarray]:
    """google-research/bert's TF1 names and layouts of a transformers BertForPreTraining."""
    out = {}
    for key, value in model.state_dict().items():
        if key.startswith("cls.predictions.decoder"):        # tied to the word embeddings
            continue
        value = value.numpy()
        name = re.sub(r"layer\.(\d+)\.", r"layer_\1.", key)
        if name == "cls.predictions.bias":
            name = "cls.predictions.output_bias"
        elif name.startswith("cls.seq_relationship."):       # [2, H] in both
            name = name.replace("weight", "output_weights").replace("bias", "output_bias")
        elif name.endswith("_embeddings.weight"):
            name = name[:-len(".weight")]
        elif ".LayerNorm." in name:
            name = name.replace(".weight", ".gamma").replace(".bias", ".beta")
        elif name.endswith(".weight"):                       # nn.Linear [out, in] -> [in, out]
            name, value = name[:-len("weight")] + "kernel", value.T
        out[name.replace(".", "/")] = np.ascontiguousarray(value)
    return out


@pytest.mark.slow
def test_bert_release_converts_with_its_cased_vocab_txt(tmp_path, capsys):
    """An original BERT release (bert_model.ckpt, bert_config.json, vocab.txt) converts; the
    vocabulary comes along with its casing, and the outputs are the Hugging Face model's."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf_config = {k: v for k, v in BERT_CONFIG.items()
                 if k != "directionality" and not k.startswith("pooler_")}
    hf = transformers.BertForPreTraining(transformers.BertConfig(
        **dict(hf_config, hidden_act="gelu_new", hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0))).eval()      # Google's "gelu" is the tanh one
    release = tmp_path / "cased_L-2_H-16_A-2"
    release.mkdir()
    write_tf1_checkpoint(bert_tf1_variables(hf), str(release / "bert_model.ckpt"),
                         optimizer_slots=False)
    (release / "bert_config.json").write_text(json.dumps(BERT_CONFIG))
    (release / "vocab.txt").write_text("\n".join(CASED_VOCAB) + "\n", encoding="utf-8")
    out = tmp_path / "bert_out"
    assert run_conversion("google", "albert_tf", str(release), str(out)) == 0
    printed = capsys.readouterr().out
    assert "[google_bert name map]" in printed and "0 unknown" in printed
    assert "unused key(s) ['directionality', 'pooler_fc_size'" in printed
    assert (out / "vocab.txt").read_bytes() == (release / "vocab.txt").read_bytes()
    assert "do_lower_case=False (the vocabulary has upper-case tokens)" in printed
    assert recorded_casing(str(out)) is False
    config = albert_tf.AlbertConfig.from_json(str(out / "config.json"))
    assert config.is_bert and config.hidden_act == "gelu"

    ids, mask, types = _inputs()
    ids = ids % BERT_CONFIG["vocab_size"]
    ours = albert_tf.load_pretrainer(str(out))(
        {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    with torch.no_grad():
        theirs = hf(input_ids=torch.tensor(ids).long(), attention_mask=torch.tensor(mask).long(),
                    token_type_ids=torch.tensor(types).long())
    np.testing.assert_allclose(ours["mlm_logits"].numpy(), theirs.prediction_logits.numpy(),
                               atol=1e-5)
    np.testing.assert_allclose(ours["sop_logits"].numpy(),
                               theirs.seq_relationship_logits.numpy(), atol=1e-5)


def test_chinese_albert_release_brings_its_vocab_chinese_txt(release, tmp_path):
    """The Chinese ALBERT releases ship vocab_chinese.txt (WordPiece) beside the checkpoint."""
    root, _ = release
    zh = tmp_path / "albert_base_zh"
    zh.mkdir()
    for name in os.listdir(root):
        if name.startswith("model.ckpt-best") or name == "albert_config.json":
            shutil.copyfile(root / name, zh / name)
    (zh / "vocab_chinese.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "的", "是", "##们", "a", "##b"]) + "\n",
        encoding="utf-8")
    report = convert_google(str(zh), str(tmp_path / "zh_out"))
    assert f"{zh / 'vocab_chinese.txt'} -> vocab.txt" in report.assets
    assert find_vocabulary(str(tmp_path / "zh_out"))[0] == "wordpiece"
    assert recorded_casing(str(tmp_path / "zh_out")) is True
