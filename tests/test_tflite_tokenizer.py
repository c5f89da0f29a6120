"""The TFLite tokenizer: ALBERT preprocessing folded into the SentencePiece normalizer,
FastSentencepieceTokenize + builtins only, ids identical to the Python tokenizer."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ = 48
TRICKY = ["", "   ", "Hello  WORLD\t\u00a0x\u3000y", "``Quoted''  text '' `` ' ` '''",
          "Café naïve ﬁancé Ｆｕｌｌ ｗｉｄｔｈ", "1,000,000 and 2,5 , 3,", "Straße ÀÉÎÕÜ",
          "a\u200bb\u2028c", "tab\tnew\nline\r\n end", "emoji 🙂 and 中文 and العربية",
          "x" * 300, "word " * 100, "It's 1,000 times BETTER."]


def dev_texts(data_dir, limit=None):
    from albert_tf.data.task_data import load_task
    texts = [ex.text_a for ex in load_task("sst2", os.path.join(data_dir, "glue")).dev]
    rte = load_task("rte", os.path.join(data_dir, "glue")).dev
    texts += [ex.text_a for ex in rte] + [ex.text_b for ex in rte]
    return texts[:limit] if limit else texts


@pytest.mark.slow
def test_deployment_normalizer_reproduces_python_preprocessing(data_dir):
    """SentencePiece with the folded normalizer on *raw* text == AlbertTokenizer.encode."""
    import sentencepiece as spm

    from albert_tf.export.lite_tokenizer import deployment_spm_proto
    from albert_tf.text.tokenizer import AlbertTokenizer
    py = AlbertTokenizer(VOCAB)
    proto = deployment_spm_proto(py.model_proto, True)
    raw = spm.SentencePieceProcessor(model_proto=proto)
    assert raw.get_piece_size() == py.vocab_size
    replacements = py.id_replacements()
    mismatches = []
    for text in TRICKY + dev_texts(data_dir):
        ids = [j for i in raw.encode(text) for j in replacements.get(i, [i])]
        if ids != py.encode(text):
            mismatches.append(text)
    assert not mismatches, mismatches[:5]


@pytest.fixture(scope="module")
def lite_tokenizer():
    from albert_tf.export.lite_tokenizer import LiteTokenizer
    return LiteTokenizer(VOCAB, max_seq_length=SEQ)


def test_graph_packs_singles_and_pairs_like_python(lite_tokenizer, data_dir):
    from albert_tf.backend import tf
    from albert_tf.text.tokenizer import AlbertTokenizer
    py = AlbertTokenizer(VOCAB)
    texts = TRICKY + dev_texts(data_dir, 120)
    out = lite_tokenizer(tf.constant(texts))
    for i, text in enumerate(texts):
        ref = py.pack(text, max_seq_length=SEQ)
        assert {k: out[k][i].numpy().tolist() for k in ref} == ref, text
    a, b = texts[::2][:40], texts[1::2][:40]
    out = lite_tokenizer(tf.constant(a), tf.constant(b))
    for i in range(len(a)):
        ref = py.pack(a[i], b[i], max_seq_length=SEQ)
        assert {k: out[k][i].numpy().tolist() for k in ref} == ref, (a[i], b[i])


@pytest.mark.slow
def test_tflite_model_with_tokenizer(tmp_path, data_dir):
    import albert_tf
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.export.analysis import op_report
    from albert_tf.export.tflite import export_tflite
    from albert_tf.text.tokenizer import AlbertTokenizer
    from albert_tflite.runner import TFLiteRunner
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    model_dir = str(tmp_path / "model")
    albert_tf.save_model_dir(albert_tf.build_classifier(config, 2), model_dir,
                             task_info=TaskInfo("sst2", "classification", ("0", "1"), SEQ),
                             vocab_file=VOCAB)
    out = export_tflite(model_dir, str(tmp_path / "text"), with_tokenizer=True)
    ids_out = export_tflite(model_dir, str(tmp_path / "ids"))
    with open(os.path.join(out, "metadata.json")) as f:
        meta = json.load(f)
    assert meta["custom_ops"] == ["TFText>FastSentencepieceTokenize"]
    assert meta["custom_op_registerers"] == ["AddFastSentencepieceTokenize"]
    assert sorted(meta["signatures"]) == ["serving_default", "tokenize"]
    assert meta["signatures"]["serving_default"]["inputs"] == {
        "text": {"dtype": "string", "shape": [1]}}
    report = op_report(os.path.join(out, "model.tflite"))
    assert report["custom_ops"] == ["TFText>FastSentencepieceTokenize"]   # nothing else custom
    runner = TFLiteRunner(out)
    texts = TRICKY + dev_texts(data_dir, 60) + ["bad \udcff utf"[:4]]
    ids = runner.tokenize_in_graph(texts)
    py = AlbertTokenizer(VOCAB)
    for i, text in enumerate(texts):
        ref = py.pack(text, max_seq_length=SEQ)
        assert {k: ids[i][k].tolist() for k in ref} == ref, text
    # Invalid UTF-8 and 100,000 characters are answered.
    bad = runner.run_text([b"\xff\xfe\xc3( bad", ("spam " * 20000).encode()], None)
    assert all(np.isfinite(o["probabilities"]).all() for o in bad)
    # Same predictions as the ids model with Python tokenization (a blank text: refused).
    texts = [t for t in texts if t.strip()]
    a = np.array([p["probabilities"] for p in runner.predict(texts)])
    b = np.array([p["probabilities"] for p in TFLiteRunner(ids_out).predict(texts)])
    np.testing.assert_allclose(a, b, atol=1e-5)
