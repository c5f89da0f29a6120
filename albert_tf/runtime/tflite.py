"""Run an exported ALBERT ``.tflite`` on text with LiteRT (``ai_edge_litert``).

    from albert_tf.runtime.tflite import TFLiteRunner
    runner = TFLiteRunner("edge/sst2_int8", num_threads=2)
    runner.predict(["a gorgeous film", "dull and lifeless"])
    # [{'label': '1', 'label_id': 1, 'probabilities': [0.03, 0.97]}, ...]

The runner reads ``metadata.json`` next to the model (`albert_tf.export.metadata`). For id
models it preprocesses with `albert_tf.runtime.preprocessor.Preprocessor` (the Python tokenizer
of the export's vocabulary, each text in the smallest sequence-length bucket, i.e.
signature, that holds it, the largest one truncating; texts of a bucket in batches of the
signature's static batch size), runs, and decodes the outputs in input order
(`albert_tf.runtime.runner.ExportRunner`). For models with the tokenizer inside it passes the
strings and registers tensorflow-text's custom ops. Id models need neither TensorFlow nor
tensorflow-text; LiteRT is imported only when an interpreter is made.

The ``albert-tflite-run`` CLI (`albert_tflite.runner`) runs it, and re-exports these names.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Sequence

from albert_tf import cli
from albert_tf.export.errors import ExportError, unreadable_model
from albert_tf.export.metadata import read_metadata
from albert_tf.runtime.runner import ExportRunner
from albert_tf.runtime.preprocessor import INPUT_NAMES  # noqa: F401  (public here too)


def model_file(model: str) -> str:
    """The ``.tflite`` path of a model path or export directory."""
    if os.path.isdir(model):
        return os.path.join(model, read_metadata(model)["model_file"])
    return model


# LiteRT prints "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." to stderr the first
# time a process applies the delegate (at an interpreter's first allocation); its logger
# reads no setting, so the first XNNPACK interpreter is made and allocated in
# `albert_tf.cli.quiet_native` (the line shows with --verbose).
_xnnpack_started = False


def uses_xnnpack(meta: dict) -> bool:
    """Whether an export runs on XNNPACK, LiteRT's default CPU delegate: yes, unless its
    weights are stored sparse (``albert-tf-export --sparse_weights``,
    `albert_tf.export.sparsity`): XNNPACK computes those dense, LiteRT's builtin sparse
    FULLY_CONNECTED kernels skip the zeros."""
    return not meta.get("sparse_weights")


def make_interpreter(path: str, num_threads: int = 2, xnnpack: bool = True,
                     custom_ops: Sequence[str] = ()):
    """A LiteRT interpreter for ``path``; tf-text custom ops registered when needed.

    ``xnnpack=False`` runs the builtin kernels only (for comparisons).
    """
    global _xnnpack_started
    from ai_edge_litert import interpreter as lit

    kwargs: dict[str, Any] = {"model_path": path, "num_threads": num_threads}
    if not xnnpack:
        kwargs["experimental_op_resolver_type"] = \
            lit.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    if custom_ops:
        from tensorflow_text.core.pybinds import tflite_registrar
        registerers = [getattr(tflite_registrar, name) for name in custom_ops]
        kwargs["custom_op_registerers"] = registerers
    make = lit.InterpreterWithCustomOps if custom_ops else lit.Interpreter
    if not xnnpack or _xnnpack_started:
        with unreadable_model(path, "LiteRT"):
            return make(**kwargs)
    with cli.quiet_native(), unreadable_model(path, "LiteRT"):
        interpreter = make(**kwargs)
        interpreter.allocate_tensors()     # applies the delegate: the line is printed here
    _xnnpack_started = True
    return interpreter


@contextlib.contextmanager
def invoke_errors(path: str, meta: dict | None = None):
    """Turns LiteRT's failure to run the model ``path`` (a kernel refusing a tensor type at
    invoke: ``RuntimeError: SquaredDifference only supports FLOAT32 and INT32 now, got 7``)
    into one `ExportError` naming the export, LiteRT's cause and the fix."""
    try:
        yield
    except RuntimeError as e:
        cause = cli.cause_line(e)
        quantization = (meta or {}).get("quantization")
        made = f" (quantization {quantization})" if quantization else ""
        raise ExportError(f"{path}{made}: LiteRT cannot run it ({cause}); export it again "
                          "with albert-tf-export and a --quantization LiteRT runs (none, "
                          "float16, dynamic, int8).") from None


def _invoking(call, path: str, meta: dict):
    """A signature runner ``call`` whose LiteRT failures are `invoke_errors`."""
    def run(**inputs):
        with invoke_errors(path, meta):
            return call(**inputs)
    return run


class TFLiteRunner(ExportRunner):
    """Tokenize, bucket by length, batch, run and decode with one exported model.

    Args:
      model: export directory (with ``metadata.json``) or ``.tflite`` path inside one.
      num_threads: CPU threads of the interpreter.
      xnnpack: use LiteRT's default XNNPACK delegate (the fast CPU path); None: unless the
        export's weights are stored sparse (`uses_xnnpack`).

    Threads: one runner may be shared by any number of threads. A LiteRT interpreter is not
    thread-safe (its input/output tensors and arena are per-interpreter state), so the runner
    keeps one interpreter per calling thread (``threading.local``): the constructing thread's
    is made here, another thread's on its first call, from the same file, and freed when that
    thread ends. Calls never wait on each other; answers equal single-threaded ones
    (``tests/test_concurrency.py``). Each interpreter costs its own memory (arena, XNNPACK's
    packed weights) and ``num_threads`` CPU threads, so use a fixed thread pool, not a new
    thread per request, and keep threads x ``num_threads`` near the core count.
    """

    def __init__(self, model: str, num_threads: int = 2, xnnpack: bool | None = None):
        self.meta = read_metadata(model)
        self.path = model_file(model)
        self.directory = os.path.dirname(os.path.abspath(self.path))
        self.num_threads = num_threads
        self.xnnpack = uses_xnnpack(self.meta) if xnnpack is None else xnnpack
        self._local = threading.local()   # per thread: .interpreter and its .runners
        _ = self.interpreter   # the constructing thread's, made now: a bad file fails here
        self.buckets: list[tuple[int, str]] = sorted(
            (sig["seq_length"], key) for key, sig in self.meta["signatures"].items()
            if "seq_length" in sig)
        self._init_text()

    @property
    def interpreter(self):
        """The calling thread's interpreter (made on the thread's first use)."""
        local = self._local
        if getattr(local, "interpreter", None) is None:
            local.interpreter = make_interpreter(self.path, self.num_threads, self.xnnpack,
                                                 self.meta.get("custom_op_registerers", ()))
            local.runners = {}
        return local.interpreter

    def runner(self, key: str):
        """The calling thread's signature runner for ``key``."""
        interpreter = self.interpreter
        runners = self._local.runners
        if key not in runners:
            runners[key] = _invoking(interpreter.get_signature_runner(key), self.path,
                                     self.meta)
        return runners[key]

    def batch_size(self, key: str) -> int:
        return int(self.meta["signatures"][key].get("batch_size", 1))
