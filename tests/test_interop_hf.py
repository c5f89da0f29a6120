"""Hugging Face reader/exporter: .bin files, E == H, and every kind of bad input."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import albert_tf
from albert_tf.interop import ConversionError, convert_hf, export_hf, name_map

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SMALL = dict(vocab_size=60, embedding_size=8, hidden_size=16, num_hidden_layers=2,
             num_hidden_groups=2, inner_group_num=1, num_attention_heads=2,
             intermediate_size=32, max_position_embeddings=20, hidden_dropout_prob=0.0,
             attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0)


def randomize(module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "LayerNorm" in name or "layer_norm" in name:
                p.copy_(1.0 + 0.2 * noise if name.endswith("weight") else 0.1 * noise)
            else:
                p.copy_(0.2 * noise)
    module.eval()


def inputs(vocab_size: int):
    rng = np.random.RandomState(0)
    ids = rng.randint(0, vocab_size, size=(2, 9)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[0, 5:] = 0
    types = np.zeros_like(ids)
    return ({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types},
            {"input_ids": torch.tensor(ids, dtype=torch.long),
             "attention_mask": torch.tensor(mask, dtype=torch.long),
             "token_type_ids": torch.tensor(types, dtype=torch.long)})


@pytest.fixture(scope="module")
def hf_model(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_small")
    model = transformers.AlbertForPreTraining(transformers.AlbertConfig(**SMALL))
    randomize(model, 0)
    model.save_pretrained(str(root))
    return root, model


def _nothing_written(parent, name):
    return not os.path.exists(os.path.join(parent, name)) and not [
        p for p in os.listdir(parent) if p.startswith(f".{name}.")]


@pytest.mark.slow
def test_pytorch_bin_is_read_with_weights_only_and_tied_copies_are_checked(hf_model, tmp_path):
    _, model = hf_model
    src = tmp_path / "bin_model"
    src.mkdir()
    model.config.save_pretrained(str(src))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state["predictions.decoder.weight"] = state["albert.embeddings.word_embeddings.weight"].clone()
    state["predictions.decoder.bias"] = state["predictions.bias"].clone()
    state["albert.embeddings.position_ids"] = torch.arange(20)[None]
    torch.save(state, str(src / "pytorch_model.bin"))
    report = convert_hf(str(src), str(tmp_path / "ours"))
    skipped = dict(report.skipped)
    assert skipped["predictions.decoder.weight"] == \
        "tied copy of albert.embeddings.word_embeddings.weight"
    assert skipped["albert.embeddings.position_ids"].startswith("non-persistent buffer")
    ours_in, hf_in = inputs(60)
    with torch.no_grad():
        expected = model(**hf_in).prediction_logits.numpy()
    got = albert_tf.load_pretrainer(str(tmp_path / "ours"))(ours_in)["mlm_logits"].numpy()
    assert np.abs(got - expected).max() <= 1e-5

    # An untied decoder cannot be represented: say so instead of dropping it.
    state["predictions.decoder.weight"] += 1.0
    torch.save(state, str(src / "pytorch_model.bin"))
    with pytest.raises(ConversionError, match=r"predictions.decoder.weight differs from "
                                              r"albert.embeddings.word_embeddings.weight"):
        convert_hf(str(src), str(tmp_path / "untied"))
    assert _nothing_written(tmp_path, "untied")


class _Payload:
    def __reduce__(self):
        return (os.getcwd, ())


def test_pickled_code_in_a_bin_file_is_refused(hf_model, tmp_path):
    _, model = hf_model
    src = tmp_path / "evil"
    src.mkdir()
    model.config.save_pretrained(str(src))
    torch.save({"albert.pooler.bias": torch.zeros(16), "x": _Payload()},
               str(src / "pytorch_model.bin"))
    with pytest.raises(ConversionError, match=r"pytorch_model.bin: cannot load with "
                                              r"torch.load\(weights_only=True\)"):
        convert_hf(str(src), str(tmp_path / "out"))


def test_directory_without_weights(hf_model, tmp_path):
    src = tmp_path / "no_weights"
    src.mkdir()
    hf_model[1].config.save_pretrained(str(src))
    with pytest.raises(ConversionError, match=r"no_weights: no weights; looked for "
                                              r"\['model.safetensors'"):
        convert_hf(str(src), str(tmp_path / "out"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConversionError, match=r"empty: no config.json"):
        convert_hf(str(empty), str(tmp_path / "out"))
    assert _nothing_written(tmp_path, "out")


def test_truncated_safetensors(hf_model, tmp_path):
    root, _ = hf_model
    src = tmp_path / "truncated"
    src.mkdir()
    (src / "config.json").write_bytes((root / "config.json").read_bytes())
    data = (root / "model.safetensors").read_bytes()
    (src / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ConversionError) as err:
        convert_hf(str(src), str(tmp_path / "out"))
    assert f"{src / 'model.safetensors'}: not a readable safetensors file" in str(err.value)
    assert "truncated" in str(err.value)
    assert _nothing_written(tmp_path, "out")


def test_config_from_another_model_type(hf_model, tmp_path):
    root, _ = hf_model
    src = tmp_path / "gpt2"
    src.mkdir()
    (src / "model.safetensors").write_bytes((root / "model.safetensors").read_bytes())
    (src / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": 16}))
    with pytest.raises(ConversionError, match=r"gpt2/config.json: model_type 'gpt2' is not "
                                              r"supported"):
        convert_hf(str(src), str(tmp_path / "out"))
    assert _nothing_written(tmp_path, "out")


def test_shape_disagreeing_with_config_names_the_tensor(hf_model, tmp_path):
    root, _ = hf_model
    src = tmp_path / "wrong_config"
    src.mkdir()
    (src / "model.safetensors").write_bytes((root / "model.safetensors").read_bytes())
    cfg = json.loads((root / "config.json").read_text())
    (src / "config.json").write_text(json.dumps(dict(cfg, intermediate_size=48)))
    with pytest.raises(ConversionError, match=r"albert.encoder.albert_layer_groups.0.albert_layers"
                                              r".0.ffn.weight: shape \[32, 16\] after transpose "
                                              r"disagrees with the config, which needs \[16, 48\]"):
        convert_hf(str(src), str(tmp_path / "out"))


def test_equal_embedding_and_hidden_size(tmp_path):
    """E == H: an identity mapping_in converts (and is written back); any other is refused."""
    config = transformers.AlbertConfig(**dict(SMALL, embedding_size=16))
    model = transformers.AlbertForPreTraining(config)
    randomize(model, 1)
    mapping = model.albert.encoder.embedding_hidden_mapping_in
    with torch.no_grad():
        mapping.weight.copy_(torch.eye(16))
        mapping.bias.zero_()
    model.save_pretrained(str(tmp_path / "hf"))
    report = convert_hf(str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert ("albert.encoder.embedding_hidden_mapping_in.weight" in dict(report.skipped))
    ours = albert_tf.load_pretrainer(str(tmp_path / "ours"))
    assert not any(w.name.startswith("embedding_projection") for w in ours.weights)
    ours_in, hf_in = inputs(60)
    with torch.no_grad():
        expected = model(**hf_in).prediction_logits.numpy()
    assert np.abs(ours(ours_in)["mlm_logits"].numpy() - expected).max() <= 1e-5
    export_hf(str(tmp_path / "ours"), str(tmp_path / "back"))
    back = transformers.AlbertForPreTraining.from_pretrained(str(tmp_path / "back")).eval()
    with torch.no_grad():
        assert np.abs(back(**hf_in).prediction_logits.numpy() - expected).max() <= 1e-5

    with torch.no_grad():
        mapping.weight.add_(0.01)
    model.save_pretrained(str(tmp_path / "hf2"))
    with pytest.raises(ConversionError, match=r"embedding_hidden_mapping_in.* is not the identity"):
        convert_hf(str(tmp_path / "hf2"), str(tmp_path / "ours2"))


def test_export_rejects_unshared_models_and_writes_albert_model_without_heads(tmp_path):
    # Unshared with E != H is neither an HF ALBERT nor an HF BERT (BERT shapes export as
    # BERT: tests/test_interop_bert_export.py).
    unshared = albert_tf.AlbertConfig(vocab_size=30, embedding_size=8, hidden_size=16,
                                      num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=32, max_position_embeddings=16,
                                      sharing="none")
    albert_tf.save_model_dir(albert_tf.build_encoder(unshared), str(tmp_path / "unshared"))
    with pytest.raises(ConversionError, match=r"sharing='none' cannot be exported"):
        export_hf(str(tmp_path / "unshared"), str(tmp_path / "out"))
    assert _nothing_written(tmp_path, "out")

    albert = unshared.replace(sharing="all")
    encoder = albert_tf.build_encoder(albert)
    albert_tf.save_model_dir(encoder, str(tmp_path / "encoder"))
    report = export_hf(str(tmp_path / "encoder"), str(tmp_path / "hf_base"))
    assert {t for t, _ in report.missing} >= {"mlm/output_bias", "sop/kernel"}
    hf_config = json.loads((tmp_path / "hf_base" / "config.json").read_text())
    assert hf_config["architectures"] == ["AlbertModel"]
    base, info = transformers.AlbertModel.from_pretrained(str(tmp_path / "hf_base"),
                                                          output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ours_in, hf_in = inputs(30)
    with torch.no_grad():
        expected = base.eval()(**hf_in).last_hidden_state.numpy()
    assert np.abs(encoder(ours_in)["sequence_output"].numpy() - expected).max() <= 1e-5


def test_export_writes_the_umask_s_modes(tmp_path):
    """Issue #44 (fresh pass): the model.safetensors of every --to=hf was 0600 under umask
    022 (safetensors writes a temporary file and renames it), unreadable to a server or a
    colleague running as another user; every file of the export gets the umask's modes."""
    import stat
    config = albert_tf.AlbertConfig(vocab_size=30, embedding_size=8, hidden_size=16,
                                    num_hidden_layers=2, num_attention_heads=2,
                                    intermediate_size=32, max_position_embeddings=16)
    albert_tf.save_model_dir(albert_tf.build_encoder(config), str(tmp_path / "encoder"))
    old = os.umask(0o022)
    try:
        export_hf(str(tmp_path / "encoder"), str(tmp_path / "hf"))
    finally:
        os.umask(old)
    modes = {name: stat.S_IMODE(os.stat(tmp_path / "hf" / name).st_mode)
             for name in os.listdir(tmp_path / "hf")}
    assert "model.safetensors" in modes and set(modes.values()) == {0o644}, modes
    assert sorted(os.listdir(tmp_path)) == ["encoder", "hf"]   # no probe or stage left


def test_name_maps_cover_every_weight_once():
    """Each table, expanded for a config, maps onto our weights one-to-one."""
    cfg = albert_tf.AlbertConfig(vocab_size=30, embedding_size=8, hidden_size=16,
                                 num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2,
                                 num_attention_heads=2, intermediate_size=32,
                                 max_position_embeddings=16)
    ours = {w.name.rsplit(":", 1)[0] for w in albert_tf.build_pretrainer(cfg).weights}
    for table in (name_map.GOOGLE, name_map.HF_ALBERT):
        targets = [r.target for r in table.expand(cfg).values()]
        assert sorted(targets) == sorted(ours), table.name
    encoder_targets = [r.target for r in name_map.KERAS_HUB.expand(cfg).values()]
    assert set(encoder_targets) == {n for n in ours if not n.startswith(("mlm/", "sop/"))}
    bert = cfg.replace(embedding_size=16, sharing="none", num_hidden_groups=1, inner_group_num=1)
    bert_weights = {w.name.rsplit(":", 1)[0] for w in albert_tf.build_pretrainer(bert).weights}
    assert sorted(r.target for r in name_map.HF_BERT.expand(bert).values()) == sorted(bert_weights)


# ------------------------------------------------------------------ vocabularies come along
BERT_SMALL = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=20)
CASED_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "The", "the", "Paris", "is", "a",
               "city", "##s", ",", "."] + [f"w{i}" for i in range(16)]


def _hf_bert_dir(root, tokenizer_layout: str) -> str:
    """A Hugging Face BERT directory with a cased WordPiece vocabulary, as the Hub has it
    (``vocab.txt`` + ``tokenizer_config.json``) or as transformers >= 5 saves it
    (``tokenizer.json`` + ``tokenizer_config.json``, no vocab.txt)."""
    model = transformers.BertForPreTraining(transformers.BertConfig(
        vocab_size=len(CASED_VOCAB), **BERT_SMALL))
    randomize(model, 2)
    model.save_pretrained(str(root))
    (root / "vocab.txt").write_text("\n".join(CASED_VOCAB) + "\n", encoding="utf-8")
    if tokenizer_layout == "hub":
        (root / "tokenizer_config.json").write_text(json.dumps(
            {"do_lower_case": False, "model_max_length": 512}))
    else:
        transformers.BertTokenizerFast.from_pretrained(str(root), do_lower_case=False) \
            .save_pretrained(str(root))
        os.remove(root / "vocab.txt")
    return str(root)


@pytest.mark.parametrize("layout", ["hub", "transformers_5"])
def test_bert_vocab_txt_and_casing_come_along_both_ways(tmp_path, layout):
    from albert_tf.checkpoints import recorded_casing
    from albert_tf.text.vocabulary import find_vocabulary
    source = _hf_bert_dir(tmp_path / "hf_bert", layout)
    report = convert_hf(source, str(tmp_path / "ours"))
    ours = tmp_path / "ours"
    assert (ours / "vocab.txt").read_text(encoding="utf-8").splitlines() == CASED_VOCAB
    assert find_vocabulary(str(ours))[0] == "wordpiece"
    assert recorded_casing(str(ours)) is False
    assert "do_lower_case=False (from the source's tokenizer_config.json) -> " \
           "tokenizer_config.json" in report.notes
    export_hf(str(ours), str(tmp_path / "back"))
    back = transformers.BertTokenizerFast.from_pretrained(str(tmp_path / "back"))
    original = transformers.BertTokenizerFast.from_pretrained(source)
    text = "The city, Paris."
    assert back(text)["input_ids"] == original(text)["input_ids"] == [2, 5, 10, 12, 7, 13, 3]


def test_albert_spiece_model_and_casing_come_along(hf_model, tmp_path):
    root, _ = hf_model
    src = tmp_path / "hf_albert"
    src.mkdir()
    for name in ("config.json", "model.safetensors"):
        (src / name).write_bytes((root / name).read_bytes())
    spm = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "official_configs", "vocab", "imdb_pydocs_8k.model")
    with open(spm, "rb") as f:
        (src / "spiece.model").write_bytes(f.read())
    (src / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True,
                                                           "keep_accents": False}))
    report = convert_hf(str(src), str(tmp_path / "ours"))
    assert f"{src / 'spiece.model'} -> vocab.model" in report.assets
    assert (tmp_path / "ours" / "vocab.model").read_bytes() == (src / "spiece.model").read_bytes()
    assert json.loads((tmp_path / "ours" / "tokenizer_config.json").read_text()) == {
        "do_lower_case": True}
