"""`Head`: what every head of the registry (`albert_tf.heads.registry`) declares, and the
defaults a head inherits.

One `Head` subclass per head, registered with ``@register``, owns:

=======================  ==============================================================
``name`` /               its name (``task.json`` ``head``); ``export_only``: an export view
``export_only``          put on any model's encoder (``--head=``), never trained
``build_model``          the Keras task model (its builder, in the head's module)
``head_layers``          the Keras names of the head's own layers: pruning's ``head`` group;
                         QAT quantizes the Dense ones (``quantize_head``)
``task_type`` /          the training task (``task.type`` of the experiment) and the
``training_task``        `albert_tf.training.task_base.Task` that trains it (loss, metrics,
                         features and labels), defined beside the head
``task_names`` /         what makes albert-tf-finetune pick its ``task.type``: a ``--task``
``file_header`` /        name (SQuAD's), or the header columns of a custom train file (and
``custom_syntax``        how to train on one, listed with the known tasks)
``example_task`` /       its small real example task (``python -m albert_tf.data.examples``)
``example_data``
``text_inputs`` /        the SavedModel serving signature: raw-text input names and shapes,
``text_shape`` /         how they are tokenized, and the outputs (tensors and strings)
``tokenize`` /
``outputs`` /
``serving_strings``
``extra_signatures``     the SavedModel's signatures of this head beside those (pretraining:
                         ``mlm``)
``lite_outputs``         the outputs of the TFLite id signatures (``[batch, seq]`` ids in)
``sdk_outputs`` /        the outputs a mobile-SDK-shaped TFLite export keeps (with their
``sdk_runners`` /        metadata descriptions), the SDK tasks that run it, and whether its
``sdk_label_scores``     output is label scores (`albert_tf.export.sdk_metadata`); empty: none
``onnx_outputs`` /       the outputs of the ONNX export and the graph nodes that compute
``onnx_graph``           them from the pooled ``[CLS]`` (`albert_tf.export.onnx` builds the
                         encoder); empty: no ONNX export
``decoded_output``       the output the runners decode answers from (checked in a .tflite
                         converted elsewhere, `albert_tf.export.metadata`)
``distill_output``       the model output distillation matches (None: not distilled)
``export_help``          for an ``export_only`` head: what ``--head`` gives, for its help
``keras_hub_task`` /     the keras-hub task that computes the head exactly, and our Dense
``keras_hub_dense``      layer that is its ``logits`` (`albert_tf.interop.keras_hub`)
``hf_task`` /            the Hugging Face class (``AlbertFor...``/``BertFor...``) that computes
``hf_dense`` /           the head exactly, our Dense layer that is its Linear, that Linear's
``hf_linear``            name, and its ``problem_type`` (`albert_tf.interop.hf_tasks`)
``runner_rows`` /        the export runners (`albert_tf.runtime.runner`): which packed rows one
``decode`` /             example becomes, how their outputs become the answer, and the keys
``answer_keys``          of every answer
``keras_loss`` /         the Keras loss compression's ``fit`` trains its model with, and the
``compression_stages``   compression stages that model can go through (pruning, QAT)
``smoke_files`` /        a tiny train set in its own input format and the overrides that
``smoke_inputs``         train on it, and texts for the runners: the end-to-end test of every
                         head (``tests/test_every_head.py``)
=======================  ==============================================================
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import numpy as np


def lazy_tf():
    """TensorFlow, imported on first use (the runner imports the heads without it)."""
    from albert_tf.backend import tf
    return tf


def softmax_and_argmax(logits, id_name: str = "label_id") -> dict:
    """``{"probabilities": softmax [..., n] float32, id_name: argmax [...] int32}`` of the
    logits (any float dtype) over their last axis: the serving outputs of the heads that
    pick one of n (labels, tags, choices)."""
    tf = lazy_tf()
    logits = tf.cast(logits, tf.float32)
    return {"probabilities": tf.nn.softmax(logits, axis=-1),
            id_name: tf.cast(tf.argmax(logits, axis=-1), tf.int32)}


def smoke_sentences(n: int = 16) -> list[str]:
    """``n`` short distinct review sentences, every other one positive: the texts of the
    heads' smoke data (`Head.smoke_files`)."""
    good, bad = ("a gorgeous film", "a warm story", "sharp and funny"), ("a dull mess",
                                                                        "flat and slow")
    return [f"{(good if i % 2 else bad)[i % (3 if i % 2 else 2)]} number {i} ." for i in range(n)]


def write_smoke_tsv(directory: str, header: Sequence[str], rows: Sequence[Sequence]) -> dict:
    """Writes ``train.tsv`` and ``dev.tsv`` (the same ``rows`` under ``header``) to
    ``directory``; returns ``{"train": path, "dev": path}``."""
    os.makedirs(directory, exist_ok=True)
    text = "".join("\t".join(map(str, row)) + "\n" for row in (header, *rows))
    paths = {split: os.path.join(directory, f"{split}.tsv") for split in ("train", "dev")}
    for path in paths.values():
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return paths


class Head:
    """What one head does; see the module docstring. Subclasses override what differs."""

    name = ""
    #: an export view put on any model's encoder (``--head=``), never trained: registered in
    #: `albert_tf.heads.registry.EXPORT_HEADS`.
    export_only = False
    #: the Keras names of the head's own layers in its model: pruning's ``head`` group, and
    #: (the Dense ones) the head layers QAT quantizes with ``quantize_head``.
    head_layers: tuple[str, ...] = ()
    #: ``task.type`` of the experiment whose training task builds this head (None: another
    #: head's task trains it, e.g. regression is trained by the classification task).
    task_type: str | None = None
    #: ``--task`` names (lower case) that pick this head's ``task_type`` whatever
    #: ``task.type`` says (span: the SQuAD names).
    task_names: tuple[str, ...] = ()
    #: the header columns of a custom train file that pick this head's ``task_type`` over the
    #: default ``classification`` (token classification: ``tokens``, ``tags``).
    file_header: tuple[str, ...] = ()
    #: how to train on such a file, for the list of known tasks (`albert_tf.data.task_data.
    #: known_tasks`): ``"<what>: <flags> (header <columns>)"``.
    custom_syntax = ""
    #: the folder of its small real example task (``python -m albert_tf.data.examples``,
    #: built by `example_data`); "": none.
    example_task = ""
    labels_required = False
    #: whether the head's model takes text pairs (``task.json`` ``text_pair``) whatever the
    #: task (span: question and context: True; tagging: one text: False), or None: the task
    #: decides (classification of single sentences or pairs).
    text_pair: bool | None = None
    #: whether a TFLite export may put the tokenizer in the graph (``--with_tokenizer``).
    lite_tokenizer = True
    #: the outputs of an SDK-shaped TFLite export, in the order the SDKs read them, each
    #: with the description its metadata gives it (empty: no mobile SDK runs this head),
    #: and the SDK tasks that run it (`albert_tf.export.sdk_metadata`).
    sdk_outputs: Mapping[str, str] = {}
    sdk_runners: tuple[str, ...] = ()
    #: whether the SDK output is one score per label: its metadata then carries the label
    #: file and the scores' range (what the SDK classifiers read).
    sdk_label_scores = False
    #: the outputs of the ONNX export, on the pooled ``[CLS]`` (`onnx_graph` builds them);
    #: empty: no ONNX export of this head.
    onnx_outputs: tuple[str, ...] = ()
    #: the output the runners decode an answer from, which a .tflite converted elsewhere
    #: must have (`albert_tf.export.metadata`); None: not checked.
    decoded_output: str | None = None
    #: the model output knowledge distillation matches between teacher and student
    #: (`albert_tf.compression`); None: this head is not distilled.
    distill_output: str | None = None
    #: the compression stages (`albert_tf.compression`) its model can go through:
    #: ``"pruning"`` (magnitude pruning, TF-MOT) and ``"qat"`` (quantization-aware training).
    compression_stages: tuple[str, ...] = ("pruning", "qat")
    #: the keys of every answer `decode` gives (the export runners' ``predict``).
    answer_keys: tuple[str, ...] = ()
    #: an ``export_only`` head: what ``--head=<name>`` gives (albert-tf-export's help).
    export_help = ""
    #: the keras-hub task base class that computes this head exactly (``"TextClassifier"``:
    #: pooled ``[CLS]`` -> dropout -> Dense ``logits``) and our Dense layer that is its
    #: ``logits`` layer (`albert_tf.interop.keras_hub`); None: keras-hub has no such task.
    keras_hub_task: str | None = None
    keras_hub_dense: str | None = None
    #: Hugging Face: the class suffix (``Albert``/``Bert`` + ``hf_task``) whose head computes
    #: this one from the same encoder outputs, our Dense layer that is that head's
    #: ``nn.Linear`` (``hf_linear``) and the config's ``problem_type``; None: no Hugging Face
    #: class. ``hf_dense`` None with an ``hf_task``: the name map's own heads (mlm/, sop/).
    hf_task: str | None = None
    hf_dense: str | None = None
    hf_linear: str = "classifier"
    hf_problem_type: str | None = None
    #: what differs from the Hugging Face class, for the conversion report ("": nothing).
    hf_note = ""

    # -- task.json ---------------------------------------------------------------------
    def validate(self, info) -> None:
        """A ValueError when ``info`` (a `TaskInfo`) lacks what this head needs."""
        if self.labels_required and not info.label_list:
            raise ValueError(f"task.json label_list: a {self.name} task needs its labels.")

    # -- model and training ------------------------------------------------------------
    def build_model(self, config, info, **build_kwargs):
        """The Keras task model of ``config`` (an `AlbertConfig`) for ``info``."""
        raise NotImplementedError

    def training_task(self, config, **kwargs):
        """The `albert_tf.training.task_base.Task` that trains this head on ``config`` (an
        `ExperimentConfig`); a head that is never trained has none."""
        raise NotImplementedError(f"the {self.name} head has no training task.")

    def smoke_files(self, directory: str, vocab: str) -> list[str]:
        """Writes a tiny train (and dev) set of this head's own input format (16 examples)
        to ``directory`` and returns the ``--params_override`` lines that train this head on
        it (on albert-tf-finetune's defaults; ``vocab``: the vocabulary file): the
        end-to-end test of every head. An ``export_only`` head has none."""
        raise NotImplementedError(f"the {self.name} head has no smoke data.")

    def smoke_inputs(self) -> tuple[list, list | None]:
        """``(texts_a, texts_b)`` for the runners' ``predict`` (``texts_b`` None: one text
        per example), a few examples: the end-to-end test of every head."""
        return smoke_sentences(3), None

    def keras_loss(self):
        """The Keras loss of this head's model for compression's ``fit`` (`albert_tf.
        compression`), on the labels its training task's datasets give: the cross-entropy
        of ``logits`` against integer labels by default."""
        from albert_tf.backend import keras
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def example_data(self, data_dir: str, output_dir: str, overwrite: bool = False) -> str:
        """Writes the ``example_task`` folder under ``output_dir`` from the shared data of
        ``data_dir`` (an albert-tf output, `albert_tf.data.examples`); returns it."""
        raise NotImplementedError(f"the {self.name} head has no example task.")

    # -- ONNX ----------------------------------------------------------------------------
    def onnx_graph(self, g, pooled: str, source, dims: list, seq) -> list:
        """Adds the nodes of ``onnx_outputs`` to ``g`` (an `albert_tf.export.onnx.Graph`)
        from ``pooled`` (the pooled ``[CLS]`` ``[B, H]``) of ``source`` (an `ExportSource`);
        returns their ``onnx.ValueInfoProto`` (``dims``: the batch dimension, ``seq``: the
        sequence one)."""
        raise NotImplementedError(f"the {self.name} head has no ONNX graph.")

    # -- SavedModel serving ------------------------------------------------------------
    def text_inputs(self, info) -> tuple[str, ...]:
        """Names of the string inputs of the serving signatures."""
        return ("text_a", "text_b") if info.text_pair else ("text",)

    def text_shape(self, name: str, batch_size: int | None = None) -> list:
        """Shape of string input ``name`` (``[batch]``; ``None`` = any batch)."""
        return [batch_size]

    def tokenize(self, tokenizer, texts: Sequence, names: Sequence[str]) -> dict:
        """The three int32 id tensors of raw-text inputs ``texts`` (in ``names`` order)."""
        tf = lazy_tf()
        text_a = tf.reshape(texts[0], [-1])
        text_b = tf.reshape(texts[1], [-1]) if len(texts) > 1 else None
        if text_b is not None:       # else an obscure shape error deep in the tokenizer
            check = tf.debugging.assert_equal(
                tf.size(text_a), tf.size(text_b), message=(
                    f"{names[0]} and {names[1]} must have the same batch size (one pair per "
                    "row)"))
            with tf.control_dependencies([check]):
                text_a = tf.identity(text_a)
        return tokenizer(text_a, text_b)

    def model_features(self, features: dict) -> dict:
        """``[B, S]`` ids as the model takes them (id signatures, encoder view)."""
        return features

    def prepare_serving(self, module) -> None:
        """Adds what `serving_strings` needs to the `ServingModule` (tracked assets)."""

    def outputs(self, source, outputs: dict, features: dict, sep_id: int) -> dict:
        """Task outputs (tensors) of a model call on tokenized raw text."""
        raise NotImplementedError

    def serving_strings(self, module, result: dict, features: dict, texts: Sequence) -> dict:
        """String outputs added to `outputs` in the SavedModel (labels, answers)."""
        return {}

    def extra_signatures(self, module) -> dict:
        """``{name: fn(input_word_ids, input_mask, input_type_ids) -> outputs}``: signatures
        on the three int32 ``[B, S]`` ids the SavedModel adds for this head, beside
        ``serving_default``, ``tokenize`` and ``encode`` (``module``: the `ServingModule`)."""
        return {}

    # -- TFLite ------------------------------------------------------------------------
    def lite_outputs(self, source, model, features: dict, sep_id: int) -> dict:
        """Outputs of a TFLite id signature: ``features`` are ``[batch, seq]`` ids."""
        raw = model(self.model_features(features), training=False)
        return self.outputs(source, raw, features, sep_id)

    def sdk_lite_outputs(self, source, model, features: dict, sep_id: int) -> dict:
        """Outputs of the SDK-shaped TFLite export (``sdk_outputs``; ``[1, seq]`` ids in)."""
        result = self.lite_outputs(source, model, features, sep_id)
        return {k: result[k] for k in self.sdk_outputs}

    def sdk_problem(self, info, seq_length: int) -> str | None:
        """Why the SDKs cannot run this head's export of ``seq_length`` ids (None: they can)."""
        return None

    # -- edge runner -------------------------------------------------------------------
    def runner_pair(self, meta: dict) -> bool:
        """Whether each example has a second input (``texts_b``)."""
        return bool(meta.get("text_pair"))

    def runner_rows(self, text_a: str, text_b: Any) -> list[tuple[str, str | None]]:
        """The (text_a, text_b) rows one example is packed into (one per model row)."""
        return [(text_a, text_b)]

    def decode(self, runner, outs: list[dict], rows: list[dict] | None,
               example: tuple[str, Any]) -> dict:
        """The answer for one example from the outputs of its rows (packed ``rows``; None
        for in-graph tokenizer models)."""
        return {k: np.asarray(v).tolist() for k, v in outs[0].items()}


#: The name of `Head` before the registry (kept for existing imports and subclasses).
TaskHead = Head
