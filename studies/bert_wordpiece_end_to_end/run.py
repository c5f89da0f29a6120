"""Issue #18's end-to-end check: a Hugging Face BERT with a WordPiece vocabulary, through
every albert-tf tool as a user runs them.

    .venv/bin/python studies/figures.py bert-wordpiece-end-to-end --work_dir=/tmp/bert_wp

1. trains an uncased WordPiece vocabulary on the shared IMDB corpus (`train_wordpiece`);
2. saves a randomly initialised Hugging Face ``BertForPreTraining`` (bert_mini's shape) with
   that ``vocab.txt`` (``save_pretrained``), and converts it: ``albert-tf-convert --from=hf``;
3. finetunes it on SST-2: ``albert-tf-finetune --init_checkpoint=<converted>``;
4. exports ``--format=saved_model``, ``--format=tflite`` (ids) and ``--format=tflite
   --with_tokenizer``, with the binaries;
5. on all 872 SST-2 dev sentences: the SavedModel's ``serving_default`` on raw text vs the
   Keras model on our Python tokenizer's ids (max |probability difference|, labels), our
   TFLite runner vs the TFLite in-graph tokenizer (labels), and the dev accuracy of each.

Prints one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

BIN = os.path.dirname(sys.executable)


def run(*argv: str) -> None:
    """Runs one of our binaries; its output goes to the terminal."""
    subprocess.run([os.path.join(BIN, argv[0]), *argv[1:]], check=True)


def hf_bert(work: str, vocab: str) -> str:
    """A random ``BertForPreTraining`` of bert_mini's shape saved with ``vocab`` (HF layout)."""
    import shutil

    import torch
    from transformers import BertConfig, BertForPreTraining
    torch.manual_seed(0)
    with open(vocab, encoding="utf-8") as f:
        size = sum(1 for _ in f)
    config = BertConfig(vocab_size=size, hidden_size=128, num_hidden_layers=4,
                        num_attention_heads=2, intermediate_size=512,
                        max_position_embeddings=512, hidden_act="gelu_new")
    out = os.path.join(work, "hf_bert")
    BertForPreTraining(config).save_pretrained(out)
    shutil.copyfile(vocab, os.path.join(out, "vocab.txt"))
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}, f)
    return out


def keras_probabilities(model_dir: str, texts: list[str]) -> np.ndarray:
    """The finetuned Keras model on our Python tokenizer's ids: ``[N, 2]``."""
    from albert_tf.backend import tf
    from albert_tf.checkpoints import load_task_model, vocab_path
    from albert_tf.text.vocabulary import load_tokenizer
    model, info = load_task_model(model_dir)
    tokenizer = load_tokenizer(vocab_path(model_dir), info.do_lower_case)
    rows = [tokenizer.pack(t, max_seq_length=info.max_seq_length) for t in texts]
    features = {k: tf.constant([r[k] for r in rows]) for k in rows[0]}
    return tf.nn.softmax(model(features, training=False)["logits"]).numpy()


def served_probabilities(saved_model: str, texts: list[str]) -> np.ndarray:
    """``serving_default`` on raw text: ``[N, 2]``."""
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

    from albert_tf.backend import tf
    serve = tf.saved_model.load(saved_model).signatures["serving_default"]
    out = [serve(text=tf.constant(texts[i:i + 64]))["probabilities"].numpy()
           for i in range(0, len(texts), 64)]
    return np.concatenate(out)


def lite_labels(export: str, texts: list[str]) -> list[str]:
    from albert_tflite.runner import TFLiteRunner
    return [p["label"] for p in TFLiteRunner(export).predict(texts)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--data_dir", default=None, help="default: $ALBERT_TF_DATA_DIR")
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args(argv)
    from albert_tf import resources
    from albert_tf.data.task_data import split_texts
    from albert_tf.text.wordpiece_training import train_wordpiece

    work, data = os.path.abspath(args.work_dir), os.path.abspath(resources.data_dir(args.data_dir))
    vocab = os.path.join(work, "vocab", "vocab.txt")
    os.makedirs(os.path.dirname(vocab), exist_ok=True)
    train_wordpiece([os.path.join(data, "corpus", "imdb-unsup.txt")], vocab, vocab_size=8000,
                    do_lower_case=True, max_lines=200_000)
    converted, finetuned = os.path.join(work, "converted"), os.path.join(work, "finetune")
    run("albert-tf-convert", "--from=hf", f"--input={hf_bert(work, vocab)}",
        f"--output_dir={converted}", "--overwrite")
    run("albert-tf-finetune", "--task=sst2", f"--data_dir={data}",
        "--config_file=finetune_sst2_albert_mini", f"--init_checkpoint={converted}",
        f"--model_config={os.path.join(converted, 'config.json')}",
        f"--vocab_file={os.path.join(converted, 'vocab.txt')}",
        f"--model_dir={finetuned}", f"--num_train_steps={args.steps}", "--max_seq_length=64",
        "--learning_rate=0.0005", "--warmup_steps=100", "--validation_interval=500")
    best = os.path.join(finetuned, "best")
    serving, ids, text = (os.path.join(work, n) for n in ("serving", "edge_ids", "edge_text"))
    run("albert-tf-export", f"--model_dir={best}", "--format=saved_model",
        f"--output={serving}", "--overwrite")
    run("albert-tf-export", f"--model_dir={best}", "--format=tflite", f"--output={ids}",
        "--overwrite")
    run("albert-tf-export", f"--model_dir={best}", "--format=tflite", f"--output={text}",
        "--with_tokenizer", "--overwrite")
    texts, _, gold = split_texts("sst2", "dev", data)
    keras = keras_probabilities(best, texts)
    served = served_probabilities(os.path.join(serving, "sst2", "1"), texts)
    by_ids, in_graph = lite_labels(ids, texts), lite_labels(text, texts)
    keras_labels = [str(i) for i in keras.argmax(-1)]

    def accuracy(labels):
        return sum(a == b for a, b in zip(labels, gold)) / len(gold)

    print(json.dumps({
        "dev_sentences": len(texts),
        "keras_accuracy": accuracy(keras_labels),
        "saved_model_max_abs_probability_difference": float(np.abs(served - keras).max()),
        "saved_model_label_agreement": float((served.argmax(-1) == keras.argmax(-1)).mean()),
        "tflite_ids_accuracy": accuracy(by_ids),
        "tflite_in_graph_accuracy": accuracy(in_graph),
        "tflite_runner_vs_in_graph_agreement": accuracy_of(by_ids, in_graph),
        "tflite_runner_vs_keras_agreement": accuracy_of(by_ids, keras_labels),
        "tflite_sdk_metadata": read_json(os.path.join(ids, "metadata.json"))["sdk"],
    }, indent=2))


def read_json(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def accuracy_of(a: list[str], b: list[str]) -> float:
    return sum(x == y for x, y in zip(a, b)) / len(a)


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
