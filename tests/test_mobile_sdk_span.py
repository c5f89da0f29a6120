"""Issue #17: a span (SQuAD) export runs as it is in TFLite Task Library's
``BertQuestionAnswerer`` (tflite-support's Python build, through `tests/mobile_sdks.py`) and
gives our SavedModel's answer on every question tried.

The model is finetuned here for 200 steps (CPU seconds; `albert_tf.benchmark.mobile_sdk_span`,
the training stack) on SQuAD-format cloze questions built from the unlabeled IMDB corpus
(`albert_tf.data.examples.cloze_squad`; the figure: `studies/mobile_sdks/span.py`); the
held-out questions come from other documents, a third upper-cased and a third with curly
quotes, accents and a tab.
The SDK answers whole words of the original context (split on ``' '``), our SavedModel the
detokenized pieces of its span; so per question: the SDK's answer is exactly the context
words that contain the SavedModel's span, and the SavedModel's ``answer`` is part of the
SDK's answer after our normalization (lower case, accents, quotes).
"""

from __future__ import annotations

import os

import pytest

from tests.mobile_sdks import answers

STEPS = 200
QUESTIONS = 30


class _ThreeCharPieces:
    """A stand-in tokenizer: every ``' '``-separated word in pieces of up to 3 characters."""

    def encode(self, text: str) -> list[int]:
        return [hash(w[i:i + 3]) for w in text.split() for i in range(0, len(w), 3)]

    def decode(self, ids: list[int]) -> str:
        return "decoded"


def test_sdk_answer_is_the_words_around_our_span():
    """`sdk_metadata.sdk_answer_words`: packed positions ``[CLS] question [SEP] context`` map
    to whole ``' '``-split context words (alpha = alp|ha, beta = bet|a, gamma = gam|ma)."""
    from albert_tf.export.sdk_metadata import compare_spans, sdk_answer_words
    tok = _ThreeCharPieces()
    question, context = "who?", "alpha  beta gamma"   # [CLS] who|? [SEP]: context at 4
    assert sdk_answer_words(tok, question, context, 5, 6) == "alpha beta"
    assert sdk_answer_words(tok, question, context, 8, 9) == "gamma"
    assert sdk_answer_words(tok, question, context, -1, -1) == ""
    item = {"question": question, "context": context}
    result = compare_spans([item, item], [{"answer": "decoded", "start_index": 5, "end_index": 6},
                                          {"answer": "ha", "start_index": 5, "end_index": 5}],
                           [{"answer": "alpha beta"}, {"answer": "alpha"}], tok)
    assert (result["examples"], result["span_agreement"], result["within"],
            result["text_agreement"]) == (2, 2, 1, 1)
    assert [r["ours"] for r in result["differing"]] == ["ha"]


@pytest.fixture(scope="module")
def run(data_dir, tmp_path_factory) -> dict:
    """The trained model directory, its two exports and the held-out questions."""
    from albert_tf.benchmark.mobile_sdk_span import train_span_model
    from albert_tf.data.examples import cloze_squad
    from albert_tf.export.saved_model import export_saved_model
    from albert_tf.export.tflite import export_tflite
    from albert_tf.heads.span import SDK_SPAN_SEQ_LENGTH
    train, held_out = cloze_squad(data_dir, 1500, QUESTIONS)
    base = tmp_path_factory.mktemp("sdk_span")
    model_dir = train_span_model(str(base / "model"), train, STEPS)
    saved = export_saved_model(model_dir, str(base / "export" / "serving"))
    edge = export_tflite(model_dir, str(base / "export" / "edge_none"),
                         seq_lengths=[SDK_SPAN_SEQ_LENGTH], sdk_metadata="on")
    return {"model_dir": model_dir, "saved": saved,
            "tflite": os.path.join(edge, "model.tflite"), "held_out": held_out}


@pytest.mark.slow
def test_sdk_answers_are_the_savedmodel_spans(run):
    from albert_tf.benchmark.mobile_sdk_span import saved_model_answers
    from albert_tf.export.sdk_metadata import compare_spans
    from albert_tf.text.vocabulary import load_tokenizer
    items = run["held_out"]
    assert len(items) == QUESTIONS
    ours = saved_model_answers(run["saved"], items)
    sdk = answers(run["tflite"], "answer", "tflite_support",
                  [[it["question"], it["context"]] for it in items])
    result = compare_spans(items, ours, sdk, load_tokenizer(run["model_dir"]))
    assert result["same_ids"] == QUESTIONS       # the SDK's word-by-word ids are ours
    assert result["span_agreement"] == result["within"] == QUESTIONS, result["differing"]
    assert all(o["start_index"] >= 0 and s["answer"] for o, s in zip(ours, sdk))


@pytest.mark.slow
def test_span_export_metadata_and_what_the_sdk_cannot_run(run):
    from albert_tf.export.common import ExportError
    from albert_tf.export.sdk_metadata import read_embedded
    from albert_tf.export.tflite import export_tflite
    meta = read_embedded(run["tflite"])
    (graph,) = meta["subgraph_metadata"]
    assert sorted(t["name"] for t in graph["input_tensor_metadata"]) == [
        "ids", "mask", "segment_ids"]
    assert [t["name"] for t in graph["output_tensor_metadata"]] == ["end_logits",
                                                                     "start_logits"]
    with pytest.raises(ExportError, match="BertQuestionAnswerer feeds \\[1, 384\\] ids"):
        export_tflite(run["model_dir"], os.path.join(os.path.dirname(run["tflite"]), "x"),
                      seq_lengths=[128], sdk_metadata="on")
