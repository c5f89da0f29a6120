"""``saved_model_cli`` with the tensorflow-text ops loaded (needed by ``run`` on our exports).

The serving signature tokenizes in-graph with tensorflow-text ops (``SentencepieceOp``, ...),
which plain ``saved_model_cli run`` does not register. ``show`` works with either::

    saved_model_cli show --dir serving/sst2/1 --all
    python -m albert_tf.export.saved_model_cli run --dir serving/sst2/1 --tag_set serve \\
        --signature_def serving_default --input_exprs 'text=["a gorgeous film", ""]'
"""

import sys


def main() -> None:
    import tensorflow_text  # noqa: F401  (registers the ops and kernels)
    from tensorflow.python.tools import saved_model_cli
    sys.argv[0] = "saved_model_cli"
    saved_model_cli.main()


if __name__ == "__main__":
    main()
