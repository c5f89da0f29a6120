"""albert-tf-saved-model-cli: TensorFlow's ``saved_model_cli`` with the tensorflow-text ops
loaded (needed by ``run`` on our exports).

    albert-tf-saved-model-cli show --dir serving/sst2/1 --all
    albert-tf-saved-model-cli run --dir serving/sst2/1 --tag_set serve \\
        --signature_def serving_default --input_exprs 'text=["a gorgeous film", "dull"]'

The serving signature tokenizes in-graph with tensorflow-text ops (``SentencepieceOp``, ...),
which plain ``saved_model_cli run`` does not register (``show`` works with either).
serving/sst2/1 is the tour's SavedModel (README.md: albert-tf-export --format=saved_model
--output=serving). The flags are saved_model_cli's.
"""

import os
import sys


def _given_dir(args: list[str]) -> str | None:
    """The ``--dir`` of the command line (None: not given)."""
    path = None
    for i, arg in enumerate(args):
        if arg == "--dir" and i + 1 < len(args):
            path = args[i + 1]
        elif arg.startswith("--dir="):
            path = arg.split("=", 1)[1]
    return path


def _dir_problem(args: list[str]) -> str | None:
    """What is wrong with ``--dir`` when it is no SavedModel (None: it is one, or not given)."""
    from albert_tf import user_inputs
    path = _given_dir(args)
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
    sys.argv = [sys.argv[0]] + cli.short_help([a for a in sys.argv[1:] if a != "--verbose"])
    problem = _dir_problem(sys.argv[1:])
    if problem:     # saved_model_cli's own answer is a 20-line OSError traceback
        cli.fail(problem)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops and kernels)
    from absl import flags
    from tensorflow.python.tools import saved_model_cli
    program, sys.argv[0] = sys.argv[0], "saved_model_cli"
    cli.help_text(__doc__)          # --help: this docstring's examples above the flags
    for flag in flags.FLAGS.flags_by_module_dict().get(saved_model_cli.__name__, []):
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)   # --help lists them
    if not cli.asked_for_help(sys.argv[1:]):
        try:              # its own parse prints absl's two-line "FATAL Flags parsing error"
            flags.FLAGS(sys.argv)
        except flags.Error as e:
            sys.argv[0] = program
            cli.fail(f"{e} (see --help)", 1)
        flags.FLAGS.unparse_flags()
    # Its loader's deprecation warning and INFO lines (TF's Python logs), oneDNN's int32
    # fallback notice when ``run`` runs the graph (C++): only with --verbose.
    cli.quiet_logs()
    try:
        with cli.quiet_native():
            saved_model_cli.main()
    except SystemExit as e:               # its absl app exits 1 after --help's usage
        if e.code == 1 and cli.asked_for_help(sys.argv[1:]):
            sys.exit(0)
        raise
    except tf.errors.InvalidArgumentError as e:  # the signature refused the input
        sys.argv[0] = program
        cli.fail(f"the signature refused the input: {cli.cause_line(e)}")
    except (OSError, ValueError, RuntimeError, tf.errors.OpError) as e:
        sys.argv[0] = program                    # our name in the message, not TF's tool's
        cli.fail(f"the SavedModel {_given_dir(sys.argv[1:])} cannot be read "
                 f"({cli.cause_line(e)}); "
                 "a truncated or damaged saved_model.pb or variables/ reads like this: copy "
                 "it again, or export it again (albert-tf-export --format=saved_model).")


if __name__ == "__main__":
    main()
