"""albert-tf-run: the end-to-end "train large, then compress" pipeline.

    albert-tf-run --experiment=run_quick                 # README main job, < 15 min
    albert-tf-run --experiment=run_full --params_override=output_dir=runs/full

Stages already finished are skipped; rerun the same command after a kill to resume.
"""

from __future__ import annotations

import sys

from absl import app, flags

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_string("experiment", "run_quick",
                        "Pipeline YAML (path, or a name in official_configs/experiments/).")
    flags.DEFINE_multi_string("params_override", [], "Overrides, e.g. 'pretrain.seconds=60'.")
    flags.DEFINE_string("data_dir", None, "Real data root (default from the experiment: "
                        "../shared/data).")
    flags.DEFINE_string("output_dir", None, "Where the run writes (default from the experiment).")


def main(argv: list[str]) -> None:
    del argv
    import os

    from albert_tf.pipeline.experiment import load_pipeline_config
    from albert_tf.pipeline.run import run_pipeline
    overrides = list(FLAGS.params_override)
    if FLAGS.data_dir:
        overrides.append(f"data_dir={FLAGS.data_dir}")
    if FLAGS.output_dir:
        overrides.append(f"output_dir={FLAGS.output_dir}")
    config = load_pipeline_config(FLAGS.experiment, overrides)
    if not os.path.isdir(config.data_dir):
        sys.exit(f"albert-tf-run: data_dir {config.data_dir!r} does not exist; the quick "
                 "experiment reads ../shared/data (pass --data_dir=PATH).")
    run_pipeline(config)


def run() -> None:
    define_flags()
    app.run(main)


if __name__ == "__main__":
    run()
