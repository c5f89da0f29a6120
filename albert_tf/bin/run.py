"""albert-tf-run: the end-to-end "train large, then compress" pipeline.

    albert-tf-run --experiment=run_quick                 # README main job, < 15 min
    albert-tf-run --experiment=run_full --params_override=output_dir=runs/full

Stages already finished are skipped; rerun the same command after a kill to resume.
"""

from __future__ import annotations

import sys

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
        sys.exit(f"albert-tf-run: error: {e}")


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
