"""SQuAD JSON -> span features (doc stride) -> answer text, exactly."""

from __future__ import annotations

import json
import os
import random
import re

import numpy as np
import pytest

from albert_tf.data.squad import (SquadError, convert_examples_to_features, gold_answers,
                                  postprocess_predictions, read_squad_examples, span_to_text,
                                  squad_dataset)
from albert_tf.data.task_data import load_task
from albert_tf.text.tokenizer import AlbertTokenizer
from albert_tf.training.metrics import squad_metrics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")


@pytest.fixture(scope="module")
def tok():
    return AlbertTokenizer(VOCAB)


@pytest.fixture(scope="module")
def squad_file(tmp_path_factory, data_dir):
    """A SQuAD v2.0 file built from RTE dev premises: answers are 1-4 word spans (with
    accents, digits, quotes, currency as they come), plus unanswerable questions."""
    rte = load_task("rte", os.path.join(data_dir, "glue"))
    rng = random.Random(0)
    paragraphs = []
    for i, ex in enumerate(rte.dev):
        context = ex.text_a
        words = [m.span() for m in re.finditer(r"\S+", context)]
        qas = []
        for q in range(3):
            a = rng.randrange(len(words))
            b = min(len(words) - 1, a + rng.randrange(4))
            text = context[words[a][0]:words[b][1]].rstrip(".,;:!?\"') ").lstrip("\"'( ")
            if not text:
                continue
            qas.append({"id": f"{i}-{q}", "question": ex.text_b,
                        "answers": [{"text": text, "answer_start": context.index(text, words[a][0])}]})
        qas.append({"id": f"{i}-none", "question": "Who?", "answers": [], "is_impossible": True})
        paragraphs.append({"context": context, "qas": qas})
    path = tmp_path_factory.mktemp("squad") / "dev-v2.0.json"
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "rte", "paragraphs": paragraphs}]}))
    return str(path)


def test_spans_round_trip_to_answer_text(squad_file, tok):
    examples = read_squad_examples(squad_file, is_training=True)
    features = convert_examples_to_features(examples, tok, max_seq_length=96, doc_stride=32,
                                            max_query_length=24, is_training=True)
    assert len(features) > len(examples)                     # long contexts: several windows
    answered = 0
    for f in features:
        ex = examples[f.example_index]
        assert len(f.input_word_ids) == len(f.input_mask) == len(f.input_type_ids) == 96
        if f.is_impossible:
            assert f.start_position == f.end_position == 0
            continue
        answered += 1
        assert span_to_text(ex, f, f.start_position, f.end_position) == ex.answer_text
    covered = {f.example_index for f in features if not f.is_impossible}
    answerable = {i for i, e in enumerate(examples) if not e.is_impossible}
    assert covered == answerable and answered >= len(answerable)


def test_postprocess_recovers_answers_from_oracle_logits(squad_file, tok):
    examples = read_squad_examples(squad_file, is_training=True)
    train_features = convert_examples_to_features(examples, tok, 96, 32, 24, is_training=True)
    features = convert_examples_to_features(examples, tok, 96, 32, 24, is_training=False)
    assert len(features) == len(train_features)
    start = np.full((len(features), 96), -10.0)
    end = np.full((len(features), 96), -10.0)
    for i, f in enumerate(train_features):
        if f.is_impossible:
            start[i, 0] = end[i, 0] = 5.0
        else:
            start[i, f.start_position] = end[i, f.end_position] = 10.0
    predictions = postprocess_predictions(examples, features, start, end,
                                          version_2_with_negative=True)
    for ex in examples:
        assert predictions[ex.qas_id] == ("" if ex.is_impossible else ex.answer_text)
    scores = squad_metrics(predictions, gold_answers(examples))
    assert scores == {"exact_match": 100.0, "f1": 100.0}
    answerable = next(ex.qas_id for ex in examples if not ex.is_impossible)
    abstained = squad_metrics({**predictions, answerable: ""}, gold_answers(examples))
    assert abstained["exact_match"] < 100.0
    batch = next(iter(squad_dataset(features, 8, is_training=False)))
    assert batch["input_word_ids"].shape == (8, 96) and batch["unique_ids"].shape == (8,)
    inputs, labels = next(iter(squad_dataset(train_features, 8, is_training=True, seed=0)))
    assert set(labels) == {"start_positions", "end_positions"}


def test_bad_squad_input(tmp_path):
    with pytest.raises(SquadError, match="not found"):
        read_squad_examples(str(tmp_path / "none.json"), True)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SquadError, match="bad.json is not SQuAD JSON"):
        read_squad_examples(str(bad), True)
    data = {"data": [{"paragraphs": [{"context": "Paris is big.", "qas": [
        {"id": "1", "question": "q", "answers": [{"text": "Paris", "answer_start": 3}]},
        {"id": "2", "question": "q", "answers": [{"text": "Paris", "answer_start": 0}]}]}]}]}
    skipped = {}
    examples = read_squad_examples(data, True, skipped)
    assert [e.qas_id for e in examples] == ["2"] and skipped == {"bad_answers": 1}
