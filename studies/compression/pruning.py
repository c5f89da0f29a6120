"""Unstructured pruning to 80% with PolynomialDecay (TF-MOT), from the finetuned model.

    make figures NAME=compression-pruning [ARGS=--with_embeddings]

Reports: per-weight sparsity of the stripped model, the mask sparsity every 50
optimizer steps next to the requested curve, dev accuracy (Keras and TFLite), the
TFLite file size and its gzip size against the dense model's.
``--with_embeddings`` also prunes the word-embedding table (half of this model's
weights), written as ``pruned80_emb`` / results ``pruning_emb``.
"""

import argparse

from common import (export, load_start, log, path, save, save_result, scored,
                                 stage_config)

from albert_tf.compression.compressor import compress_model

STEPS = 2000


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--with_embeddings", action="store_true")
    args = parser.parse_args(argv)
    suffix = "_emb" if args.with_embeddings else ""
    targets = ["attention", "ffn", "embedding_projection"] + \
        (["embeddings"] if args.with_embeddings else [])
    model, task_info, vocab, inputs = load_start()
    config = stage_config(stages=["pruning"], pruning__final_sparsity=0.8,
                          pruning__targets=targets,
                          pruning__begin_step=0, pruning__end_step=1500,
                          pruning__frequency=50, pruning__power=3.0,
                          pruning__train_steps=STEPS, pruning__learning_rate=1e-4)
    pruned, report = compress_model(model, task_info, vocab, config, log)
    directory = save(pruned, f"pruned80{suffix}", task_info, vocab)
    curve = report["sparsity_curve"]
    worst = max(max(abs(c["min"] - c["expected"]), abs(c["max"] - c["expected"]))
                for c in curve)
    save_result(f"pruning{suffix}", {
        "method": f"unstructured pruning 80% (PolynomialDecay, TF-MOT), targets {targets}",
        "model_dir": directory, "params": pruned.count_params(),
        "keras_dev_accuracy": report["dev"]["pruning"]["accuracy"],
        "start_dev_accuracy": report["dev"]["start"]["accuracy"],
        **scored(export(directory, f"pruned80{suffix}"), inputs),
        "sparsity": report["sparsity"], "curve_max_abs_error": worst,
        "curve": curve[::4] + [curve[-1]], "pruned_weights": report["pruned_weights"]})
    log(f"sparsity curve (every 200 steps): {curve[::4]}")
    log(f"written {path('results', f'pruning{suffix}.json')}")


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
