"""``saved_model_cli`` with the tensorflow-text ops loaded (needed by ``run`` on our exports).

The serving signature tokenizes in-graph with tensorflow-text ops (``SentencepieceOp``, ...),
which plain ``saved_model_cli run`` does not register. ``show`` works with either::

    saved_model_cli show --dir serving/sst2/1 --all
    python -m albert_tf.export.saved_model_cli run --dir serving/sst2/1 --tag_set serve \\
        --signature_def serving_default --input_exprs 'text=["a gorgeous film", ""]'
"""

import os
import sys


def _dir_problem(args: list[str]) -> str | None:
    """What is wrong with ``--dir`` when it is no SavedModel (None: it is one, or not given)."""
    from albert_tf import user_inputs
    path = None
    for i, arg in enumerate(args):
        if arg == "--dir" and i + 1 < len(args):
            path = args[i + 1]
        elif arg.startswith("--dir="):
            path = arg.split("=", 1)[1]
    if path is None or os.path.isfile(os.path.join(path, "saved_model.pb")) \
            or os.path.isfile(os.path.join(path, "saved_model.pbtxt")):
        return None
    if not os.path.exists(path):
        return f"--dir={path}: no such directory; pass a SavedModel version directory."
    kind = user_inputs.artifact_kind(path)
    if kind == "serving":
        return (f"--dir={path} is {user_inputs.describe(kind)}: pass one version directory "
                f"({os.path.join(path, '<name>', '<version>')}).")
    if kind in ("model", "run"):
        model = path if kind == "model" else (user_inputs.run_models(path) or [path])[0]
        return (f"--dir={path} is {user_inputs.describe(kind)}, not a SavedModel: export it "
                f"first (albert-tf-export --model_dir={model} --format=saved_model "
                "--output=DIR).")
    if kind:
        return (f"--dir={path} is {user_inputs.describe(kind)}, not a SavedModel: run it with "
                "albert-tflite-run --model=" + path + ".")
    return f"--dir={path} holds no saved_model.pb; pass a SavedModel version directory."


def main() -> None:
    from albert_tf import cli
    cli.quiet_startup()   # TensorFlow's start-up logs only with --verbose
    sys.argv = [a for a in sys.argv if a != "--verbose"]
    problem = _dir_problem(sys.argv[1:])
    if problem:     # saved_model_cli's own answer is a 20-line OSError traceback
        print(f"albert-tf-saved-model-cli: error: {problem}", file=sys.stderr)
        sys.exit(2)
    import tensorflow_text  # noqa: F401  (registers the ops and kernels)
    from absl import flags
    from tensorflow.python.tools import saved_model_cli
    sys.argv[0] = "saved_model_cli"
    for flag in flags.FLAGS.flags_by_module_dict().get(saved_model_cli.__name__, []):
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)   # --help lists them
    # Its loader's deprecation warning and INFO lines (TF's Python logs), oneDNN's int32
    # fallback notice when ``run`` runs the graph (C++): only with --verbose.
    cli.quiet_logs()
    with cli.quiet_native():
        saved_model_cli.main()


if __name__ == "__main__":
    main()
