"""Numerical parity with Hugging Face transformers (PyTorch, CPU) on random weights.

Weights are copied with the real converters (`save_pretrained` -> albert-tf-convert
--from=hf -> our model directory, and back with --to=hf), every parameter is random
(LayerNorm scales and biases included) and the attention mask has padding.
"""

from __future__ import annotations

import numpy as np
import pytest

import albert_tf
from albert_tf.bin.convert import run_conversion
from albert_tf.interop import convert_hf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 1e-5


def randomize(module, seed: int) -> None:
    """Every parameter random: Linear/Embedding N(0, s), LayerNorm scale 1 + N(0, .2)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "LayerNorm" in name or "layer_norm" in name:
                p.copy_(1.0 + 0.2 * noise if name.endswith("weight") else 0.1 * noise)
            elif "embeddings" in name:
                p.copy_(0.2 * noise)
            else:
                p.copy_((0.2 if p.ndim > 1 else 0.1) * noise)
    module.eval()


def make_inputs(vocab_size: int, seed: int = 3):
    rng = np.random.RandomState(seed)
    ids = rng.randint(0, vocab_size, size=(3, 12)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 7:] = 0                                          # padding
    mask[2, 10:] = 0
    types = np.zeros_like(ids)
    types[:, 6:] = 1
    ours = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
    theirs = {"input_ids": torch.tensor(ids, dtype=torch.long),
              "attention_mask": torch.tensor(mask, dtype=torch.long),
              "token_type_ids": torch.tensor(types, dtype=torch.long)}
    return ours, theirs


def max_diff(a, b) -> float:
    a = a.numpy() if hasattr(a, "numpy") else a
    return float(np.abs(np.asarray(a) - b.detach().numpy()).max())


ALBERT_2_GROUPS = dict(vocab_size=99, embedding_size=16, hidden_size=32, num_hidden_layers=4,
                       num_hidden_groups=2, inner_group_num=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=40, hidden_act="gelu_new",
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                       classifier_dropout_prob=0.0)


@pytest.mark.slow
def test_albert_for_pretraining_parity_and_hf_round_trip(tmp_path, capsys):
    hf = transformers.AlbertForPreTraining(transformers.AlbertConfig(**ALBERT_2_GROUPS))
    randomize(hf, seed=0)
    hf.save_pretrained(str(tmp_path / "hf"))
    ours_dir, back_dir = tmp_path / "ours", tmp_path / "hf_back"
    assert run_conversion("hf", "albert_tf", str(tmp_path / "hf"), str(ours_dir)) == 0
    assert "summary: 80 mapped, 0 skipped, 0 unknown, 0 missing" in capsys.readouterr().out

    ours_in, hf_in = make_inputs(99)
    with torch.no_grad():
        base = hf.albert(**hf_in)
        heads = hf(**hf_in)
    ours = albert_tf.load_pretrainer(str(ours_dir))(ours_in)
    diffs = {"sequence_output": max_diff(ours["sequence_output"], base.last_hidden_state),
             "pooled_output": max_diff(ours["pooled_output"], base.pooler_output),
             "mlm_logits": max_diff(ours["mlm_logits"], heads.prediction_logits),
             "sop_logits": max_diff(ours["sop_logits"], heads.sop_logits)}
    print("HF AlbertForPreTraining (G=2, K=2) vs ours, max abs diff:", diffs,
          "max |HF mlm logit|:", float(heads.prediction_logits.abs().max()))
    assert max(diffs.values()) <= TOL, diffs
    encoder = albert_tf.load_encoder(str(ours_dir))(ours_in)
    assert max_diff(encoder["sequence_output"], base.last_hidden_state) <= TOL

    # ours -> HF: AlbertForPreTraining.from_pretrained loads every weight, same outputs.
    assert run_conversion(None, "hf", str(ours_dir), str(back_dir)) == 0
    back, info = transformers.AlbertForPreTraining.from_pretrained(str(back_dir),
                                                                   output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    back.eval()
    with torch.no_grad():
        back_base = back.albert(**hf_in)
        back_heads = back(**hf_in)
    round_trip = {
        "sequence_output": max_diff(back_base.last_hidden_state.numpy(), base.last_hidden_state),
        "pooled_output": max_diff(back_base.pooler_output.numpy(), base.pooler_output),
        "mlm_logits": max_diff(back_heads.prediction_logits.numpy(), heads.prediction_logits),
        "sop_logits": max_diff(back_heads.sop_logits.numpy(), heads.sop_logits)}
    print("HF -> ours -> HF vs HF, max abs diff:", round_trip)
    assert max(round_trip.values()) <= TOL, round_trip
    assert back.config.hidden_act == "gelu_new" and back.config.num_hidden_groups == 2


def test_albert_model_exact_gelu_parity(tmp_path):
    """A bare AlbertModel (no heads), HF's erf "gelu", 3 groups over 6 layers."""
    config = transformers.AlbertConfig(**dict(
        ALBERT_2_GROUPS, hidden_act="gelu", num_hidden_layers=6, num_hidden_groups=3,
        inner_group_num=1, embedding_size=8, hidden_size=24, num_attention_heads=3))
    hf = transformers.AlbertModel(config)
    randomize(hf, seed=1)
    hf.save_pretrained(str(tmp_path / "hf"))
    report = convert_hf(str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert {t for t, _ in report.missing} == {
        "mlm/dense/kernel", "mlm/dense/bias", "mlm/layer_norm/gamma", "mlm/layer_norm/beta",
        "mlm/output_bias", "sop/kernel", "sop/bias"}
    assert albert_tf.AlbertConfig.from_json(str(tmp_path / "ours" / "config.json")).hidden_act \
        == "gelu_exact"
    ours_in, hf_in = make_inputs(99, seed=4)
    with torch.no_grad():
        base = hf(**hf_in)
    ours = albert_tf.load_encoder(str(tmp_path / "ours"))(ours_in)
    diffs = {"sequence_output": max_diff(ours["sequence_output"], base.last_hidden_state),
             "pooled_output": max_diff(ours["pooled_output"], base.pooler_output)}
    print("HF AlbertModel (G=3, erf gelu) vs ours, max abs diff:", diffs)
    assert max(diffs.values()) <= TOL, diffs


def test_bert_parity(tmp_path):
    """BERT = our config with E == H and sharing none (no embedding_projection layer)."""
    config = transformers.BertConfig(vocab_size=97, hidden_size=32, num_hidden_layers=3,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=40, hidden_act="gelu",
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    hf = transformers.BertForPreTraining(config)
    randomize(hf, seed=2)
    hf.save_pretrained(str(tmp_path / "hf"))
    report = convert_hf(str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert not report.missing and not report.unknown
    ours_config = albert_tf.AlbertConfig.from_json(str(tmp_path / "ours" / "config.json"))
    assert ours_config.is_bert and ours_config.hidden_act == "gelu_exact"
    model = albert_tf.load_pretrainer(str(tmp_path / "ours"))
    assert not any(w.name.startswith("embedding_projection") for w in model.weights)
    ours_in, hf_in = make_inputs(97, seed=5)
    with torch.no_grad():
        base = hf.bert(**hf_in)                               # the BertModel
        heads = hf(**hf_in)
    ours = model(ours_in)
    diffs = {"sequence_output": max_diff(ours["sequence_output"], base.last_hidden_state),
             "pooled_output": max_diff(ours["pooled_output"], base.pooler_output),
             "mlm_logits": max_diff(ours["mlm_logits"], heads.prediction_logits),
             "nsp_logits": max_diff(ours["sop_logits"], heads.seq_relationship_logits)}
    print("HF BertModel/BertForPreTraining vs ours (bert), max abs diff:", diffs)
    assert max(diffs.values()) <= TOL, diffs
