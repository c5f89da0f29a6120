"""A short quantization-aware finetune of the SST-2 model, to check the ``qat`` export path.

    make figures NAME=export-qat-sst2 ARGS="--model_dir=/tmp/sst2_mini \\
        --output=/tmp/sst2_mini/qat [--steps=400]"

Wraps the finetuned model with the compression tools' TF-MOT quantize configs
(`albert_tf.compression.qat.quantize_model`), trains ``--steps`` batches of SST-2 *train* and
saves the Keras model where ``albert-tf-export --quantization=qat`` looks for it.
"""

from __future__ import annotations

import argparse
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--data_dir", default=os.environ.get(
        "ALBERT_TF_DATA_DIR", os.path.join(ROOT, "..", "shared", "data")),
        help="default: $ALBERT_TF_DATA_DIR, else ../shared/data beside the checkout")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    args = parser.parse_args(argv)

    from albert_tf.backend import keras
    from albert_tf.checkpoints import load_task_model
    from albert_tf.compression.qat import quantize_model
    from albert_tf.text.tokenizer import AlbertTokenizer
    from finetune_sst2 import batches, read_sst2, train_step_fn

    model, info = load_task_model(args.model_dir)
    qat = quantize_model(model)
    tok = AlbertTokenizer(os.path.join(args.model_dir, "vocab.model"))
    train = read_sst2(os.path.join(args.data_dir, "glue", "SST-2", "train.tsv"))
    ids = [tok.encode(t) for t, _ in train]
    step = train_step_fn(qat, keras.optimizers.Adam(args.learning_rate))

    rng = random.Random(0)
    n = 0
    while n < args.steps:
        for features, labels in batches(ids, [y for _, y in train], 32, info.max_seq_length,
                                        tok.cls_id, tok.sep_id, True, rng):
            loss = float(step(features, labels))
            n += 1
            if n % 100 == 0:
                print(f"step {n} loss {loss:.4f}", flush=True)
            if n >= args.steps:
                break
    qat.save(args.output, include_optimizer=False)
    print(f"saved {args.output}")


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
