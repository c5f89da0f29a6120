"""Property-based fuzzing of the serving entry points (issue #20): the SavedModel
``serving_default`` of each head (raw text in, tokenized in-graph) and the TFLite runner.

Inputs: any Unicode (empty, whitespace-only, control and zero-width characters, emoji,
combining marks, strings of up to 100k characters), invalid UTF-8 bytes, batches of 0 to
24 strings, and for pair heads mismatched batch sizes. The contract (module docs of
`albert_tf.export.saved_model`): every byte string but a blank one gets an answer, invalid
UTF-8 decoded with U+FFFD; an empty or whitespace-only string is an InvalidArgumentError
naming its index (the runner's: a ValueError), pair inputs of different batch sizes one
naming both inputs. Properties: output shapes, finite values, probabilities summing to 1, span indices
inside the packed context, and for the classifier the same ids as the Python tokenizer and
the same probabilities as the Keras model; the TFLite runner gives the SavedModel's answer.

Each example is a batch, so a test's strings are about 10x its examples; ``STRINGS`` counts
them (printed at the end with ``-s``). Exports are module-scoped: they are the cost.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert_tf.runtime.runner import is_blank
from fuzzing import fuzz_examples
from test_export_saved_model import SEQ, VOCAB

STRINGS: collections.Counter = collections.Counter()

# Any Unicode scalar value (a str with a lone surrogate has no UTF-8 form to send).
CHARS = st.characters(exclude_categories=("Cs",))
ODD = st.sampled_from([
    "", " ", "   \t\n\r ", "\u00a0\u2003\u3000", "\u200b\u200c\u200d\ufeff\u2060",
    "\x00\x01\x1f\x7f", "\u202e\u202d", "😀👍🏽👨‍👩‍👧", "a\u0301\u0308", "ǅİßΣς", "\ufffd",
    "[CLS] [SEP] <pad> <unk> [MASK]", "``''", "\U0010ffff\U000e0001", "ﷺ",
    "Café ``naïve'' 1,000,000 TIMES"])
LONG = st.builds(lambda s, n: s * n, st.text(CHARS, min_size=1, max_size=4),
                 st.integers(1, 25_000)).filter(lambda t: not is_blank(t))  # to 100k chars
ANY_TEXT = st.one_of(st.text(CHARS, max_size=30), ODD, st.binary(max_size=30),
                     st.text(st.sampled_from(" \t\nab.é😀\u200b"), max_size=12))
TEXT = ANY_TEXT.filter(lambda t: not is_blank(t))         # answered; a blank one is refused
SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]       # (none above U+3000)
BLANK = st.one_of(st.sampled_from(["", b""]), st.text(st.sampled_from(SPACES), min_size=1,
                                                      max_size=8))


@st.composite
def batches(draw, max_size=24):
    """A batch of texts; now and then one very long text among them."""
    texts = draw(st.lists(TEXT, max_size=max_size))
    if texts and draw(st.integers(0, 7)) == 0:
        texts[draw(st.integers(0, len(texts) - 1))] = draw(LONG)
    return texts


def as_bytes(text) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8")


def as_str(text) -> str:
    return text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text


class Fixture(dict):
    def __repr__(self) -> str:
        return f"<fixture {sorted(self)}>"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The four heads exported and loaded (classification, regression on pairs, span,
    pretrained), with the classifier's Keras model and the Python tokenizer. The
    classification, span and pretrained exports are tests/test_export_saved_model.py's
    (built once per session: `tests/serving_models.py`)."""
    import albert_tf
    import tensorflow_text  # noqa: F401  (its ops)
    from albert_tf.backend import tf
    from albert_tf.checkpoints import TaskInfo, load_task_model
    from albert_tf.export.saved_model import export_saved_model
    from albert_tf.text.tokenizer import AlbertTokenizer
    from serving_models import served_head
    root = tmp_path_factory.mktemp("fuzz_serving")
    out = Fixture(models={}, fns={}, dirs={}, tokenizer=AlbertTokenizer(VOCAB))
    for head in ("classification", "regression", "span", "pretraining"):
        if head == "regression":
            path = str(root / head)
            config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
            out["models"][head] = albert_tf.build_regressor(config)
            albert_tf.save_model_dir(out["models"][head], path, vocab_file=VOCAB,
                                     task_info=TaskInfo("stsb", "regression", None, SEQ,
                                                        text_pair=True))
            export = export_saved_model(path, str(root / "serving"), name=head)
        else:
            built = served_head(tmp_path_factory, head)
            path, export = built["model_dir"], built["path"]
            if head == "classification":     # (the Keras model the export must equal)
                out["models"][head] = load_task_model(path)[0]
        out["dirs"][head] = path
        out["fns"][head] = tf.saved_model.load(export).signatures
    yield out
    print(f"\nstrings run per entry point: {dict(STRINGS)}")


def serve(served, head, *columns, signature="serving_default"):
    from albert_tf.backend import tf
    fn = served["fns"][head][signature]
    names = {"regression": ("text_a", "text_b"), "span": ("question", "context")}.get(
        head, ("text",))
    STRINGS[head if signature == "serving_default" else f"{head}:{signature}"] += len(columns[0])
    feeds = {n: tf.constant([as_bytes(t) for t in c], dtype=tf.string, shape=[len(c)])
             for n, c in zip(names, columns)}
    return {k: v.numpy() for k, v in fn(**feeds).items()}


# ---------------------------------------------------------------------- the four heads
@pytest.mark.slow
@settings(max_examples=fuzz_examples(150))
@given(texts=batches())
def test_classification_any_text(served, texts):
    out = serve(served, "classification", texts)
    probs = out["probabilities"]
    assert probs.shape == (len(texts), 2) and np.all(np.isfinite(probs))
    assert np.all(probs >= 0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    assert out["label_id"].tolist() == probs.argmax(-1).tolist()
    assert [x.decode() for x in out["label"]] == [
        ("negative", "positive")[i] for i in out["label_id"]]


@pytest.mark.slow
@settings(max_examples=fuzz_examples(60))
@given(texts=batches(max_size=12))
def test_classification_agrees_with_python_tokenizer_and_keras(served, texts):
    """In-graph ids == `AlbertTokenizer.pack` (invalid UTF-8 decoded with U+FFFD), and the
    probabilities == the Keras model's on those ids."""
    from albert_tf.backend import tf
    if not texts:
        return
    tok = served["tokenizer"]
    rows = [tok.pack(as_str(t), max_seq_length=SEQ) for t in texts]
    ids = serve(served, "classification", texts, signature="tokenize")
    for key in rows[0]:
        assert ids[key].tolist() == [r[key] for r in rows], key
    feats = {k: tf.constant([r[k] for r in rows]) for k in rows[0]}
    expected = tf.nn.softmax(served["models"]["classification"](feats)["logits"]).numpy()
    np.testing.assert_allclose(serve(served, "classification", texts)["probabilities"],
                               expected, atol=1e-5)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(160))
@given(pairs=st.lists(st.tuples(TEXT, TEXT), max_size=16), long=st.booleans())
def test_regression_pairs_any_text(served, pairs, long):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    if long and pairs:
        b[0] = "word " * 20_000
    value = serve(served, "regression", a, b)["value"]
    assert value.shape == (len(pairs),) and np.all(np.isfinite(value))


@pytest.mark.slow
@settings(max_examples=fuzz_examples(190))
@given(pairs=st.lists(st.tuples(TEXT, TEXT), max_size=16), long=st.booleans())
def test_span_any_text(served, pairs, long):
    questions, contexts = [p[0] for p in pairs], [p[1] for p in pairs]
    if long and pairs:
        questions[0] = "why " * 25_000       # a huge question still leaves the context room
    out = serve(served, "span", questions, contexts)
    n = len(pairs)
    start, end, score = out["start_index"], out["end_index"], out["score"]
    assert start.shape == end.shape == score.shape == out["answer"].shape == (n,)
    assert out["start_logits"].shape == out["end_logits"].shape == (n, SEQ)
    assert np.all(np.isfinite(out["start_logits"])) and np.all(np.isfinite(score))
    for i in range(n):
        if start[i] == -1:
            assert end[i] == -1 and score[i] == 0 and out["answer"][i] == b""
        else:
            assert 1 <= start[i] <= end[i] < min(SEQ, start[i] + 30)
        out["answer"][i].decode("utf-8")             # the answer is valid UTF-8


@pytest.mark.slow
@settings(max_examples=fuzz_examples(170))
@given(texts=batches())
def test_pretrained_any_text(served, texts):
    pooled = serve(served, "pretraining", texts)["pooled_output"]
    assert pooled.shape == (len(texts), 32) and np.all(np.isfinite(pooled))


@pytest.mark.slow
@settings(max_examples=fuzz_examples(30))
@given(head=st.sampled_from(["regression", "span"]), sizes=st.tuples(
    st.integers(0, 5), st.integers(0, 5)).filter(lambda s: s[0] != s[1]))
def test_mismatched_pair_batch_sizes_are_a_clear_error(served, head, sizes):
    from albert_tf.backend import tf
    names = {"regression": ("text_a", "text_b"), "span": ("question", "context")}[head]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"{names[0]} and {names[1]} must have the same batch size"):
        serve(served, head, ["x"] * sizes[0], ["y"] * sizes[1])


@pytest.mark.slow
def test_regression_mismatched_pair_batch_sizes(served):
    """Found by fuzzing: text_a of 2 and text_b of 3 (or 0 and 1) failed deep in the tokenizer
    ("Incompatible shapes: [2] vs. [3]", "indices[0] = 0 is not in [0, 0)")."""
    from albert_tf.backend import tf
    for a, b in ((["a", "b"], ["c", "d", "e"]), ([], ["x"]), (["a", "b"], [])):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="question and context must have the same batch size"):
            serve(served, "span", a, b)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(40))
@given(texts=batches(max_size=6), blank=BLANK, data=st.data())
def test_a_blank_text_anywhere_is_refused_naming_its_index(served, lite, texts, blank, data):
    """Issue #44: an empty or whitespace-only string is refused, by the SavedModel (an
    InvalidArgumentError: TF Serving's HTTP 400) and the runner (a ValueError), at its
    index; it had an answer (label 1, p ~ 0.94)."""
    from albert_tf.backend import tf
    index = data.draw(st.integers(0, len(texts)))
    texts = texts[:index] + [blank] + texts[index:]
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"text\[{index}\] is empty or "
                       "only whitespace"):
        serve(served, "classification", texts)
    with pytest.raises(ValueError, match=rf"texts_a\[{index}\] is (empty|only whitespace)"):
        lite["runner"].predict(texts)


@pytest.mark.slow
def test_empty_batches(served):
    assert serve(served, "regression", [], [])["value"].shape == (0,)
    assert serve(served, "span", [], [])["start_logits"].shape == (0, SEQ)
    assert serve(served, "pretraining", [])["pooled_output"].shape == (0, 32)
    assert serve(served, "classification", [])["probabilities"].shape == (0, 2)


# ------------------------------------------------------------------------ TFLite runner
@pytest.fixture(scope="module")
def lite(served, tmp_path_factory):
    """The classifier's float TFLite export (buckets 16 and `SEQ`, static batch 2), shared
    with tests/test_concurrency.py (`tests/serving_models.py`)."""
    from albert_tflite.runner import TFLiteRunner
    from serving_models import TFLITE_BATCH, TFLITE_LENGTHS, served_head
    assert (TFLITE_LENGTHS, TFLITE_BATCH) == ([16, SEQ], 2)
    out = served_head(tmp_path_factory, "classification")["tflite"]
    return Fixture(runner=TFLiteRunner(out, num_threads=1), path=out)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(140))
@given(texts=batches())
def test_tflite_runner_any_text_agrees_with_saved_model(served, lite, texts):
    """Labels and probabilities of the runner == the SavedModel's on the same text."""
    preds = lite["runner"].predict(texts)
    STRINGS["tflite"] += len(texts)
    assert len(preds) == len(texts)
    if not texts:
        return
    probs = np.array([p["probabilities"] for p in preds])
    assert probs.shape == (len(texts), 2) and np.all(np.isfinite(probs))
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    expected = serve(served, "classification", texts)
    np.testing.assert_allclose(probs, expected["probabilities"], atol=1e-4)
    margin = np.abs(expected["probabilities"][:, 0] - expected["probabilities"][:, 1])
    for p, label_id, m in zip(preds, expected["label_id"], margin):
        assert p["label"] == ("negative", "positive")[p["label_id"]]
        if m > 1e-3:
            assert p["label_id"] == label_id


@pytest.mark.slow
@settings(max_examples=fuzz_examples(30))
@given(na=st.integers(0, 4), nb=st.integers(0, 4))
def test_tflite_runner_bad_pairs_are_clear_errors(lite, na, nb):
    """Mismatched counts, or any second texts for this one-text model: a ValueError."""
    match = (f"{na} first texts but {nb} second texts" if na != nb
             else "takes one text per example")
    with pytest.raises(ValueError, match=match):
        lite["runner"].predict(["a"] * na, ["b"] * nb)


@pytest.mark.slow
def test_regression_tflite_runner_second_texts_for_a_one_text_model(lite):
    """Found by fuzzing: second texts given to a one-text model were silently dropped
    (in-graph tokenizer) or packed as a pair (id models); now a clear error."""
    with pytest.raises(ValueError, match="takes one text per example .*drop the second texts"):
        lite["runner"].predict(["a"], ["b"])
