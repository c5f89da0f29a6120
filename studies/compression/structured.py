"""Structured pruning: 25% of the heads and 50% of the FFN neurons removed, fine-tuned.

    make figures NAME=compression-structured

Gradient (Taylor) importance on 32 training batches chooses what each block keeps; the
smaller dense model is fine-tuned 1500 steps. Latency is measured by
compression-latency next to the starting model's.
"""

from common import (export, load_start, log, save, save_result, scored,
                                 stage_config)

from albert_tf.compression.compressor import compress_model


def main() -> None:
    model, task_info, vocab, inputs = load_start()
    params = model.count_params()
    config = stage_config(stages=["structured"], structured__head_fraction=0.25,
                          structured__ffn_fraction=0.5, structured__importance="gradient",
                          structured__importance_batches=32, structured__train_steps=1500,
                          structured__learning_rate=1e-4)
    pruned, report = compress_model(model, task_info, vocab, config, log)
    directory = save(pruned, "structured", task_info, vocab)
    save_result("structured", {
        "method": "structured: -25% heads, -50% FFN neurons, fine-tuned",
        "model_dir": directory, "params": pruned.count_params(),
        "start_params": params, "config": pruned.albert_config.to_dict(),
        "keras_dev_accuracy": report["dev"]["structured"]["accuracy"],
        "before_finetune_dev_accuracy": report["dev"]["structured (before fine-tuning)"][
            "accuracy"],
        "start_dev_accuracy": report["dev"]["start"]["accuracy"],
        **scored(export(directory, "structured"), inputs),
        "plan": report["structured"]["plan"]})


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
