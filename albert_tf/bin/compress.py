"""albert-tf-compress: prune, quantize (QAT), distill or structurally prune a finetuned model.

    albert-tf-compress --init_model=runs/sst2/best --model_dir=runs/sst2_pruned80 \\
        --config_file=compress_sst2_pruning --num_train_steps=100   # every stage 100 steps
    albert-tf-compress --init_model=runs/sst2/best --model_dir=runs/sst2_qat \\
        --config_file=compress_sst2_qat      # + tflite_int8/: full int8, albert-tflite-run runs it
    albert-tf-compress --init_model=runs/sst2/best --model_dir=runs/sst2_blocks \\
        --stages=pruning --params_override=pruning.block_size=16x1,pruning.final_sparsity=0.8
        # 16x1 blocks: albert-tf-export --quantization=int8 --sparse_weights=1x16 stores them
    albert-tf-compress --init_model=runs/sst2/best --model_dir=runs/sst2_distilled \\
        --config_file=compress_sst2_distill \\
        --params_override=distillation.student_config=albert_tiny   # then QAT, as configured
    albert-tf-compress --init_model=runs/sst2/best --model_dir=runs/sst2_2x \\
        --config_file=compress_sst2_speedup --target_speedup=2
        # heads, FFN neurons and layers removed on a schedule, distilling from the init
        # model, until its int8 TFLite export runs 2x faster on this CPU (timed, cached)

Configuration as the training binaries: the `CompressionConfig` defaults, each
``--config_file`` (a path or a name in ``official_configs/experiments/``: the compress_*
ones of ``albert-tf-info --configs``), each ``--params_override`` (``a.b=1,c=[x,y]``, a
YAML string or file), then the flags below. Every value is checked before anything is
loaded or trained, and so is what the model's config.json decides (structured pruning of
a 2-head model: compress_sst2_structured needs
``--params_override=structured.head_fraction=0.5`` there). The --model_dir receives the
compressed model directory model/ (what albert-tf-export takes), its TFLite exports
tflite/ (float) and, after QAT, tflite_int8/ (each with the metadata albert-tflite-run
reads), and report.json; the last line names them. See
`albert_tf.compression.compressor` and docs/compression.md.
"""

from __future__ import annotations

import os

from absl import flags

from albert_tf import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_multi_string("config_file", [], "Compression YAML (repeatable; later files win).")
    flags.DEFINE_multi_string("params_override", [], "Overrides: 'a.b=1,c.d=x', YAML, or a file.")
    flags.DEFINE_string("init_model", None, "Finetuned model directory (with task.json).")
    flags.DEFINE_string("model_dir", None, "Output directory.")
    flags.DEFINE_list("stages", None, "Stages in order: structured, distillation, pruning, qat.")
    flags.DEFINE_string("data_dir", None, "Task data root (default $ALBERT_TF_DATA_DIR).")
    flags.DEFINE_integer("train_batch_size", None, "Training batch size.")
    flags.DEFINE_integer("num_train_steps", None, "Optimizer steps of every stage; the pruning "
                         "and structured schedules (begin_step, end_step, frequency) are scaled "
                         "to fit and stay valid (e.g. 100 for a quick try).")
    flags.DEFINE_float("learning_rate", None, "Default peak learning rate of every stage.")
    flags.DEFINE_integer("seed", None, "Random seed.")
    flags.DEFINE_boolean("tflite", None, "Export TFLite files at the end.")
    flags.DEFINE_float("target_speedup", None, "Remove the heads, FFN neurons and layers "
                       "that make the model this many times faster than the init model on "
                       "--target, from latencies timed on this CPU (the structured stage; "
                       "compress_sst2_speedup is the recipe).")
    flags.DEFINE_float("latency_budget_ms", None, "Or: remove what makes it run within this "
                       "many milliseconds on --target.")
    from albert_tf.benchmark.targets import latency_target
    from albert_tf.compression.speedup_space import int8_targets
    flags.DEFINE_string("target", None, "The deployment target timed for --target_speedup / "
                        f"--latency_budget_ms (default {latency_target()}; one of "
                        f"{', '.join(int8_targets())}).")
    flags.DEFINE_boolean("print_config", False, "Print the resolved config and exit.")


FLAG_KEYS = {"init_model": "init_model", "model_dir": "model_dir", "stages": "stages",
             "data_dir": "data.data_dir", "train_batch_size": "data.batch_size",
             "learning_rate": "optimizer.learning_rate", "seed": "seed",
             "tflite": "export.tflite", "target_speedup": "speedup.target_speedup",
             "latency_budget_ms": "speedup.latency_budget_ms", "target": "speedup.target"}


def config_from_flags():
    from albert_tf.compression.compression_config import (build_compression_config,
                                                         set_train_steps, validate)
    from albert_tf.training.experiment_config import override_params
    config = build_compression_config(FLAGS.config_file, FLAGS.params_override)
    overrides = {key: getattr(FLAGS, flag) for flag, key in FLAG_KEYS.items()
                 if getattr(FLAGS, flag) is not None}
    override_params(config, overrides)
    if FLAGS.num_train_steps is not None:
        set_train_steps(config, FLAGS.num_train_steps)
    validate(config)
    return config


def main(argv) -> None:
    del argv
    from albert_tf import resources, user_inputs
    from albert_tf.compression.compression_config import CompressionConfigError, check_run
    from albert_tf.outputs import OutputError
    from albert_tf.training.experiment_config import ConfigKeyError, ConfigValueError
    try:
        config = config_from_flags()
        if FLAGS.print_config:
            import yaml
            print(yaml.safe_dump(config.as_dict(), sort_keys=False))
            return
        if config.init_model:         # a run directory, an export, a pretrained model: one line
            user_inputs.model_dir(config.init_model, "--init_model", finetuned=True,
                                  purpose="to compress")
        config.data.data_dir = os.path.abspath(resources.data_dir(config.data.data_dir or None))
        check_run(config)             # the output directory too, before TensorFlow loads
        from albert_tf.data.task_checks import check_compression_task   # GLUE, its folder
        check_compression_task(config.init_model, config.data.task, config.data.data_dir)
        from albert_tf.compression.compressor import run
        run(config)
    except (CompressionConfigError, ConfigKeyError, ConfigValueError, FileNotFoundError,
            resources.DataDirError, OutputError, user_inputs.InputError) as e:
        cli.fail(e)


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
