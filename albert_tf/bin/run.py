"""albert-tf-run: the end-to-end "train large, then compress" pipeline.

    albert-tf-run --experiment=run_quick                 # make main: ~12 min, writes runs/quick
    albert-tf-run --experiment=run_full --output_dir=runs/full   # 1 h 42 min on 2 cores

Stages already finished are skipped; rerun the same command after a kill to resume. The
experiments are the run_* files of ``albert-tf-info --configs`` (or a YAML path); any of
their keys can be set with --params_override (``finetune.max_steps=4000``, ...). The
report (runs/quick/report/report.md: accuracy, latency, the Pareto front, the artifact to
ship) is named on the last line. See docs/experiment.md.
"""

from __future__ import annotations


from absl import flags

from albert_tf import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_string("experiment", "run_quick",
                        "Pipeline YAML (path, or a name in official_configs/experiments/).")
    flags.DEFINE_multi_string("params_override", [], "Overrides, e.g. 'pretrain.seconds=60'.")
    flags.DEFINE_string("data_dir", None, "Real data root: corpus/, glue/SST-2/, ... (default "
                        "$ALBERT_TF_DATA_DIR).")
    flags.DEFINE_string("output_dir", None, "Where the run writes (default from the experiment).")


def main(argv: list[str]) -> None:
    del argv
    import os

    from albert_tf.pipeline.pipeline_config import load_pipeline_config
    from albert_tf.pipeline.driver import run_pipeline
    from albert_tf.outputs import OutputError
    from albert_tf.resources import DataDirError
    from albert_tf.training.experiment_config import ConfigKeyError, ConfigValueError
    overrides = list(FLAGS.params_override)
    if FLAGS.data_dir:
        overrides.append(f"data_dir={os.path.abspath(FLAGS.data_dir)}")
    if FLAGS.output_dir:
        overrides.append(f"output_dir={FLAGS.output_dir}")
    try:
        config = load_pipeline_config(FLAGS.experiment, overrides)
        run_pipeline(config)   # resolves data_dir ($ALBERT_TF_DATA_DIR) first
    except (DataDirError, ConfigKeyError, ConfigValueError, FileNotFoundError,
            OutputError) as e:
        cli.fail(e)


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
