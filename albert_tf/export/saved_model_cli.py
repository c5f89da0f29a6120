"""``saved_model_cli`` with the tensorflow-text ops loaded (needed by ``run`` on our exports).

The serving signature tokenizes in-graph with tensorflow-text ops (``SentencepieceOp``, ...),
which plain ``saved_model_cli run`` does not register. ``show`` works with either::

    saved_model_cli show --dir serving/sst2/1 --all
    python -m albert_tf.export.saved_model_cli run --dir serving/sst2/1 --tag_set serve \\
        --signature_def serving_default --input_exprs 'text=["a gorgeous film", ""]'
"""

import sys


def main() -> None:
    from albert_tf import cli
    cli.quiet_startup()   # TensorFlow's start-up logs only with --verbose
    sys.argv = [a for a in sys.argv if a != "--verbose"]
    import tensorflow_text  # noqa: F401  (registers the ops and kernels)
    from absl import flags
    from tensorflow.python.tools import saved_model_cli
    sys.argv[0] = "saved_model_cli"
    for flag in flags.FLAGS.flags_by_module_dict().get(saved_model_cli.__name__, []):
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)   # --help lists them
    saved_model_cli.main()


if __name__ == "__main__":
    main()
