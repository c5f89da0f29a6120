"""Finetuned models to Hugging Face and back (issue #29): ``albert-tf-convert --to=hf`` of a
finetuned model directory is the ``AlbertFor...`` / ``BertFor...`` class that computes its
head, with its labels and a tokenizer that gives our ids.

The classifier is `tests/sst2_tiny.py`'s tiny ALBERT finetuned on real SST-2 train text
(labels "negative", "positive"), so its labels on SST-2 dev are learned, not noise. As a
Hugging Face user would: ``AutoModelForSequenceClassification`` + ``AutoTokenizer`` from the
directory predict our labels on the raw dev sentences, and ``--from=hf`` gives our
classifier back with its head. The other heads (random weights) map exactly too.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil

import numpy as np
import pytest

import albert_tf
import sst2_tiny
from albert_tf.heads import registry as heads
from albert_tf.backend import keras, tf
from albert_tf.bin.convert import run_conversion
from albert_tf.checkpoints import (TaskInfo, build_task_model, load_task_model,
                                   named_weights)
from albert_tf.interop import ConversionError, convert_hf, hf_tasks
from albert_tf.text.tokenizer import AlbertTokenizer
from sst2_tiny import SEQ, VOCAB, pack

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

dev, model_dir = sst2_tiny.dev, sst2_tiny.model_dir
LABELS = ("negative", "positive")
AGREEMENT = 0.999          # labels of Hugging Face's model equal to ours (the bar)
LOGITS_TOL = 1e-4


@pytest.fixture(scope="module")
def classifier_dir(model_dir, tmp_path_factory) -> str:
    """The session's tiny SST-2 classifier (`sst2_tiny.model_dir`, labels "0" and "1"),
    copied with its task.json naming the classes `LABELS` (the same learned weights: the
    labels' names play no part in training)."""
    import dataclasses

    from albert_tf.checkpoints import TASK_FILE
    from session_builds import writable_copy
    path = writable_copy(model_dir, str(tmp_path_factory.mktemp("sst2") / "ours"))
    info = TaskInfo.from_json(os.path.join(path, TASK_FILE))
    assert info.label_list == ("0", "1")
    dataclasses.replace(info, label_list=LABELS).to_json(os.path.join(path, TASK_FILE))
    return path


@pytest.fixture(scope="module")
def hf_dir(classifier_dir, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("hf") / "sst2")
    assert run_conversion(None, "hf", classifier_dir, out) == 0
    return out


def hf_ids(tokenizer, sentences) -> list[list[int]]:
    """Hugging Face's ids of ``sentences``, truncated at ``model_max_length``."""
    return tokenizer(list(sentences), truncation=True)["input_ids"]


def our_ids(sentences, seq: int = SEQ) -> list[list[int]]:
    packed = pack(sentences, seq)
    return [row[:n].tolist() for row, n in zip(packed["input_word_ids"],
                                               packed["input_mask"].sum(-1))]


@pytest.mark.slow
def test_classifier_predicts_our_labels_with_its_own_tokenizer(hf_dir, classifier_dir, dev):
    config = json.load(open(os.path.join(hf_dir, "config.json"), encoding="utf-8"))
    assert config["architectures"] == ["AlbertForSequenceClassification"]
    assert config["id2label"] == {"0": "negative", "1": "positive"}
    assert (config["num_labels"], config["problem_type"], config["finetuning_task"]) == (
        2, "single_label_classification", "sst2")
    model, loading = transformers.AutoModelForSequenceClassification.from_pretrained(
        hf_dir, output_loading_info=True)
    assert not any(loading.values()), loading            # every weight, nothing extra
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    assert type(tokenizer).__name__ == "AlbertTokenizer" and tokenizer.model_max_length == SEQ

    ids = hf_ids(tokenizer, dev)
    same_ids = sum(a == b for a, b in zip(ids, our_ids(dev)))
    batch = tokenizer(dev, truncation=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        theirs = model.eval()(**batch).logits.numpy()
    ours_model, info = load_task_model(classifier_dir)
    ours = ours_model({k: tf.constant(v) for k, v in pack(dev, SEQ).items()})["logits"].numpy()
    their_labels = [model.config.id2label[i] for i in theirs.argmax(-1)]
    agree = np.mean([a == b for a, b in zip(their_labels, np.array(info.label_list)[
        ours.argmax(-1)])])
    print(f"SST-2 dev ({len(dev)}): ids equal {same_ids}, labels agree {agree:.4f}, max "
          f"|logit diff| {np.abs(theirs - ours).max():.2e} (transformers "
          f"{transformers.__version__}, torch {torch.__version__})")
    assert same_ids == len(dev)
    assert agree >= AGREEMENT
    assert np.abs(theirs - ours).max() <= LOGITS_TOL
    assert set(their_labels) == set(LABELS)               # both classes predicted


def test_tokenizer_json_is_what_gives_our_ids(hf_dir, dev, tmp_path):
    """transformers' own conversion of ``spiece.model`` makes ALBERT's user-defined pieces
    (``.`` ``-`` ...) added tokens and drops the ``▁`` before them; the exported
    ``tokenizer.json`` scores them as SentencePiece does."""
    bare = tmp_path / "spiece_only"
    bare.mkdir()
    for name in ("config.json", "spiece.model"):
        shutil.copy(os.path.join(hf_dir, name), bare / name)
    (bare / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    converted = transformers.AutoTokenizer.from_pretrained(str(bare))
    same = sum(a == b for a, b in zip(hf_ids(converted, dev), our_ids(dev, 512)))
    print(f"SST-2 dev ids equal to ours from spiece.model alone: {same} of {len(dev)}")
    assert same < len(dev)
    assert "tokenizer" in open(os.path.join(hf_dir, "conversion_report.txt"),
                               encoding="utf-8").read()


AGREEING = ["``quotes''", "maelström", "UPPER case and MiXeD", "1,000 and 2,500,000",
            "東京 タワー", "", "tabs\tand\t\tnewlines\n", "naïve café", "  spaces  ", "ﬁne １２３"]
# The differences the conversion report and docs/models.md list, one example each.
DIFFERING = {"digit-comma split": "a 0, but", "float32 score tie": "sooooo",
             "U+001C": "a\x1cb", "combining class 0 mark": "\u0e31",
             "special-token text": "[MASK] token"}


def test_odd_strings_agree_except_the_documented_differences(hf_dir):
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    ours = AlbertTokenizer(VOCAB)

    def same(text):
        return tokenizer(text)["input_ids"] == [ours.cls_id] + ours.encode(text) + [ours.sep_id]

    assert [s for s in AGREEING if not same(s)] == []
    assert [what for what, s in DIFFERING.items() if same(s)] == []


def test_round_trip_keeps_the_head(hf_dir, classifier_dir, tmp_path, dev):
    back = tmp_path / "back"
    report = convert_hf(hf_dir, str(back))
    assert not report.unknown and not report.missing
    model, info = load_task_model(str(back))
    assert (info.head, info.label_list, info.max_seq_length, info.do_lower_case) == (
        "classification", LABELS, SEQ, True)
    original, _ = load_task_model(classifier_dir)
    a, b = named_weights(original), named_weights(model)
    assert sorted(a) == sorted(b)
    assert all(np.array_equal(a[n].numpy(), b[n].numpy()) for n in a)


@pytest.mark.slow
def test_round_trip_keeps_a_pair_tasks_settings(tmp_path):
    """ours -> Hugging Face -> ours keeps the whole task.json (issue #44, fresh pass): before,
    an RTE model came back with text_pair false and vocab_type null, so its export took one
    text and answered an entailment label from one sentence. The settings Hugging Face has
    no key for are kept in albert_tf/task.json, which transformers ignores."""
    import dataclasses

    from albert_tf.checkpoints import TASK_FILE
    info = TaskInfo("rte", "classification", ("entailment", "not_entailment"), 24,
                    do_lower_case=True, text_pair=True, vocab_type="sentencepiece")
    _random_task_dir(str(tmp_path / "ours"), sst2_tiny.tiny_config(), info, VOCAB)
    assert run_conversion(None, "hf", str(tmp_path / "ours"), str(tmp_path / "hf")) == 0
    config = transformers.AutoConfig.from_pretrained(str(tmp_path / "hf"))
    assert (config.model_type, config.finetuning_task) == ("albert", "rte")
    model, loading = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(tmp_path / "hf"), output_loading_info=True)
    assert not any(loading.values()), loading
    assert type(model).__name__ == "AlbertForSequenceClassification"
    assert run_conversion("hf", "albert_tf", str(tmp_path / "hf"), str(tmp_path / "back")) == 0
    assert TaskInfo.from_json(str(tmp_path / "back" / TASK_FILE)) == info
    # the same directory without the record (as transformers' save_pretrained writes it):
    # RTE is a GLUE pair task; a task albert-tf does not know is said to be unknown
    shutil.rmtree(tmp_path / "hf" / hf_tasks.EXTRAS_DIR)
    convert_hf(str(tmp_path / "hf"), str(tmp_path / "glue"))
    assert TaskInfo.from_json(str(tmp_path / "glue" / TASK_FILE)) == info
    values = json.load(open(tmp_path / "hf" / "config.json", encoding="utf-8"))
    (tmp_path / "hf" / "config.json").write_text(json.dumps(dict(values,
                                                                 finetuning_task="mine")))
    report = convert_hf(str(tmp_path / "hf"), str(tmp_path / "mine"))
    assert TaskInfo.from_json(str(tmp_path / "mine" / TASK_FILE)) == dataclasses.replace(
        info, task="mine", text_pair=False)
    assert any("text_pair unknown" in n and "'mine'" in n for n in report.notes), report.notes


def test_text_pair_and_vocabulary_of_a_directory_from_elsewhere(tmp_path):
    """`hf_tasks.read_head` of Hugging Face directories albert-tf did not write: text_pair
    from the head or from a finetuning_task albert-tf knows, else unknown (said in the
    report); vocab_type from the vocabulary the conversion copies."""
    config = sst2_tiny.tiny_config()

    def head_of(finetuning_task, architecture="AlbertForSequenceClassification",
                vocab=None):
        directory = tmp_path / f"{finetuning_task}_{architecture}"
        directory.mkdir()
        (directory / "config.json").write_text(json.dumps(
            {"model_type": "albert", "architectures": [architecture], "num_labels": 2,
             "finetuning_task": finetuning_task}))
        notes: list[str] = []
        found = hf_tasks.read_head(str(directory), config, "albert", notes, vocab)
        return found[1], " ".join(notes)

    for task, pair in (("rte", True), ("MNLI", True), ("sst-2", False), ("cola", False),
                       ("mr", False)):
        info, notes = head_of(task)
        assert info.text_pair is pair and f"finetuning_task {task!r}" in notes, (task, notes)
    info, notes = head_of("reviews")
    assert not info.text_pair and "text_pair unknown" in notes and info.vocab_type is None
    info, _ = head_of("squad", "AlbertForQuestionAnswering", vocab="x/vocab.txt")
    assert (info.head, info.text_pair, info.vocab_type) == ("span", True, "wordpiece")
    info, _ = head_of("sst2", vocab="x/spiece.model")
    assert info.vocab_type == "sentencepiece"


# ---------------------------------------------------------------------- the other heads
#: The transformers auto class of every head with a Hugging Face head of its own (``hf_dense``):
#: ``AutoModel`` + its ``hf_task``.
AUTO_CLASSES = {name: f"AutoModel{head.hf_task}" for name, head in heads.HEADS.items()
                if head.hf_task and head.hf_dense}


def _random_task_dir(path: str, config, info: TaskInfo, vocab: str):
    keras.utils.set_random_seed(1)
    model = build_task_model(config, info)
    for w in model.weights:                 # far from the initializer: a wrong map shows
        w.assign(tf.random.normal(w.shape, stddev=0.2) + (1.0 if "gamma" in w.name else 0.0))
    albert_tf.save_model_dir(model, path, task_info=info, vocab_file=vocab)
    return model


def _inputs(head: str):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 8000, (3, 10)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    types = (np.arange(10) >= 5).astype(np.int32)[None].repeat(3, 0)
    ours = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
    if head == "multiple_choice":                        # one example of 3 choices
        ours = {k: v[None] for k, v in ours.items()}
    theirs = dict(zip(("input_ids", "attention_mask", "token_type_ids"),
                      (torch.from_numpy(v).long() for v in ours.values())))
    return ours, theirs, mask == 1


@pytest.mark.slow
@pytest.mark.parametrize("head", sorted(AUTO_CLASSES))
def test_every_head_maps_exactly_both_ways(head, tmp_path):
    labels = ("O", "B-X", "I-X") if heads.get(head).labels_required else None
    info = TaskInfo("t", head, labels, 16)
    config = sst2_tiny.tiny_config()
    ours = _random_task_dir(str(tmp_path / "ours"), config, info, VOCAB)
    assert run_conversion(None, "hf", str(tmp_path / "ours"), str(tmp_path / "hf")) == 0
    hf, loading = getattr(transformers, AUTO_CLASSES[head]).from_pretrained(
        str(tmp_path / "hf"), output_loading_info=True)
    assert not any(loading.values()), loading
    x, t, valid = _inputs(head)
    with torch.no_grad():
        theirs = hf.eval()(**t)
    got = ours(x)
    if head == "span":                      # ours is -1e9 at padding, theirs is not masked
        diff = max(np.abs(got[k].numpy() - getattr(theirs, k).numpy())[valid].max()
                   for k in ("start_logits", "end_logits"))
    else:
        diff = np.abs(got["value" if head == "regression" else "logits"].numpy()
                      - theirs.logits.numpy()).max()
    assert diff <= 1e-5, diff
    if labels:
        assert hf.config.id2label == dict(enumerate(labels))
    report = convert_hf(str(tmp_path / "hf"), str(tmp_path / "back"))
    back, back_info = load_task_model(str(tmp_path / "back"))
    assert (back_info.head, back_info.label_list) == (head, labels), report
    assert all(np.array_equal(v.numpy(), named_weights(back)[n].numpy())
               for n, v in named_weights(ours).items())


@pytest.mark.slow
def test_bert_classifier_with_wordpiece(tmp_path, dev, data_dir):
    """A BERT-shaped classifier with a cased WordPiece vocabulary: BertForSequenceClassification
    and BertTokenizer, whose ids are ours on SST-2 dev and on mixed-case IMDB reviews."""
    from albert_tf.text.wordpiece import WordPieceTokenizer
    from albert_tf.text.wordpiece_training import train_wordpiece
    vocab = str(tmp_path / "vocab.txt")
    imdb = os.path.join(data_dir, "imdb", "train.tsv")
    train_wordpiece([imdb], vocab, vocab_size=2000, do_lower_case=False, max_lines=3000)
    with open(imdb, encoding="utf-8") as f:
        reviews = [line.split("\t")[0] for line in itertools.islice(f, 1, 301)]
    config = albert_tf.load_config("bert_tiny").replace(vocab_size=2000,
                                                        hidden_act="gelu_exact")
    info = TaskInfo("sst2", "classification", LABELS, SEQ, do_lower_case=False)
    ours = _random_task_dir(str(tmp_path / "ours"), config, info, vocab)
    assert run_conversion(None, "hf", str(tmp_path / "ours"), str(tmp_path / "hf")) == 0
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "hf"))
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert (type(hf).__name__, type(tokenizer).__name__) == ("BertForSequenceClassification",
                                                             "BertTokenizer")
    wordpiece = WordPieceTokenizer(vocab, do_lower_case=False)
    texts = list(dev) + AGREEING + reviews
    whole = tokenizer(texts)["input_ids"]                  # not truncated
    same = sum([wordpiece.cls_id] + wordpiece.encode(s) + [wordpiece.sep_id] == ids
               for s, ids in zip(texts, whole))
    assert same == len(texts)
    rows = [wordpiece.pack(s, max_seq_length=SEQ) for s in texts]
    x = {k: np.array([r[k] for r in rows[:8]], np.int32) for k in rows[0]}
    with torch.no_grad():
        theirs = hf.eval()(**tokenizer(texts[:8], truncation=True, padding="max_length",
                                       return_tensors="pt")).logits.numpy()
    assert np.abs(ours(x)["logits"].numpy() - theirs).max() <= 1e-5


# ------------------------------------------------------------------------- refusals
def test_every_trained_head_exports_and_one_that_cannot_is_refused_in_one_line():
    assert set(heads.hf_heads()) == set(heads.HEADS)
    with pytest.raises(ConversionError) as err:
        hf_tasks.check_head(heads.get("embedding"), "some/dir")
    message = str(err.value)
    assert "\n" not in message and message.startswith("some/dir: the embedding head has no "
                                                      "Hugging Face class")
    assert all(name in message for name in heads.HEADS)


def test_hugging_face_heads_albert_tf_lacks(tmp_path):
    """A multi-label classifier converts as its encoder (no albert-tf head computes it, and
    the report says so); a malformed ``id2label`` is a one-line error naming the file."""
    config = transformers.AlbertConfig(vocab_size=30, embedding_size=8, hidden_size=16,
                                       num_hidden_layers=1, num_attention_heads=2,
                                       intermediate_size=32, max_position_embeddings=16,
                                       num_labels=3, problem_type="multi_label_classification")
    transformers.AlbertForSequenceClassification(config).save_pretrained(str(tmp_path / "hf"))
    report = convert_hf(str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert not os.path.exists(tmp_path / "ours" / "task.json")
    assert any("multi_label_classification" in n and "only the encoder" in n
               for n in report.notes)
    assert dict(report.skipped)["classifier.weight"].startswith("task head")
    values = json.load(open(tmp_path / "hf" / "config.json", encoding="utf-8"))
    values.update(problem_type=None, id2label={"0": "a", "2": "c"})
    (tmp_path / "hf" / "config.json").write_text(json.dumps(values))
    with pytest.raises(ConversionError, match=r"hf/config.json: id2label: expected") as err:
        convert_hf(str(tmp_path / "hf"), str(tmp_path / "bad"))
    assert "\n" not in str(err.value)
