"""TFLite metadata that the mobile SDKs read, embedded in the ``.tflite`` file.

TFLite Task Library (``BertNLClassifier``, ``BertQuestionAnswerer``) and MediaPipe Tasks
(``TextClassifier``, ``TextEmbedder``) run a BERT-style model without app code for
tokenization: they read the tokenizer, the tensor roles (``ids``, ``mask``,
``segment_ids``), the label file and the score tensor from the TFLite metadata schema
embedded in the model file. This module writes that metadata with tflite-support's metadata
writers (the maintained implementation of the schema):

==================  ===================================  ====================================
head                outputs of the SDK-shaped export     SDK tasks
==================  ===================================  ====================================
classification      ``probabilities`` float [1, C]       BertNLClassifier, TextClassifier
span                ``end_logits``, ``start_logits``     BertQuestionAnswerer (S = 384 only;
                    float [1, S], our best span marked   see `task_heads.sdk_span_logits`)
embedding           ``embedding`` float [1, H]           TextEmbedder
==================  ===================================  ====================================

The SDKs tokenize with plain SentencePiece: no ALBERT preprocessing. The embedded
vocabulary (`sdk_vocabulary`) therefore carries ALBERT's preprocessing in its normalizer
(`albert_tf.export.lite_tokenizer.deployment_spm_proto`), and the digit-comma pieces that
ALBERT splits (``"1,"``) are marked unused so that SentencePiece does not produce them.
`check_vocabulary` proves on probe text that SentencePiece alone then gives our ids, and
refuses a vocabulary that cannot.

tflite-support 0.4.4 pins ``protobuf<4``, which TensorFlow 2.21 cannot share; its metadata
writers use no protobuf, so it is installed beside TensorFlow without its dependencies:
``pip install --no-deps tflite-support==0.4.4`` (its wheels cover Python 3.8 to 3.11).
"""

from __future__ import annotations

import os
import tempfile
from typing import Sequence

from albert_tf.export.common import ExportError

INSTALL_FIX = ("install tflite-support's metadata writers: `pip install --no-deps "
               "tflite-support==0.4.4` (Python <= 3.11; `make install` does it), or export "
               "without SDK metadata: --sdk_metadata=off")
# The tensor names the SDKs look the BERT inputs up by (metadata names).
SDK_INPUT_NAMES = ("ids", "mask", "segment_ids")
# Text on which SentencePiece alone must give the ids of the Python tokenizer.
PROBE_TEXTS = (
    "Hello World", "A GREAT MOVIE, REALLY!", "Café, naïve résumé; ÉLAN and Ångström",
    "``quoted'' and \u201ccurly\u201d \u2018quotes\u2019", "It's 1,000,000 or 2,5 -- 3.14",
    "tabs\tand\nnew lines  and   spaces", "Fullwidth \uff21\uff22\uff23 and \u2163 numerals",
    "ÜBER straße ﬁne", "it 's a 10, a 9, 1,2,3", "",
)


def writers():
    """tflite-support's metadata writer modules (an `ExportError` with the fix if absent)."""
    try:
        from tensorflow_lite_support.metadata.python.metadata_writers import (
            bert_nl_classifier, metadata_info, metadata_writer)
    except Exception as e:  # noqa: BLE001  (ImportError, or a broken native library)
        fix = INSTALL_FIX
        if "libusb" in str(e):
            fix = ("install the system library it links: `apt-get install libusb-1.0-0` "
                   "(`make install` does it), or export without SDK metadata: "
                   "--sdk_metadata=off")
        raise ExportError(f"mobile SDK metadata needs tflite-support ({e}); {fix}.") from None
    return bert_nl_classifier, metadata_info, metadata_writer


def available() -> bool:
    try:
        writers()
    except ExportError:
        return False
    return True


def check_head(head, requested: bool) -> None:
    """Refuses (when SDK metadata was asked for) a head no SDK runs."""
    from albert_tf import task_heads
    if head.sdk_outputs or not requested:
        return
    supported = "; ".join(f"{name} ({', '.join(runners)})"
                          for name, runners in task_heads.sdk_heads().items())
    raise ExportError(f"--sdk_metadata=on: no mobile SDK runs {head.name!r} models; the SDK "
                      f"heads are {supported}. Export with --sdk_metadata=off for our runner.")


def sdk_vocabulary(vocab_file: str, do_lower_case: bool) -> bytes:
    """The SentencePiece model to embed: ALBERT's preprocessing in its normalizer, digit-comma
    pieces unused; checked with `check_vocabulary`."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    from albert_tf.export.lite_tokenizer import deployment_spm_proto
    from albert_tf.text.tokenizer import AlbertTokenizer, is_digit_comma_piece

    py = AlbertTokenizer(vocab_file, do_lower_case=do_lower_case)
    model = model_pb2.ModelProto()
    try:
        model.ParseFromString(deployment_spm_proto(py.model_proto, bool(do_lower_case)))
    except Exception as e:  # noqa: BLE001  (SentencePiece refuses the character map)
        raise ExportError(f"{vocab_file}: its normalizer cannot carry ALBERT's preprocessing "
                          f"({e}); the mobile SDKs would tokenize differently. Export with "
                          "--sdk_metadata=off and tokenize in the app.") from None
    for piece in model.pieces:
        if piece.type == piece.NORMAL and is_digit_comma_piece(piece.piece):
            piece.type = piece.UNUSED
    proto = model.SerializeToString()
    check_vocabulary(proto, py, vocab_file)
    return proto


def check_vocabulary(proto: bytes, py, vocab_file: str,
                     texts: Sequence[str] = PROBE_TEXTS) -> None:
    """Plain SentencePiece on ``proto`` must give ``py.encode``'s ids on ``texts`` and the
    SDKs' special pieces must exist; an `ExportError` naming the first difference if not."""
    import sentencepiece as spm

    missing = [p for p in ("[CLS]", "[SEP]", "<pad>")
               if py.sp_model.piece_to_id(p) == py.sp_model.unk_id()]
    if missing:
        raise ExportError(f"{vocab_file} has no {missing} piece(s): the mobile SDKs pack "
                          "[CLS] text [SEP] by piece name. Export with --sdk_metadata=off.")
    sdk = spm.SentencePieceProcessor(model_proto=proto)
    for text in texts:
        want, got = py.encode(text), sdk.encode(text)
        if want != got:
            raise ExportError(
                f"{vocab_file}: its vocabulary cannot carry ALBERT's preprocessing for the "
                f"mobile SDKs: {text!r} is {py.convert_ids_to_tokens(want)} in albert-tf but "
                f"{sdk.id_to_piece(got)} with plain SentencePiece. Export with "
                "--sdk_metadata=off and tokenize in the app.")


def _signature_tensors(model: bytes) -> tuple[dict[str, str], list[str]]:
    """(signature input name -> tensor name, signature output names in subgraph output
    order) of the model's only signature."""
    from ai_edge_litert import schema_py_generated as schema

    m = schema.ModelT.InitFromObj(schema.Model.GetRootAs(model, 0))
    graph, sig = m.subgraphs[0], m.signatureDefs[0]
    names = [t.name.decode() for t in graph.tensors]
    inputs = {t.name.decode(): names[t.tensorIndex] for t in sig.inputs}
    by_index = {t.tensorIndex: t.name.decode() for t in sig.outputs}
    return inputs, [by_index[i] for i in graph.outputs]


def _general(metadata_info, head_name: str, task: str, quantization: str):
    return metadata_info.GeneralMd(
        name=f"albert-tf {task} {head_name}",
        description=(f"ALBERT {head_name} model for {task!r} exported by albert-tf "
                     f"(quantization: {quantization}). Inputs: [CLS] text [SEP] SentencePiece "
                     "ids; the embedded vocabulary applies ALBERT's preprocessing."),
        version="1", author="albert-tf", licenses="Apache License 2.0")


def embed(model: bytes, head, vocab_proto: bytes, labels: Sequence[str] | None,
          task: str, quantization: str) -> bytes:
    """``model`` with the SDK metadata of ``head`` (an SDK-shaped export) populated."""
    bert_nl_classifier, metadata_info, metadata_writer = writers()
    inputs, outputs = _signature_tensors(model)
    if sorted(outputs) != sorted(head.sdk_outputs):
        raise ExportError(f"SDK metadata: outputs {outputs} are not the {head.name} SDK "
                          f"outputs {list(head.sdk_outputs)}.")
    buffer = bytearray(model)
    with tempfile.TemporaryDirectory() as tmp:
        vocab_path = os.path.join(tmp, "sentencepiece.model")
        with open(vocab_path, "wb") as f:
            f.write(vocab_proto)
        tokenizer = metadata_info.SentencePieceTokenizerMd(vocab_path)
        bert_inputs = metadata_info.BertInputTensorsMd(
            buffer, inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"],
            tokenizer_md=tokenizer)
        general = _general(metadata_info, head.name, task, quantization)
        if head.name == "classification":
            labels_path = os.path.join(tmp, "labels.txt")
            with open(labels_path, "w", encoding="utf-8") as f:
                f.write("".join(f"{label}\n" for label in labels or ()))
            output = metadata_info.ClassificationTensorMd(
                name="probability", description="Probabilities of the labels.",
                label_files=[metadata_info.LabelFileMd(labels_path)],
                tensor_type=metadata_info.writer_utils.get_output_tensor_types(buffer)[0])
            writer = bert_nl_classifier.MetadataWriter.create_from_metadata_info(
                buffer, general, bert_inputs, output)
        else:
            output_md = [metadata_info.TensorMd(name=name, description=_DESCRIPTIONS[name])
                         for name in outputs]
            writer = metadata_writer.MetadataWriter.create_from_metadata(
                buffer, model_metadata=general.create_metadata(),
                input_metadata=bert_inputs.create_input_tesnor_metadata(),
                output_metadata=[md.create_metadata() for md in output_md],
                associated_files=bert_inputs.get_tokenizer_associated_files(),
                input_process_units=bert_inputs.create_input_process_unit_metadata())
        return bytes(writer.populate())


_DESCRIPTIONS = {
    "start_logits": ("Logits of the answer start per input position: -10000 outside the "
                     "context; the start of albert-tf's best span raised by 10000."),
    "end_logits": ("Logits of the answer end per input position: -10000 outside the "
                   "context; the end of albert-tf's best span raised by 10000."),
    "embedding": "Mean of the last hidden states over the mask, L2-normalized.",
}


def read_embedded(model: bytes | str) -> dict | None:
    """The embedded metadata as a dict (name, input/output tensor names, associated files),
    or None; for reports and tests (tflite-support's displayer)."""
    try:
        from tensorflow_lite_support.metadata.python import metadata
    except Exception:  # noqa: BLE001
        return None
    import json
    if isinstance(model, str):
        with open(model, "rb") as f:
            model = f.read()
    try:
        displayer = metadata.MetadataDisplayer.with_model_buffer(model)
    except ValueError:
        return None
    meta = json.loads(displayer.get_metadata_json())
    meta["associated_files"] = sorted(displayer.get_packed_associated_file_list())
    return meta
