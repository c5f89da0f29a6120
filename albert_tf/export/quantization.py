"""The quantization recipes of the TFLite export: one table, one representative dataset.

`calibration_texts` reads the real task text that calibrates int8 (the TFLite and the
OpenVINO export alike); `representative_dataset` packs it per signature.

    from albert_tf.export import quantization
    quantization.names()                   # ('none', 'float16', 'dynamic', ..., 'qat')
    recipe = quantization.get("int8")      # ExportError naming the choices if unknown
    recipe.configure(converter, calibrated=True, strict=False)

Each `Recipe` says how it configures the ``TFLiteConverter`` and what goes with it:
whether it needs calibration text (``calibration``), which Keras model it converts
(``model``: the float task model, or the quantization-aware one), whether the
``int8_float_ops`` denylist applies, what the metadata and the binaries report
(``integer``, ``reports_float_ops``) and whether the pipeline may list it. The binaries
(``albert-tf-export --quantization``) and the pipeline's ``export.quantizations`` take
their choices from `names` / `pipeline_names`; `albert_tf.export.tflite.convert` has no
other per-quantization logic.

Quantization-aware models are converted by the same path as the float model (the ``qat``
recipe): what loads them is *registered* here (`register_qat_loader`,
`register_qat_scope`) by the package that trains them, so the export package imports
nothing of it. Loaders are tried newest first; the fallback is a Keras SavedModel of the
TF-MOT quantize-wrapped task model at ``<model_dir>/qat``.

This module imports no TensorFlow at import time (config validation reads the table);
its errors are `albert_tf.export.common.ExportError`.
"""

from __future__ import annotations

import dataclasses
import os
import random
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:
    from albert_tf.export.common import ExportSource



def _error(message: str) -> Exception:
    from albert_tf.export.common import ExportError   # imports TensorFlow: only on errors
    return ExportError(message)

# Calibration needs of a recipe.
NO_CALIBRATION, CALIBRATION_REQUIRED, CALIBRATION_OPTIONAL = "none", "required", "optional"
# Which Keras model a recipe converts.
FLOAT_MODEL, QAT_MODEL = "float", "qat"
QAT_DIR = "qat"
QAT_CONFIG_FILE = "qat.json"    # the compression tools' QAT_FILE: a model trained with QAT


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One ``--quantization`` choice.

    Attributes:
      name: the ``--quantization`` value (and ``metadata.json``'s ``quantization``).
      description: one line for ``--help`` and the docs.
      configure: ``configure(converter, calibrated, strict)`` sets the converter's
        optimizations, supported types and ops; ``calibrated``: a representative dataset
        is set; ``strict``: no float fallback ops (``--strict_int8``).
      calibration: `NO_CALIBRATION`, `CALIBRATION_REQUIRED` (an error without
        calibration text) or `CALIBRATION_OPTIONAL` (used when the task text is found).
      model: `FLOAT_MODEL` or `QAT_MODEL` (converts `load_qat_model`'s model).
      float_ops_denylist: ``int8_float_ops`` (ops kept in float) applies.
      integer: the export records ``integer_only`` (the op report says whether every
        compute op is integer); the evaluator expects integer kernels.
      reports_float_ops: the binaries print the ops that compute in float.
      pipeline: ``albert-tf-run``'s ``export.quantizations`` may list it (a QAT model is
        exported only by its own compression).
      refused: why albert-tf does not export it (one line naming what to use instead);
        empty: it does. A refused recipe stays in the table so that asking for it gets
        that line (`albert_tf.export.formats.ExportFormat.problem`), before any work.
    """

    name: str
    description: str
    configure: Callable[[Any, bool, bool], None]
    calibration: str = NO_CALIBRATION
    model: str = FLOAT_MODEL
    float_ops_denylist: bool = False
    integer: bool = False
    reports_float_ops: bool = False
    pipeline: bool = True
    refused: str = ""

    @property
    def needs_calibration(self) -> bool:
        return self.calibration == CALIBRATION_REQUIRED

    @property
    def uses_calibration(self) -> bool:
        return self.calibration != NO_CALIBRATION

    @property
    def needs_qat_model(self) -> bool:
        return self.model == QAT_MODEL


# ------------------------------------------------------------------ converter settings
def _float32(converter, calibrated: bool, strict: bool) -> None:
    del converter, calibrated, strict


def _float16(converter, calibrated: bool, strict: bool) -> None:
    from albert_tf.backend import tf
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]


def _dynamic_range(converter, calibrated: bool, strict: bool) -> None:
    from albert_tf.backend import tf
    converter.optimizations = [tf.lite.Optimize.DEFAULT]


def _dynamic_per_tensor(converter, calibrated: bool, strict: bool) -> None:
    """Dynamic range with one weight scale per tensor: FULLY_CONNECTED stays at op version 9,
    which runtimes older than TF 2.15 have (tflite-support 0.4.4's Task Library)."""
    _dynamic_range(converter, calibrated, strict)
    converter._experimental_disable_per_channel_quantization_for_dense_layers = True


def _integer(ops_set: str) -> Callable[[Any, bool, bool], None]:
    """Full-integer quantization with ``tf.lite.OpsSet.<ops_set>`` kernels (plus float
    builtins unless strict); the representative dataset calibrates the activations."""
    def configure(converter, calibrated: bool, strict: bool) -> None:
        from albert_tf.backend import tf
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        ops = [getattr(tf.lite.OpsSet, ops_set)]
        converter.target_spec.supported_ops = ops if strict else ops + [
            tf.lite.OpsSet.TFLITE_BUILTINS]
    return configure


def _int8_per_tensor(converter, calibrated: bool, strict: bool) -> None:
    """int8 with one weight scale per tensor: older runtimes (tflite-support 0.4.4's Task
    Library) then compute exactly what LiteRT computes (per-channel int8 differed on 1 of
    872 SST-2 dev sentences there, by one quantization step)."""
    _integer("TFLITE_BUILTINS_INT8")(converter, calibrated, strict)
    converter._experimental_disable_per_channel = True


def _qat(converter, calibrated: bool, strict: bool) -> None:
    """int8 with the learned ranges; the task text calibrates what QAT leaves uncovered.
    Without calibration text only the weights are quantized (dynamic range)."""
    if calibrated:
        _integer("TFLITE_BUILTINS_INT8")(converter, calibrated, strict)
    else:
        _dynamic_range(converter, calibrated, strict)


_RECIPES: dict[str, Recipe] = {}
# Why int16x8 is refused (measured with ai-edge-litert 2.3.0 and TF 2.21's converter): the
# converter quantizes every LayerNorm's SQUARED_DIFFERENCE to int16, which LiteRT cannot
# run ("SquaredDifference only supports FLOAT32 and INT32 now, got 7" at the first invoke,
# with or without XNNPACK), and some int16 graphs abort the process inside LiteRT; the
# converter's float denylist (`int8_float_ops`) turns the whole model into int8 instead.
INT16X8_REFUSED = (
    "LiteRT cannot run albert-tf's int16x8 models: the converter quantizes every "
    "LayerNorm's SQUARED_DIFFERENCE to int16, which LiteRT has no kernel for (the "
    "export would fail at its first call); use --quantization=int8 (int8_per_tensor for "
    "older runtimes), dynamic or float16.")


def register(recipe: Recipe) -> Recipe:
    """Adds (or replaces) a recipe of the table; returns it."""
    if recipe.calibration not in (NO_CALIBRATION, CALIBRATION_REQUIRED, CALIBRATION_OPTIONAL):
        raise ValueError(f"recipe {recipe.name!r}: unknown calibration {recipe.calibration!r}.")
    if recipe.model not in (FLOAT_MODEL, QAT_MODEL):
        raise ValueError(f"recipe {recipe.name!r}: unknown model {recipe.model!r}.")
    _RECIPES[recipe.name] = recipe
    return recipe


for _recipe in (
        Recipe("none", "float32", _float32),
        Recipe("float16", "float16 weights (dequantized at load; XNNPACK computes in float32)",
               _float16),
        Recipe("dynamic", "int8 weights, float activations quantized on the fly (dynamic "
               "range)", _dynamic_range),
        Recipe("dynamic_per_tensor", "dynamic with one weight scale per tensor: op versions "
               "that older runtimes have (TFLite Task Library 0.4.4)", _dynamic_per_tensor),
        Recipe("int8", "int8 weights and activations calibrated on the task's train text; "
               "int8_float_ops keeps the ops XNNPACK has no int8 kernel for in float",
               _integer("TFLITE_BUILTINS_INT8"), calibration=CALIBRATION_REQUIRED,
               float_ops_denylist=True, integer=True, reports_float_ops=True),
        Recipe("int8_per_tensor", "int8 with one weight scale per tensor: the same "
               "answers in older runtimes (TFLite Task Library 0.4.4)",
               _int8_per_tensor, calibration=CALIBRATION_REQUIRED, float_ops_denylist=True,
               integer=True, reports_float_ops=True),
        Recipe("int16x8", "int16 activations, int8 weights: not exported (LiteRT has no "
               "int16 SQUARED_DIFFERENCE kernel for the LayerNorms)",
               _integer("EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8"),
               calibration=CALIBRATION_REQUIRED, reports_float_ops=True, pipeline=False,
               refused=INT16X8_REFUSED),
        Recipe("qat", "the quantization-aware trained model converted to int8 with its "
               "learned ranges (task text calibrates the tensors QAT leaves uncovered)",
               _qat, calibration=CALIBRATION_OPTIONAL, model=QAT_MODEL, integer=True,
               reports_float_ops=True, pipeline=False)):
    register(_recipe)
del _recipe


def names() -> tuple[str, ...]:
    """Every ``--quantization`` choice, in table order."""
    return tuple(_RECIPES)


def pipeline_names() -> tuple[str, ...]:
    """The choices ``albert-tf-run``'s ``export.quantizations`` may list."""
    return tuple(name for name, recipe in _RECIPES.items() if recipe.pipeline)


def qat_model_problem(model_dir: str, qat_model_dir: str | None = None) -> str | None:
    """Why ``--quantization=qat`` finds no quantization-aware model for ``model_dir``, read
    before TensorFlow loads (None: one is there): ``qat_model_dir``, or in ``model_dir`` the
    ``qat.json`` of a model the compression tools trained with QAT (their loader,
    `register_qat_loader`) or a ``qat/`` Keras SavedModel (`load_qat_model`)."""
    if qat_model_dir or os.path.isfile(os.path.join(model_dir, QAT_CONFIG_FILE)) \
            or os.path.exists(os.path.join(model_dir, QAT_DIR)):
        return None
    return (f"--quantization=qat needs a quantization-aware trained model and "
            f"--model_dir={model_dir} holds none (no {QAT_CONFIG_FILE}, written by "
            "albert-tf-compress's quantization-aware training, and no "
            f"{os.path.join(model_dir, QAT_DIR)} Keras SavedModel); pass the model directory "
            "of a QAT compression (its model/), --qat_model_dir=DIR, or "
            "--quantization=int8 for post-training full-integer quantization.")


def qat_names() -> tuple[str, ...]:
    """The choices that export a quantization-aware model."""
    return tuple(name for name, recipe in _RECIPES.items() if recipe.needs_qat_model)


def get(name: str) -> Recipe:
    """The recipe called ``name``; `ExportError` listing the choices otherwise."""
    try:
        return _RECIPES[name]
    except (KeyError, TypeError):
        raise _error(f"--quantization={name!r}: use one of {names()}.") from None


def describe() -> str:
    """``name: description`` lines of the table (``--help``)."""
    return "; ".join(f"{r.name}: {r.description}" for r in _RECIPES.values())


# ------------------------------------------------------------------ calibration data
DEFAULT_CALIBRATION_SIZE = 256   # texts calibrating an int8 export (TFLite, OpenVINO)


def _read_tsv_texts(path: str) -> list[tuple[str, str | None]]:
    import csv
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows:
        raise _error(f"calibration file {path} is empty.")
    header = [h.strip().lower() for h in rows[0]]
    for a, b in (("sentence", None), ("sentence1", "sentence2"), ("text_a", "text_b"),
                 ("question", "context"), ("text", None)):
        if a in header:
            ia, ib = header.index(a), header.index(b) if b in header else None
            return [(r[ia], r[ib] if ib is not None else None) for r in rows[1:] if len(r) > ia]
    return [(r[0], None) for r in rows if r and r[0].strip()]


def calibration_texts(source: ExportSource, calibration_file: str | None = None,
                      data_dir: str | None = None,
                      num: int = DEFAULT_CALIBRATION_SIZE) -> list[tuple[str, str | None]]:
    """``num`` (text_a, text_b) pairs of real text from the task's *train* split.

    ``calibration_file`` (a TSV with a ``sentence``/``sentence1``+``sentence2`` header, or
    one text per line) wins; otherwise `albert_tf.data.task_data.load_task` reads the task of
    ``task.json`` from ``data_dir`` (default ``$ALBERT_TF_DATA_DIR``). Dev and test splits are
    never used, so calibration does not see the data the export is scored on.
    """
    if calibration_file:
        texts = _read_tsv_texts(calibration_file)
    else:
        from albert_tf import resources
        data_dir = resources.data_dir_or_none(data_dir)
        if not data_dir:
            raise _error("int8 calibration needs the task's train text: "
                         f"{resources.data_dir_fix()} (the data directory), or "
                         "--calibration_file=TSV.")
        try:
            from albert_tf.data.task_data import load_task  # type: ignore
        except ImportError as e:
            raise _error("int8 calibration needs task text: pass --calibration_file "
                         "(the task's train TSV); albert_tf.data is not available "
                         f"({e}).") from e
        try:
            task = load_task(source.task_info.task, data_dir)   # GLUE dir or the data root
        except Exception as e:  # noqa: BLE001
            raise _error(f"cannot load task {source.task_info.task!r} from {data_dir} for "
                         f"int8 calibration ({e}); {resources.data_dir_fix()} to the data "
                         "directory, or --calibration_file=TSV.") from None
        texts = [(ex.text_a, getattr(ex, "text_b", None)) for ex in task.train]
    if not texts:
        raise _error("no calibration text found.")
    rng = random.Random(1234)
    rng.shuffle(texts)
    return texts[:num]


def calibration_size(calibration) -> int:
    """Examples in ``calibration``: (text_a, text_b) pairs or a features dict."""
    if calibration is None:
        return 0
    if isinstance(calibration, Mapping):
        return len(next(iter(calibration.values()))) if calibration else 0
    return len(calibration)


def representative_dataset(calibration, vocab_file: str, do_lower_case: bool,
                           seq_lengths: Sequence[int], batch_size: int,
                           signature_keys: Sequence[str]):
    """The converter's ``representative_dataset``: ``(signature_key, inputs)`` samples
    (the bare inputs for a single signature) of ``batch_size`` rows, spread over the
    signatures (buckets).

    ``calibration`` is either (text_a, text_b) pairs, packed with the Python tokenizer of
    ``vocab_file`` (SentencePiece or WordPiece) to each signature's length, or a features
    dict of int32 ``[n, seq]`` arrays already packed (e.g. the training split's, as the
    compression stages encode it) whose ``seq`` must be that of every signature.
    """
    import numpy as np

    from albert_tf.networks import INPUT_NAMES
    n = len(signature_keys)
    if isinstance(calibration, Mapping):
        missing = [name for name in INPUT_NAMES if name not in calibration]
        if missing:
            raise _error(f"calibration features lack {missing}.")
        arrays = {name: np.asarray(calibration[name], np.int32) for name in INPUT_NAMES}
        width = arrays[INPUT_NAMES[0]].shape[-1]
        if any(int(seq) != width for seq in seq_lengths):
            raise _error(f"calibration features have {width} ids per row; the "
                              f"signatures take {list(seq_lengths)}.")
        count = calibration_size(arrays)

        def gen():
            for k, key in enumerate(signature_keys):
                rows = np.arange(k, count, n) if count >= 4 * n else np.arange(count)
                for start in range(0, len(rows) - batch_size + 1, batch_size):
                    take = rows[start:start + batch_size]
                    sample = {name: arrays[name][take] for name in INPUT_NAMES}
                    yield (key, sample) if n > 1 else sample

        return gen

    from albert_tf.text.vocabulary import load_tokenizer
    tok = load_tokenizer(vocab_file, do_lower_case=do_lower_case)   # either kind
    encoded = [(tok.encode(a), tok.encode(b) if b is not None else None) for a, b in calibration]

    def gen():
        from albert_tf.text.packing import pack_ids
        for k, (key, seq) in enumerate(zip(signature_keys, seq_lengths)):
            share = encoded[k::n] if len(encoded) >= 4 * n else encoded
            for start in range(0, len(share) - batch_size + 1, batch_size):
                rows = [pack_ids(a, b, seq, tok.cls_id, tok.sep_id, tok.pad_id)
                        for a, b in share[start:start + batch_size]]
                sample = {name: np.array([r[name] for r in rows], np.int32)
                          for name in INPUT_NAMES}
                yield (key, sample) if n > 1 else sample

    return gen


# ------------------------------------------------------------ quantization-aware models
QAT_LOADERS: list[Callable[[str], Any]] = []
QAT_SCOPES: list[Callable[[], Any]] = []


def register_qat_loader(loader: Callable[[str], Any]) -> Callable[[str], Any]:
    """Adds ``loader(model_dir) -> keras.Model | None`` to the QAT model lookup (the
    newest registered is tried first; registering the same loader again moves it to the
    front). Returns ``loader`` (usable as a decorator; remove it with
    `unregister_qat_loader`)."""
    unregister_qat_loader(loader)
    QAT_LOADERS.insert(0, loader)
    return loader


def unregister_qat_loader(loader: Callable[[str], Any]) -> None:
    while loader in QAT_LOADERS:
        QAT_LOADERS.remove(loader)


def register_qat_scope(scope: Callable[[], Any]) -> Callable[[], Any]:
    """Adds ``scope()``, a context manager with the custom objects (quantizers,
    ``QuantizeConfig``s) that deserializing a QAT SavedModel needs; the newest wins."""
    while scope in QAT_SCOPES:
        QAT_SCOPES.remove(scope)
    QAT_SCOPES.insert(0, scope)
    return scope


def load_qat_model(model_dir: str, qat_model_dir: str | None = None):
    """The quantization-aware Keras model for ``model_dir`` (the ``qat`` recipe's model).

    ``qat_model_dir`` given: the Keras SavedModel of the TF-MOT quantize-wrapped task
    model there. Otherwise the registered loaders (`register_qat_loader`, newest first),
    then such a SavedModel at ``<model_dir>/qat``. Its outputs must be those of the float
    task model (``logits``, ``value``, ...); it converts through the same path as the float
    model.
    """
    if qat_model_dir is None:
        for loader in list(QAT_LOADERS):
            model = loader(model_dir)
            if model is not None:
                return model
    path = qat_model_dir or os.path.join(model_dir, QAT_DIR)
    if not os.path.exists(path):
        raise _error(
            f"--quantization=qat needs a quantization-aware trained model and none was found "
            f"for {model_dir}: no registered loader knows it ({len(QAT_LOADERS)} registered; "
            "the compression tools register theirs when their qat module is imported, as "
            f"albert-tf-export does) and there is no {path} (a Keras SavedModel of the TF-MOT "
            "quantize-wrapped task model). Train one with the compression tools "
            "(quantization-aware training), or use --quantization=int8 for post-training "
            "full-integer quantization.")
    import tensorflow_model_optimization as tfmot

    import albert_tf.layers  # noqa: F401  (registers the custom layers)
    from albert_tf.backend import keras
    scope = QAT_SCOPES[0] if QAT_SCOPES else tfmot.quantization.keras.quantize_scope
    with scope():
        return keras.models.load_model(path, compile=False)
