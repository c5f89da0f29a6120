"""Issue #18: everything downstream of a model directory takes a WordPiece ``vocab.txt``.

A tiny BERT-shaped model (E == H, no sharing) with a WordPiece vocabulary trained here on
the IMDB corpus: the SavedModel serves raw text as Keras does on the Python tokenizer's ids
(real SST-2 dev sentences, upper-cased, accented); the TFLite ids export and our runner, the
``--with_tokenizer`` export, span answers (detokenized WordPiece) and token-classification
words (whole words); and the mobile SDKs (MediaPipe TextClassifier, Task Library
BertNLClassifier, through `tests/mobile_sdks.py`): their BertTokenizer gives our ids on
ASCII text, and `sdk_bert_ids`' ids elsewhere (accents are not stripped); a cased
vocabulary is refused.
"""

from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest

from tests.mobile_sdks import answers

SEQ = 48
LABELS = ("negative", "positive")


def _variants(sentence: str) -> list[str]:
    accented = sentence.replace("e", "\u00e9").replace("a", "\u00e0").replace("'", "\u2019")
    return [sentence, sentence.upper(), accented]


@pytest.fixture(scope="module")
def texts(data_dir) -> list[str]:
    """Real SST-2 dev sentences, as they are, upper-cased and accented (the first 12 are
    ASCII; ``naïveté`` is in the dev set)."""
    with open(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"), encoding="utf-8") as f:
        rows = [r[0] for r in list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]]
    chosen = rows[:12] + [r for r in rows if "naivet\u00e9" in r][:1]
    return [v for s in chosen for v in _variants(s)] + [
        "It's 1,000,000 times better -- NOT!", "tabs\tand\nnew lines"]   # blank: refused


@pytest.fixture(scope="module")
def vocab(data_dir, tmp_path_factory) -> str:
    from albert_tf.text.wordpiece_training import train_wordpiece
    path = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
    train_wordpiece([os.path.join(data_dir, "corpus", "imdb-unsup.txt")], path,
                    vocab_size=3000, max_lines=3000)
    return path


@pytest.fixture(scope="module")
def tokenizer(vocab):
    from albert_tf.text.wordpiece import WordPieceTokenizer
    return WordPieceTokenizer(vocab)


def _model_dir(root, vocab: str, head: str, labels=None, text_pair=False, lower=True):
    """A BERT-shaped task model directory (E == H, sharing none) with ``vocab``."""
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf.checkpoints import TaskInfo, build_task_model
    keras.utils.set_random_seed(5)
    config = albert_tf.load_config("albert_tiny").replace(
        vocab_size=3000, embedding_size=32, sharing="none", num_hidden_layers=2)
    assert config.is_bert
    info = TaskInfo(head, head, labels, SEQ, do_lower_case=lower, text_pair=text_pair)
    model = build_task_model(config, info)
    path = str(root / f"{head}_{'uncased' if lower else 'cased'}")
    albert_tf.save_model_dir(model, path, task_info=info, vocab_file=vocab)
    return path, model


@pytest.fixture(scope="module")
def classifier(vocab, tmp_path_factory):
    return _model_dir(tmp_path_factory.mktemp("models"), vocab, "classification", LABELS)


def _keras_probs(model, rows: list[dict]) -> np.ndarray:
    from albert_tf.backend import tf
    features = {k: tf.constant([r[k] for r in rows]) for k in rows[0]}
    return tf.nn.softmax(model(features)["logits"]).numpy()


def _serve(model_dir: str, root):
    import tensorflow_text  # noqa: F401  (its ops)
    from albert_tf.backend import tf
    from albert_tf.export.saved_model import export_saved_model
    path = export_saved_model(model_dir, str(root / "serving"))
    return path, tf.saved_model.load(path).signatures


@pytest.mark.slow
def test_saved_model_serves_raw_text_as_keras_on_python_ids(classifier, tokenizer, texts,
                                                           tmp_path):
    from albert_tf.backend import tf
    model_dir, model = classifier
    path, sigs = _serve(model_dir, tmp_path)
    assert sorted(os.listdir(os.path.join(path, "assets"))) == ["labels.txt", "vocab.txt"]
    rows = [tokenizer.pack(t, max_seq_length=SEQ) for t in texts]
    ids = sigs["tokenize"](text=tf.constant(texts))
    assert ids["input_word_ids"].numpy().tolist() == [r["input_word_ids"] for r in rows]
    out = sigs["serving_default"](text=tf.constant(texts))
    np.testing.assert_allclose(out["probabilities"].numpy(), _keras_probs(model, rows),
                               atol=1e-5)


@pytest.fixture(scope="module")
def lite(classifier, tmp_path_factory) -> str:
    """The default TFLite export: one [1, SEQ] signature of ids, SDK metadata embedded."""
    from albert_tf.export.tflite import export_tflite
    return export_tflite(classifier[0], str(tmp_path_factory.mktemp("lite") / "sst2"))


def _runner_probs(export: str, texts: list[str]) -> np.ndarray:
    from albert_tflite.runner import TFLiteRunner
    return np.array([p["probabilities"] for p in TFLiteRunner(export).predict(texts)])


@pytest.mark.slow
def test_tflite_export_ships_vocab_txt_and_the_runner_equals_keras(lite, classifier,
                                                                  tokenizer, texts):
    from albert_tf.export.sdk_metadata import WORDPIECE_SAME_IDS, read_embedded
    assert sorted(os.listdir(lite)) == [".albert-tf-output.json", "labels.txt",
                                        "metadata.json", "model.tflite", "vocab.txt"]
    with open(os.path.join(lite, "metadata.json")) as f:
        meta = json.load(f)
    assert meta["tokenizer"]["type"] == "wordpiece"
    assert meta["tokenizer"]["vocab_file"] == "vocab.txt"
    assert meta["tokenizer"]["special_ids"] == {"pad": 0, "unk": 1, "cls": 2, "sep": 3,
                                                "mask": 4}
    assert meta["sdk"]["same_ids_as_albert_tf"] == WORDPIECE_SAME_IDS
    embedded = read_embedded(os.path.join(lite, "model.tflite"))
    (unit,) = embedded["subgraph_metadata"][0]["input_process_units"]
    assert unit["options_type"] == "BertTokenizerOptions"
    assert embedded["associated_files"] == ["labels.txt", "vocab.txt"]
    rows = [tokenizer.pack(t, max_seq_length=SEQ) for t in texts]
    np.testing.assert_allclose(_runner_probs(lite, texts), _keras_probs(classifier[1], rows),
                               atol=1e-5)


@pytest.mark.slow
def test_sdks_give_our_ids_on_ascii_text_and_their_own_elsewhere(lite, classifier,
                                                                 tokenizer, texts):
    """Measured: the SDKs' BertTokenizer is `sdk_bert_ids` (ASCII lower-casing, no accent
    stripping); its ids are ours exactly on ASCII text, as the metadata says."""
    from albert_tf.export.sdk_metadata import in_wordpiece_same_ids, sdk_bert_ids
    from albert_tf.text.packing import pack_ids
    vocab = {t: i for i, t in enumerate(tokenizer.vocab)}
    emulated = [pack_ids(sdk_bert_ids(vocab, tokenizer.unk_id, t), None, SEQ,
                         tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id) for t in texts]
    expected = _keras_probs(classifier[1], emulated)
    ours = _runner_probs(lite, texts)
    model = os.path.join(lite, "model.tflite")
    ascii_text = [in_wordpiece_same_ids(t) for t in texts]
    assert sum(ascii_text) == 26 and not all(ascii_text)   # (a blank text is refused now)
    for sdk in ("mediapipe", "tflite_support"):
        theirs = np.array([[a["scores"][label] for label in LABELS]
                           for a in answers(model, "classify", sdk, texts)])
        np.testing.assert_allclose(theirs, expected, atol=1e-4)
        np.testing.assert_allclose(theirs[ascii_text], ours[ascii_text], atol=1e-4)
    differ = [t for t in texts if sdk_bert_ids(vocab, tokenizer.unk_id, t)
              != tokenizer.encode(t)]
    assert differ and not any(map(in_wordpiece_same_ids, differ))   # accented ones only


@pytest.mark.slow
def test_cased_vocabulary_is_refused_for_the_sdks(vocab, tmp_path):
    from albert_tf.export import ExportError
    from albert_tf.export.tflite import export_tflite
    model_dir, _ = _model_dir(tmp_path, vocab, "classification", LABELS, lower=False)
    with pytest.raises(ExportError, match=r"cased .*lower-case ASCII.*'Hello World'.*"
                       "--sdk_metadata=off") as error:
        export_tflite(model_dir, str(tmp_path / "on"), sdk_metadata="on")
    assert "\n" not in str(error.value) and not os.path.exists(tmp_path / "on")
    export_tflite(model_dir, str(tmp_path / "auto"), seq_lengths=[16])  # our runner's layout
    with open(tmp_path / "auto" / "metadata.json") as f:
        meta = json.load(f)
    assert meta["sdk"] is None and "lower-case ASCII" in meta["sdk_reason"]


@pytest.mark.slow
def test_with_tokenizer_export_tokenizes_as_python(classifier, tokenizer, texts, lite,
                                                   tmp_path):
    from albert_tf.export.metadata import WORDPIECE_CUSTOM_OPS
    from albert_tf.export.tflite import export_tflite
    from albert_tflite.runner import TFLiteRunner
    export = export_tflite(classifier[0], str(tmp_path / "text"), with_tokenizer=True,
                           batch_size=4)
    with open(os.path.join(export, "metadata.json")) as f:
        meta = json.load(f)
    assert meta["sdk"] is None and "with_tokenizer" in meta["sdk_reason"]
    assert meta["custom_op_registerers"] == [WORDPIECE_CUSTOM_OPS[op]
                                             for op in meta["custom_ops"]]
    assert sorted(meta["custom_ops"]) == sorted(WORDPIECE_CUSTOM_OPS)
    runner = TFLiteRunner(export)
    ids = runner.tokenize_in_graph(texts)
    assert [r["input_word_ids"].tolist() for r in ids] == [
        tokenizer.pack(t, max_seq_length=SEQ)["input_word_ids"] for t in texts]
    labels = [p["label"] for p in runner.predict(texts)]
    assert labels == [p["label"] for p in TFLiteRunner(lite).predict(texts)]


@pytest.mark.slow
def test_span_answer_is_the_detokenized_wordpiece_span(vocab, tokenizer, tmp_path):
    from albert_tf.backend import tf
    model_dir, _ = _model_dir(tmp_path, vocab, "span", text_pair=True)
    _, sigs = _serve(model_dir, tmp_path)
    questions = ["Who directed it?", "What is it?"]
    contexts = ["Kieslowski's morality tale, with un-believable naïveté, is just MOVING.",
                "A gorgeous, witty film: the best of 2002 (so far)."]
    out = sigs["serving_default"](question=tf.constant(questions),
                                  context=tf.constant(contexts))
    ids = sigs["tokenize"](question=tf.constant(questions), context=tf.constant(contexts))
    for row, start, end, answer in zip(ids["input_word_ids"].numpy(),
                                       out["start_index"].numpy(), out["end_index"].numpy(),
                                       out["answer"].numpy()):
        assert 0 < start <= end
        assert answer.decode() == tokenizer.decode(row[start:end + 1].tolist())
    whole = tokenizer.encode(contexts[0])
    assert tokenizer.decode(whole) == ("kieslowski ' s morality tale , with un - believable "
                                       "naivete , is just moving .")


@pytest.mark.slow
def test_token_classification_words_are_whole_words(vocab, tokenizer, tmp_path):
    from albert_tf.backend import tf
    from albert_tf.export.tflite import export_tflite
    from albert_tflite.runner import TFLiteRunner
    labels = ("NEG", "O", "POS")
    model_dir, _ = _model_dir(tmp_path, vocab, "token_classification", labels)
    texts = ["Unbelievably dull, lifeless: don't!", "a gorgeous , witty film ."]
    _, sigs = _serve(model_dir, tmp_path)
    served = sigs["serving_default"](text=tf.constant(texts))
    edge = export_tflite(model_dir, str(tmp_path / "tc"), seq_lengths=[SEQ])
    predicted = TFLiteRunner(edge).predict(texts)
    for text, answer, tokens, tags in zip(texts, predicted, served["token"].numpy(),
                                          served["label"].numpy()):
        assert answer["words"] == text.split()
        pieces = tokenizer.tokenize(text)
        assert [t.decode() for t in tokens[1:len(pieces) + 1]] == pieces
        # Each word's tag is the served tag of its first piece ([CLS] is position 0).
        _, spans = tokenizer.encode_with_offsets(text)
        starts = [i + 1 for i, (start, _) in enumerate(spans)
                  if start == 0 or text[start - 1].isspace()]
        assert answer["labels"] == [tags[i].decode() for i in starts]


@pytest.mark.slow
def test_the_runner_reads_a_wordpiece_export_without_tensorflow(lite):
    """Id models run without TensorFlow, whatever the vocabulary."""
    import subprocess
    import sys
    code = ("import sys; from albert_tflite.runner import TFLiteRunner; "
            f"print(TFLiteRunner({lite!r}).predict(['a gorgeous film'])[0]['label']); "
            "assert 'tensorflow' not in sys.modules, 'imported TensorFlow'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-1] in LABELS
