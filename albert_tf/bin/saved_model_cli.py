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
    if kind in user_inputs.CONVERTIBLE:
        return user_inputs.needs_conversion(
            path, "--dir", "not a SavedModel", then=", then export DIR (albert-tf-export "
            "--model_dir=DIR --format=saved_model --output=SERVING)")
    if kind in ("model", "run"):
        model = path if kind == "model" else (user_inputs.run_models(path) or [path])[0]
        return (f"--dir={path} is {user_inputs.describe(kind)}, not a SavedModel: export it "
                f"first (albert-tf-export --model_dir={model} --format=saved_model "
                "--output=DIR).")
    if kind:
        return (f"--dir={path} is {user_inputs.describe(kind)}, not a SavedModel: run it with "
                "albert-tflite-run --model=" + path + ".")
    return f"--dir={path} holds no saved_model.pb; pass a SavedModel version directory."


# saved_model_cli's flags that `_flags_problem` checks, read after the flags are parsed.
_CHECKED_FLAGS = ("dir", "tag_set", "signature_def", "inputs", "input_exprs", "input_examples",
                  "outdir", "overwrite")


def _damaged(path: str, error: BaseException) -> str:
    """The line for a SavedModel whose files cannot be read (saved_model.pb, variables/)."""
    from albert_tf import cli
    return (f"the SavedModel {path} cannot be read ({cli.cause_line(error)}); a truncated or "
            "damaged saved_model.pb or variables/ reads like this: copy it again, or export it "
            "again (albert-tf-export --format=saved_model).")


def _input_keys(values: dict, saved_model_cli) -> tuple[list[str], str | None]:
    """The input keys ``run`` would feed (``--inputs``, ``--input_exprs``,
    ``--input_examples``), and the line for one whose syntax saved_model_cli refuses."""
    keys: list[str] = []
    for flag, parse in (("inputs", saved_model_cli.preprocess_inputs_arg_string),
                        ("input_exprs", saved_model_cli.preprocess_input_exprs_arg_string),
                        ("input_examples",
                         saved_model_cli.preprocess_input_examples_arg_string)):
        if not values[flag]:
            continue
        try:
            parsed = parse(values[flag])
        except (RuntimeError, ValueError, SyntaxError) as e:
            return keys, f"--{flag}={values[flag]}: {e}"
        keys += [k for k in parsed if k not in keys]
        if flag == "inputs":              # {key: (file, variable)}: files numpy loads
            absent = [f for f, _ in parsed.values() if not os.path.isfile(f)]
            if absent:
                return keys, (f"--inputs={values[flag]}: no such file {absent[0]} (a .npy, "
                              ".npz or pickle file of the input's values).")
    return keys, None


def _flags_problem(command: str | None, values: dict, saved_model, saved_model_cli
                   ) -> str | None:
    """What ``show`` / ``run`` would refuse about their flags, as one line naming what the
    SavedModel has (None: nothing): a tag-set or signature it lacks, input keys that are not
    the signature's, an ``--outdir`` that is no directory or already holds the outputs."""
    path, tag_set, key = values["dir"], values["tag_set"], values["signature_def"]
    if command == "run" and (tag_set is None or key is None):
        return ("run needs --tag_set and --signature_def (e.g. --tag_set serve --signature_def "
                f"serving_default; albert-tf-saved-model-cli show --dir {path} lists them).")
    if command not in ("show", "run") or tag_set is None:
        return None
    wanted = {t for t in tag_set.split(",") if t}
    graphs = {",".join(sorted(g.meta_info_def.tags)): g for g in saved_model.meta_graphs}
    graph = next((g for g in saved_model.meta_graphs if set(g.meta_info_def.tags) == wanted),
                 None)
    if graph is None:
        return (f"--tag_set={tag_set}: the SavedModel {path} has no MetaGraph with these tags; "
                f"its tag-sets: {', '.join(graphs) or 'none'}.")
    if key is None:
        return None
    signatures = sorted(k for k in graph.signature_def if not k.startswith("__"))
    show = f"albert-tf-saved-model-cli show --dir {path} --tag_set {tag_set}"
    if key not in graph.signature_def:
        return (f"--signature_def={key}: the SavedModel {path} has no such signature; its "
                f"signatures: {', '.join(signatures)} ({show} --signature_def NAME shows one's "
                "inputs and outputs).")
    if command != "run":
        return None
    signature = graph.signature_def[key]
    names = list(signature.inputs)
    given, problem = _input_keys(values, saved_model_cli)
    if problem:
        return problem
    unknown = [k for k in given if k not in signature.inputs]
    missing = [k for k in names if k not in given]
    if unknown or missing:
        example = ";".join(f"{n}=[...]" for n in names)
        what = (f"not {', '.join(unknown)}" if unknown else f"{', '.join(missing)} missing"
                if given else "none given")
        return (f"the signature {key} takes the input(s) {', '.join(names)} ({what}): pass "
                f"--input_exprs '{example}' ({show} --signature_def {key} shows their types).")
    outdir = values["outdir"]
    if outdir:
        parent = os.path.normpath(outdir)
        while not os.path.exists(parent) and parent != os.path.dirname(parent):
            parent = os.path.dirname(parent)
        if parent and not os.path.isdir(parent):
            where = outdir if parent == os.path.normpath(outdir) else parent
            return (f"--outdir={outdir}: {where} is a file; pass a directory for the outputs' "
                    ".npy files (created when missing).")
        if not values["overwrite"]:
            there = [f"{k}.npy" for k in sorted(signature.outputs)
                     if os.path.exists(os.path.join(outdir, f"{k}.npy"))]
            if there:
                return (f"--outdir={outdir} already holds {', '.join(there)}; pass --overwrite "
                        "to replace them, or another --outdir.")
    return None


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
    from tensorflow.python.tools import saved_model_cli, saved_model_utils
    program, sys.argv[0] = sys.argv[0], "saved_model_cli"
    cli.help_text(__doc__)          # --help: this docstring's examples above the flags
    for flag in flags.FLAGS.flags_by_module_dict().get(saved_model_cli.__name__, []):
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)   # --help lists them
    command, values = None, {}
    if not cli.asked_for_help(sys.argv[1:]):
        try:              # its own parse prints absl's two-line "FATAL Flags parsing error"
            rest = flags.FLAGS(sys.argv)
        except flags.Error as e:
            sys.argv[0] = program
            cli.fail(f"{e} (see --help)", 1)
        command = rest[1] if len(rest) > 1 else None
        values = {name: flags.FLAGS[name].value for name in _CHECKED_FLAGS}
        flags.FLAGS.unparse_flags()
    # Its loader's deprecation warning and INFO lines (TF's Python logs), oneDNN's int32
    # fallback notice when ``run`` runs the graph (C++): only with --verbose.
    cli.quiet_logs()
    if values.get("dir"):
        try:                      # the SavedModel itself first: a damaged one is said so
            saved_model = saved_model_utils.read_saved_model(values["dir"])
        except (OSError, ValueError, RuntimeError) as e:
            sys.argv[0] = program
            cli.fail(_damaged(values["dir"], e))
        problem = _flags_problem(command, values, saved_model, saved_model_cli)
        if problem:                 # saved_model_cli's answer: "cannot be read" or a traceback
            sys.argv[0] = program
            cli.fail(problem)
    try:
        with cli.quiet_native():
            saved_model_cli.main()
    except SystemExit as e:               # its absl app exits 1 after --help's usage
        if e.code == 1 and cli.asked_for_help(sys.argv[1:]):
            sys.exit(0)
        raise
    except BrokenPipeError:               # `show ... | head`: quietly, as the other tools
        cli._stdout_closed()
    except KeyboardInterrupt:
        sys.argv[0] = program
        cli.interrupted()
    except tf.errors.InvalidArgumentError as e:  # the signature refused the input
        sys.argv[0] = program
        cli.fail(f"the signature refused the input: {cli.cause_line(e)}")
    except (tf.errors.DataLossError, tf.errors.NotFoundError, tf.errors.OutOfRangeError) as e:
        sys.argv[0] = program                    # variables/ unreadable (the .pb was read)
        path = values.get("dir") or _given_dir(sys.argv[1:])
        if isinstance(e, tf.errors.NotFoundError) and path not in str(e):
            cli.fail(f"saved_model_cli {command} could not finish: {cli.cause_line(e)}")
        cli.fail(_damaged(path, e))
    except (OSError, ValueError, RuntimeError, tf.errors.OpError) as e:
        sys.argv[0] = program                    # our name in the message, not TF's tool's
        cli.fail(f"saved_model_cli {command or ''} could not finish: {cli.cause_line(e)}"
                 .replace("  ", " "))


if __name__ == "__main__":
    main()
