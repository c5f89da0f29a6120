"""What every export needs: the model directory read once, task outputs, atomic output.

`load_source` reads a model directory (``config.json``, weights, ``task.json``,
``vocab.model`` or ``vocab.txt``) into an `ExportSource`; a directory without a vocabulary,
or with one that does not fit the embedding matrix, fails here, before anything is written.
`task_outputs` turns the raw outputs of a task model into what users of the exported
artifact get (the head's outputs: `albert_tf.heads`).
`export_inputs` lists what an export reads, for the one output writer
(`albert_tf.outputs.staged_output`: staged beside, renamed into place, never over a user's files).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os

import albert_tf.heads.registry as heads_lib
import albert_tf.heads.span as span_lib
from albert_tf.heads.base import Head
from albert_tf.backend import keras, tf
from albert_tf.checkpoints import (TASK_FILE, CheckpointError, TaskInfo,
                                   load_config_from_dir, load_task_model, restore_weights,
                                   unreadable_weights)
from albert_tf.config import AlbertConfig
from albert_tf.export.errors import ExportError, export_inputs  # noqa: F401  (public here)
from albert_tf.text import vocabulary as vocab_lib

# Longest answer (in tokens) considered when decoding spans in-graph.
MAX_ANSWER_LENGTH = span_lib.MAX_ANSWER_LENGTH
best_spans = span_lib.best_spans


@contextlib.contextmanager
def without_keras_traces():
    """Saves (``tf.saved_model.save``, the TFLite converter's own save) skip tf_keras's
    per-layer traces.

    A SavedModel holding a Keras model stores, besides the functions it was asked for, a
    traced ``call`` of every layer, so that ``keras.models.load_model`` can rebuild it; that
    tracing is most of an export's time. Our artifacts are loaded through their signatures
    (TF Serving, ``tf.saved_model.load(...).signatures``, the converters), never as Keras
    models, so they are saved as ``model.save(save_traces=False)`` would save them.
    """
    from tf_keras.src.saving.legacy.saved_model import utils as keras_saving_utils
    with keras_saving_utils.keras_option_scope(save_traces=False):
        yield


@dataclasses.dataclass
class ExportSource:
    """A model directory, loaded for export.

    Attributes:
      model_dir: where it came from.
      config: its `AlbertConfig`.
      task_info: its `TaskInfo` (``head="pretraining"`` for a pretrained model directory).
      model: the Keras model (task model, pretrainer, or encoder) with its weights.
      encoder: a Keras model over the *same* layers with outputs ``sequence_output`` and
        ``pooled_output`` (no pooler in span models; no weight is duplicated).
      vocab_file: the vocabulary the ids come from (``vocab.model`` or ``vocab.txt``).
      has_mlm: whether ``model`` is a pretrainer with ``mlm_logits``/``sop_logits``.
      export_head: a head of `albert_tf.heads.registry.EXPORT_HEADS` the export puts on the
        encoder instead of the model's own (``--head=embedding``).
    """

    model_dir: str
    config: AlbertConfig
    task_info: TaskInfo
    model: keras.Model
    encoder: keras.Model
    vocab_file: str
    has_mlm: bool = False
    export_head: str | None = None

    @property
    def labels(self) -> tuple[str, ...] | None:
        return None if self.export_head else self.task_info.label_list

    @property
    def head(self) -> Head:
        """The head's entry in the registry (`albert_tf.heads`): ``export_head`` (an
        export view such as ``embedding``) when set, else the model's own."""
        return heads_lib.get(self.export_head or self.task_info.head)

    @property
    def text_inputs(self) -> tuple[str, ...]:
        """Names of the string inputs of the serving signature."""
        return self.head.text_inputs(self.task_info)


def find_vocab(model_dir: str, vocab_file: str | None = None) -> str:
    """The vocabulary to tokenize with: ``vocab_file`` (a file or a vocabulary directory),
    or the model directory's ``vocab.model`` (SentencePiece) or ``vocab.txt`` (WordPiece);
    a ``vocab_file`` that is not the one the directory ships, or not of the kind its
    ``task.json`` records, is refused (`albert_tf.text.vocabulary.model_vocabulary`)."""
    if vocab_file and not os.path.exists(vocab_file):
        raise ExportError(f"no vocabulary at --vocab_file={vocab_file}: pass the vocab.model or "
                          "vocab.txt file the model was trained with.")
    try:
        path = vocab_lib.model_vocabulary(model_dir, vocab_file)
    except vocab_lib.VocabularyError as e:
        none = not vocab_file and not any(os.path.isfile(os.path.join(model_dir, name))
                                          for name in vocab_lib.FILE_NAMES.values())
        raise ExportError(f"{e} An exported model tokenizes raw text and ships its vocabulary "
                          "(or pass --vocab_file=PATH)." if none else str(e)) from e
    _vocab_size(path)
    return path


def _vocab_size(path: str) -> int:
    """The number of ids of the vocabulary at ``path`` (an `ExportError` when unusable)."""
    try:
        return vocab_lib.load_tokenizer(path).vocab_size
    except Exception as e:  # noqa: BLE001  (any parse error is a bad vocabulary)
        raise ExportError(f"{path} is not a usable vocabulary: {e}") from e


def _encoder_view(model: keras.Model) -> keras.Model:
    """A functional model over ``model``'s own layers returning the encoder outputs
    (``sequence_output``, and ``pooled_output`` when the model has a pooler)."""
    names = [layer.name for layer in model.layers]
    if "pooler" in names:
        pooler = model.get_layer("pooler")   # called once, on the final sequence output
        outputs = {"sequence_output": pooler.input, "pooled_output": pooler.output}
    else:                                    # e.g. span models: the last FFN call's output
        last = [layer for layer in model.layers if layer.name.endswith("_ffn")][-1]
        outputs = {"sequence_output": last.get_output_at(len(last.inbound_nodes) - 1)}
    return keras.Model(model.inputs, outputs, name="encoder_view")


def _check_no_task_head(model_dir: str, unused: list[str]) -> None:
    """A directory without ``task.json`` is a pretrained model: weights it does not use (a
    task head's: ``classifier/kernel``...) say it is a finetuned one that lost its
    ``task.json``, which would export without its head."""
    if unused:
        shown = ", ".join(unused[:3]) + (", ..." if len(unused) > 3 else "")
        raise ExportError(
            f"--model_dir={model_dir} has no {TASK_FILE} but holds weights a pretrained model "
            f"does not have ({shown}): a finetuned model directory that lost its {TASK_FILE}, "
            "which would export without its head; copy the directory again from the run's "
            "best/ or final/ (albert-tf-finetune writes task.json).")


def load_source(model_dir: str, vocab_file: str | None = None) -> ExportSource:
    """Reads a model directory for export (a clear `ExportError` when it cannot be used)."""
    if not os.path.isdir(model_dir):
        raise ExportError(f"--model_dir={model_dir} is not a directory.")
    vocab = find_vocab(model_dir, vocab_file)
    try:
        config = load_config_from_dir(model_dir)
        vocab_lib.check_vocab_size(_vocab_size(vocab), config.vocab_size, vocab)
        has_mlm = False
        if os.path.exists(os.path.join(model_dir, TASK_FILE)):
            model, task_info = load_task_model(model_dir)
            has_mlm = any(w.name.startswith("mlm/") for w in model.weights)
        else:
            from albert_tf.models import build_pretrainer
            from albert_tf.networks import build_encoder
            prefix = os.path.join(model_dir, "weights")
            with unreadable_weights(prefix):
                has_mlm = tf.train.load_checkpoint(prefix).has_tensor("mlm/output_bias")
            model = build_pretrainer(config) if has_mlm else build_encoder(config)
            report = restore_weights(model, model_dir)
            _check_no_task_head(model_dir, report.unused_in_checkpoint)
            task_info = TaskInfo(task="pretrained", head="pretraining")
    except (CheckpointError, ValueError) as e:
        raise ExportError(str(e)) from e
    return ExportSource(model_dir=model_dir, config=config, task_info=task_info, model=model,
                        encoder=_encoder_view(model), vocab_file=vocab, has_mlm=has_mlm)


def with_export_head(source: ExportSource, head: str) -> ExportSource:
    """``source`` with an export head (`albert_tf.heads.registry.EXPORT_HEADS`) on its encoder."""
    if head == source.task_info.head:
        return source
    if head not in heads_lib.EXPORT_HEADS:
        raise ExportError(f"--head={head}: an export can put one of "
                          f"{sorted(heads_lib.EXPORT_HEADS)} on a model (or leave --head "
                          f"unset for the model's own {source.task_info.head!r}).")
    return dataclasses.replace(source, export_head=head)


def task_outputs(source: ExportSource, outputs: dict[str, tf.Tensor],
                 features: dict[str, tf.Tensor], sep_id: int) -> dict[str, tf.Tensor]:
    """The task outputs of a model call (tensors only; strings are added by the caller)."""
    return source.head.outputs(source, outputs, features, sep_id)
