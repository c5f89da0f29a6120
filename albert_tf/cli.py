"""What every command-line tool shares: a quiet start, a short ``--help``, ``--verbose``.

On a CPU machine TensorFlow's start-up prints oneDNN, CUDA and CPU-feature lines from
C++ (before its logging is even initialized, so ``TF_CPP_MIN_LOG_LEVEL`` cannot hide
them), and TF / Keras / absl add Python warnings. The tools hide all of that unless
``--verbose`` is given (or ``ALBERT_TF_VERBOSE=1`` is set, which ``--verbose`` also sets
so that the stages a pipeline starts are verbose too):

- `quiet_startup` (run by ``albert_tf.bin`` and ``albert_tflite`` when they are
  imported, before TensorFlow is) sets ``TF_CPP_MIN_LOG_LEVEL`` and makes the first
  ``import tensorflow`` swallow the known start-up noise on stderr; anything else it
  prints is passed on.
- `quiet_logs` (after the flags are parsed) sends TF / absl / Keras Python logs below
  ERROR and their deprecation warnings nowhere. Our own progress lines are ``print``s
  and are not touched.
- `quiet_native` wraps the library calls whose C++ side prints known noise straight to
  stderr, past every log level: LiteRT's ``INFO: Created TensorFlow Lite XNNPACK delegate``
  (its minimal logger reads no setting), the TFLite quantizer's ``fully_quantize: 0,
  inference_type: ...`` (a plain print), oneDNN's ``E0000 ... oneDNN supports DT_INT32``
  fallback notice. Those lines are dropped, anything else is passed on.
- `run_app` is ``absl.app.run`` with ``--verbose`` defined and the binary's own flags
  made the key flags of the program, so ``--help`` lists exactly those (each with its
  one-line help) under the binary's docstring and exits 0; ``--helpfull`` still lists
  everything.

Every failure a user can cause or fix is one line on stderr, ``<command>: error: <what
and the fix>`` (`fail`): the package's own errors (`EXPECTED_ERRORS`), a full or
read-only disk (`albert_tf.outputs.storage_problem`), and Ctrl-C (`interrupted`: exit
130, no traceback). `guarded` applies that to any ``main``; `run_app` does it for the
absl binaries.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import logging
import os
import re
import sys
import tempfile
import threading
import warnings

VERBOSE_ENV = "ALBERT_TF_VERBOSE"
INTERRUPTED_EXIT_CODE = 130       # 128 + SIGINT, what a shell reports for Ctrl-C
TERMINATED_EXIT_CODE = 143        # 128 + SIGTERM
# The package's errors whose message is the whole story (what went wrong and the fix, one
# line): ``(module, class)``, looked up only once the module is imported (an error of a
# module never imported cannot have been raised).
EXPECTED_ERRORS = (
    ("albert_tf.checkpoints", "CheckpointError"), ("albert_tf.config", "ConfigError"),
    ("albert_tf.hyperparams", "ConfigKeyError"), ("albert_tf.hyperparams", "ConfigValueError"),
    ("albert_tf.outputs", "OutputError"), ("albert_tf.resources", "DataDirError"),
    ("albert_tf.user_inputs", "InputError"), ("albert_tf.training.preflight", "InputDataError"),
    ("albert_tf.training.distribute", "DistributionError"),
    ("albert_tf.data.pretraining", "PretrainingDataError"),
    ("albert_tf.data.pretraining_shards", "CreationError"),
    ("albert_tf.data.task_data", "TaskDataError"), ("albert_tf.data.squad", "SquadError"),
    ("albert_tf.export.errors", "ExportError"), ("albert_tf.export.metadata", "MetadataError"),
    ("albert_tf.text.spm_training", "VocabularyError"),
    ("albert_tf.pipeline.stages", "StageError"),
    ("albert_tf.benchmark.end_to_end", "EndToEndError"),
    ("albert_tf.benchmark.compressed", "CompressedInputError"),
)
VERBOSE_HELP = "Show TensorFlow/absl start-up logs and library warnings (hidden by default)."

# Start-up lines of TensorFlow's C++ side on a machine without a GPU.
_NOISE = re.compile(
    r"All log messages before absl::InitializeLog|oneDNN custom operations|cuda|cuDNN|cuFFT|"
    r"cuBLAS|TensorRT|TF-TRT|cpu_feature_guard|To enable the following instructions|"
    r"rebuild TensorFlow with the appropriate compiler flags|computation placer|"
    r"Unable to register|absl::InitializeLog|"
    # Printed by library calls past every log level (see `quiet_native`).
    r"^INFO: Created TensorFlow Lite XNNPACK delegate|^fully_quantize: \d|"
    r"oneDNN supports DT_", re.IGNORECASE)
# absl C++ log lines below ERROR: "I0000 00:00:... file.cc:12] ..." / "W0000 ...".
_CPP_INFO = re.compile(r"^[IW]\d{4} \d\d:\d\d:\d\d")
_THIRD_PARTY = (r"(tensorflow|tf_keras|keras|tensorflow_[a-z_]+|absl|google|h5py|numpy|"
                r"tensorboard|ml_dtypes|flatbuffers|ai_edge_litert|tflite_runtime|jax)(\..*)?")


def verbose(argv: list[str] | None = None) -> bool:
    """Whether ``--verbose`` (or ``ALBERT_TF_VERBOSE=1``) asks for the logs."""
    argv = sys.argv[1:] if argv is None else argv
    for arg in argv:
        if arg == "--":
            break
        if arg in ("--verbose", "-verbose") or arg.startswith(("--verbose=", "-verbose=")):
            value = arg.split("=", 1)[1].lower() if "=" in arg else "true"
            return value in ("1", "true", "t", "yes", "y")
        if arg in ("--noverbose", "-noverbose"):
            return False
    return os.environ.get(VERBOSE_ENV, "").lower() in ("1", "true", "yes")


# File descriptor 2 is one per process: one thread captures it at a time (the same thread
# may nest captures); another thread's block runs uncaptured rather than waiting.
_CAPTURE_LOCK = threading.RLock()


@contextlib.contextmanager
def filtered_stderr(ignore_warnings: bool = True):
    """Captures file descriptor 2 (C++ writes there too) and passes on every line that is
    not known noise when the block ends; Python warnings are ignored in the block unless
    ``ignore_warnings=False``."""
    if not _CAPTURE_LOCK.acquire(blocking=False):   # another thread is capturing
        yield
        return
    try:
        try:
            sys.stderr.flush()
            capture = tempfile.TemporaryFile(mode="w+b")
            saved = os.dup(2)
        except (OSError, ValueError, AttributeError):
            yield
            return
        with capture:
            os.dup2(capture.fileno(), 2)
            try:
                with warnings.catch_warnings() if ignore_warnings else contextlib.nullcontext():
                    if ignore_warnings:
                        warnings.simplefilter("ignore")
                    yield
            finally:
                try:
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
                os.dup2(saved, 2)
                os.close(saved)
                capture.seek(0)
                kept = [line for line in capture.read().decode("utf-8", "replace").splitlines()
                        if line.strip() and not _NOISE.search(line)
                        and not _CPP_INFO.match(line)]
                if kept:
                    sys.stderr.write("\n".join(kept) + "\n")
                    sys.stderr.flush()
    finally:
        _CAPTURE_LOCK.release()


@contextlib.contextmanager
def quiet_native():
    """Runs a library call whose native code prints known noise to stderr (see the module
    docstring) with that noise dropped, unless verbose; everything else it writes to
    stderr is passed on when the block ends. Python warnings are left alone."""
    if verbose():
        yield
        return
    with filtered_stderr(ignore_warnings=False):
        yield


class _QuietTensorFlowImport(importlib.abc.MetaPathFinder):
    """Runs the first ``import tensorflow`` inside `filtered_stderr`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "tensorflow":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def quiet_exec_module(module):
            with filtered_stderr():
                exec_module(module)
                try:   # CUDA's platform start-up logs "failed call to cuInit" without a GPU
                    module.config.list_physical_devices("GPU")
                except Exception:  # noqa: BLE001
                    pass

        spec.loader.exec_module = quiet_exec_module
        return spec


_STARTED = False


def quiet_startup(argv: list[str] | None = None) -> bool:
    """Call before TensorFlow is imported; returns whether the run is verbose."""
    global _STARTED
    loud = verbose(argv)
    if loud:
        os.environ[VERBOSE_ENV] = "1"          # stages started as subprocesses too
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
        return True
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if not _STARTED and "tensorflow" not in sys.modules:
        sys.meta_path.insert(0, _QuietTensorFlowImport())
    _STARTED = True
    return False


class _ErrorsOnly(logging.Filter):
    """Passes log records of level ERROR and above."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR


def quiet_logs(argv: list[str] | None = None) -> bool:
    """Call after the flags are parsed: third-party Python logs below ERROR and their
    warnings go nowhere unless verbose. Returns whether the run is verbose."""
    if verbose(argv):
        return True
    for name in ("tensorflow", "absl", "h5py", "keras", "tf_keras"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.ERROR)
        # A filter as well as the level: TensorFlow sets its logger's level itself
        # (saved_model_cli's main sets INFO), which would bring its INFO lines back.
        if not any(isinstance(f, _ErrorsOnly) for f in logger.filters):
            logger.addFilter(_ErrorsOnly())
    try:
        from absl import logging as absl_logging
        absl_logging.set_stderrthreshold("error")
        # The verbosity flag, not only the logger's level: TensorFlow saves and restores
        # the flag around SavedModel writing (autotrackable), which would otherwise bring
        # its INFO lines back.
        absl_logging.set_verbosity(absl_logging.ERROR)
        absl_logging.get_absl_logger().setLevel(logging.ERROR)
    except Exception:  # noqa: BLE001
        pass
    for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning, UserWarning,
                     RuntimeWarning):
        warnings.filterwarnings("ignore", category=category, module=_THIRD_PARTY)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    return False


def define_verbose_flag() -> None:
    """``--verbose`` as an absl flag (once per process)."""
    from absl import flags
    if "verbose" not in flags.FLAGS:
        flags.DEFINE_boolean("verbose", False, VERBOSE_HELP)


def help_text(doc: str | None) -> None:
    """Makes ``doc`` (a console script's module docstring) what absl's ``--help`` prints
    above the flags: the docstring of ``__main__`` (the console-script wrapper has none)."""
    main_module = sys.modules.get("__main__")
    if doc and main_module is not None and not getattr(main_module, "__doc__", None):
        try:
            main_module.__doc__ = doc.replace("%", "%%")
        except (AttributeError, TypeError):
            pass


def run_app(main, define_flags, doc: str | None = None) -> None:
    """``absl.app.run(main)`` after ``define_flags()``, with ``--verbose`` and a ``--help``
    that shows ``doc`` (the binary's docstring) and exactly the flags it defined."""
    from absl import app, flags
    quiet_startup()
    before = set(flags.FLAGS)
    define_flags()
    define_verbose_flag()
    program = sys.argv[0]
    for name in sorted(set(flags.FLAGS) - before | {"verbose"}):
        flags.FLAGS.register_key_flag_for_module(program, flags.FLAGS[name])
    help_text(doc)

    def quiet_main(argv):
        quiet_logs()
        try:
            return guarded(main)(argv)
        except app.UsageError as e:   # one line, not the whole --help
            fail(f"{e} (see --help)", e.exitcode)

    def one_line_flag_errors(args):   # absl's own: "FATAL Flags parsing error" + a hint
        args = [args[0]] + short_help(args[1:])
        try:
            return flags.FLAGS(args)
        except flags.Error as e:      # --rounds=0, --format=bogus, --batch_size=abc, ...
            fail(f"{e} (see --help)", 1)
        except SystemExit as e:       # absl's --help flags print the usage, then exit 1
            if e.code == 1 and asked_for_help(args[1:]):
                sys.exit(0)
            raise

    stop_on_sigterm()
    try:
        app.run(quiet_main, flags_parser=one_line_flag_errors)
    except KeyboardInterrupt:         # during start-up or flag parsing
        interrupted()


def short_help(argv: list[str]) -> list[str]:
    """``-h`` as ``--help`` (absl knows only the long forms and ``-?``)."""
    out = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        out.append("--help" if arg == "-h" else arg)
    return out


def asked_for_help(argv: list[str]) -> bool:
    """Whether ``argv`` asks absl for its usage (``--help``, ``--helpfull``, ``-?``...)."""
    names = ("help", "?", "helpfull", "helpshort", "helpxml")
    for arg in argv:
        if arg == "--":
            return False
        if arg.startswith("-") and arg.lstrip("-").split("=")[0] in names:
            return True
    return False


def command_name(module: str | None = None) -> str:
    """The console script whose code is running: the one of ``module`` when given (a
    binary's module, ``albert_tf.bin.convert`` -> ``albert-tf-convert``, also when its
    functions are called in-process), else the program's (also under ``python -m``: the
    entry point of the ``__main__`` module), else ``albert-tf`` (the library called from a
    notebook, a test or a script of the user's)."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if module is None and program.startswith("albert-tf"):
        return program
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    for name in (module, getattr(spec, "name", None)):
        script = _script_of(name) if name else None
        if script:
            return script
    return "albert-tf"


def _script_of(module: str) -> str | None:
    """The installed console script whose entry point is in ``module``, or None."""
    try:
        from importlib import metadata
        for entry in metadata.entry_points(group="console_scripts"):
            if entry.value.split(":")[0] == module and entry.name.startswith("albert-tf"):
                return entry.name
    except Exception:  # noqa: BLE001  (no package metadata)
        pass
    return None


def one_line(message: object) -> str:
    """``message`` with its whitespace (newlines too) collapsed to single spaces."""
    return " ".join(str(message).split())


def cause_line(error: BaseException, limit: int = 240) -> str:
    """The line of ``error``'s message that says what went wrong, past TensorFlow's
    preamble (``Graph execution error:``, ``Detected at node ...``, indented frames),
    shortened to ``limit`` characters; its class name when it has no message."""
    message = getattr(error, "message", None) or str(error)
    lines = [line.strip() for line in message.splitlines() if line.strip()
             and not line.startswith((" ", "\t", "Graph execution error", "Detected at"))]
    line = lines[0] if lines else type(error).__name__
    return line if len(line) <= limit else line[:limit - 3] + "..."


def error(message: object, module: str | None = None) -> None:
    """Prints ``<command>: error: <message>`` (one line) to stderr; ``module``: the
    binary's module, whose console script is the command (`command_name`)."""
    print(f"{command_name(module)}: error: {one_line(message)}", file=sys.stderr, flush=True)


def fail(message: object, code: int = 2, module: str | None = None) -> None:
    """`error`, then exits ``code``."""
    error(message, module)
    sys.exit(code)


def expected_error(error: BaseException) -> str | None:
    """The one line to print for ``error`` when it is one a user can fix (one of
    `EXPECTED_ERRORS`, a ``FileNotFoundError``, or storage that cannot be written:
    `albert_tf.outputs.storage_problem`), else None (a bug: let its traceback show)."""
    from albert_tf.outputs import storage_problem
    storage = storage_problem(error)
    if storage:
        return storage
    classes = [getattr(sys.modules[module], name) for module, name in EXPECTED_ERRORS
               if module in sys.modules and hasattr(sys.modules[module], name)]
    if isinstance(error, (FileNotFoundError, *classes)):
        text = error.args[0] if isinstance(error, KeyError) and error.args else error
        return one_line(text)
    return None


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a scheduler stopping the job) raised where Ctrl-C's
    KeyboardInterrupt is, so staged outputs and work directories are removed the same way
    (`stop_on_sigterm`). Training runs replace it with their preemption handling
    (`albert_tf.training.preemption`), which checkpoints."""


def _raise_terminated(signum, frame):
    raise Terminated()


def stop_on_sigterm() -> None:
    """SIGTERM raises `Terminated` in the main thread (where no handler was set)."""
    import signal
    import threading
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
        signal.signal(signal.SIGTERM, _raise_terminated)


def interrupted(resume: str | None = None) -> None:
    """Ctrl-C: one line, exit 130 (SIGTERM: exit 143). ``resume`` says how to go on (a
    training run's last checkpoint); without it, what every command guarantees: outputs
    are staged, so none was left half-written."""
    what = resume or ("nothing half-written was left (outputs are staged and renamed into "
                      "place only when complete); run the command again to redo it")
    if isinstance(sys.exc_info()[1], Terminated):
        print(f"{command_name()}: terminated (SIGTERM): {what}.", file=sys.stderr, flush=True)
        sys.exit(TERMINATED_EXIT_CODE)
    print(f"{command_name()}: interrupted (Ctrl-C): {what}.", file=sys.stderr, flush=True)
    sys.exit(INTERRUPTED_EXIT_CODE)


def guarded(main):
    """``main`` whose expected errors (`expected_error`) are one line (exit 2), whose
    Ctrl-C is `interrupted` and whose closed stdout (``| head``) ends it quietly (exit
    141, as SIGPIPE would), never a traceback."""
    import functools

    @functools.wraps(main)
    def run(*args, **kwargs):
        stop_on_sigterm()
        try:
            return main(*args, **kwargs)
        except KeyboardInterrupt:
            interrupted()
        except BrokenPipeError:
            _stdout_closed()
        except Exception as e:  # noqa: BLE001  (re-raised unless expected)
            line = expected_error(e)
            if line is None:
                raise
            fail(line)
    return run


def script_main(main) -> None:
    """Runs a script's ``main`` as `guarded` runs a tool's, then exits (the
    ``if __name__ == "__main__":`` line of the scripts of studies/): ``main(argv)``
    with the command line's arguments (``main()`` when it takes none; then ``--help``
    prints the script's docstring and any other argument is a one-line error, exit 2). The
    exit status is ``main``'s int result, else 0."""
    import inspect
    argv = sys.argv[1:]
    if inspect.signature(main).parameters:
        result = guarded(main)(argv)
    elif argv in (["-h"], ["--help"]):
        print((getattr(sys.modules.get("__main__"), "__doc__", None) or "").strip()
              or f"{os.path.basename(sys.argv[0])}: takes no arguments")
        result = 0
    elif argv:
        fail(f"{os.path.basename(sys.argv[0])} takes no arguments (got {' '.join(argv)})")
    else:
        result = guarded(main)()
    sys.exit(result if isinstance(result, int) else 0)


def _stdout_closed() -> None:
    """The reader of stdout went away: exit 141 without Python's flush error at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(141)


def add_verbose_argument(parser) -> None:
    """``--verbose`` for the argparse tools (``albert-tflite-*``)."""
    parser.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)


__all__ = ["EXPECTED_ERRORS", "INTERRUPTED_EXIT_CODE", "TERMINATED_EXIT_CODE", "Terminated",
           "VERBOSE_ENV", "stop_on_sigterm", "add_verbose_argument",
           "asked_for_help", "cause_line", "command_name", "define_verbose_flag",
           "error", "expected_error", "fail", "filtered_stderr", "guarded", "interrupted", "one_line",
           "quiet_logs", "quiet_native", "quiet_startup", "run_app", "script_main", "short_help",
           "verbose"]
