"""A BERT-shaped model (E == H, sharing none) exports to a Hugging Face BERT directory."""

import json

import numpy as np
import torch
import transformers

import albert_tf
from albert_tf.interop.converter import export_hf


def test_bert_exports_to_hf_bert_with_identical_outputs(tmp_path):
    config = albert_tf.load_config("bert_tiny").replace(hidden_act="gelu_exact")
    model = albert_tf.build_pretrainer(config)
    albert_tf.save_model_dir(model, str(tmp_path / "ours"))
    export_hf(str(tmp_path / "ours"), str(tmp_path / "hf"))
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["model_type"] == "bert" and hf_config["hidden_act"] == "gelu"
    hf = transformers.BertForPreTraining.from_pretrained(str(tmp_path / "hf")).eval()

    rng = np.random.default_rng(0)
    x = {"input_word_ids": rng.integers(5, config.vocab_size, (2, 9)).astype(np.int32),
         "input_mask": np.ones((2, 9), np.int32),
         "input_type_ids": (np.arange(9) >= 5).astype(np.int32)[None].repeat(2, 0)}
    x["input_mask"][1, 6:] = 0
    ours = model(x)
    with torch.no_grad():
        theirs = hf(input_ids=torch.from_numpy(x["input_word_ids"]).long(),
                    attention_mask=torch.from_numpy(x["input_mask"]).long(),
                    token_type_ids=torch.from_numpy(x["input_type_ids"]).long())
    np.testing.assert_allclose(theirs.prediction_logits[0].numpy(),
                               ours["mlm_logits"].numpy()[0], atol=1e-5)
    np.testing.assert_allclose(theirs.seq_relationship_logits.numpy(),
                               ours["sop_logits"].numpy(), atol=1e-5)
