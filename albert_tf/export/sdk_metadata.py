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

The embedded vocabulary (`sdk_vocabulary`) is the model directory's, of either kind:

* SentencePiece (``vocab.model``): the SDKs tokenize with plain SentencePiece, no ALBERT
  preprocessing. The embedded model therefore carries ALBERT's preprocessing in its
  normalizer (`albert_tf.export.lite_tokenizer.deployment_spm_proto`), and the digit-comma
  pieces that ALBERT splits (``"1,"``) are marked unused so that SentencePiece does not
  produce them. `check_vocabulary` proves on probe text that SentencePiece alone then gives
  our ids, and refuses a vocabulary that cannot.
* WordPiece (``vocab.txt``, a ``BertTokenizer`` process unit): the SDKs' BertTokenizer
  (the same code in MediaPipe and the Task Library; `sdk_bert_ids` is it in Python)
  lower-cases ASCII letters, splits at ASCII whitespace and around ASCII punctuation,
  Unicode punctuation and CJK ideographs, then does WordPiece with a 100-byte word limit.
  It strips no accents, lower-cases no other letter and drops no control character, so its
  ids are ours exactly on `WORDPIECE_SAME_IDS` text (printable ASCII, tabs, newlines;
  uncased vocabularies) and may differ on text with other characters: an accented word is
  mostly ``[UNK]`` to it. Measured with MediaPipe 1.2.3 and Task Library 0.4.4 (a model
  whose scores are its input ids; a 3,000-token vocabulary trained on IMDB): the same ids
  as ours for 867 of 872 SST-2 dev sentences, as they are and upper-cased (all 866 ASCII
  ones; 5 of the 6 others differ: ``næs``, ``maelström``, ``naiveté``, ``mollà``,
  ``amélie``), 1 of 872 with é/à/’ put in, 300 of 300 random printable-ASCII strings with
  tabs and newlines. `sdk_bert_ids` gave both SDKs' ids on all of these; on a sweep of the
  BMP, characters one by one, it differs from them only where their Unicode tables of
  punctuation are older or newer (6 of 2,056 texts; MediaPipe and the Task Library differ
  on 4). ``tests/test_wordpiece_export.py`` holds the SDKs to `sdk_bert_ids`.
  `check_wordpiece` proves the ASCII agreement on probe text and refuses a vocabulary
  without it (a cased one: the SDKs lower-case ASCII); ``metadata.json`` records the class.

tflite-support 0.4.4 pins ``protobuf<4``, which TensorFlow 2.21 cannot share; its metadata
writers use no protobuf, so it is installed beside TensorFlow without its dependencies:
``pip install --no-deps tflite-support==0.4.4`` (its wheels cover Python 3.8 to 3.11).
"""

from __future__ import annotations

import dataclasses
import os
import string
import tempfile
import unicodedata
from typing import Callable, Mapping, Sequence

from albert_tf.export.common import ExportError
from albert_tf.text import vocabulary as vocab_lib

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
# The text on which the SDKs' BertTokenizer gives our WordPiece ids (uncased vocabularies).
WORDPIECE_SAME_IDS = ("text of printable ASCII characters, tabs, newlines and carriage "
                      "returns; other characters may get other ids (the SDKs lower-case "
                      "ASCII letters only, strip no accents, drop no control characters and "
                      "split at ASCII whitespace only)")
_SAME_IDS_CHARS = frozenset(string.printable) - frozenset("\x0b\x0c")
WORDPIECE_PROBE_TEXTS = PROBE_TEXTS + (
    "$5 + <b>x</b> = 100% ^_^ `~|{}[]\\@#&*", "CR\r\nLF", "[CLS] not [SEP] special",
    "a" * 101 + " " + "b" * 100)


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


# Builtin-op versions newer than the TFLite Task Library 0.4.4 runtime (a 2023 TF Lite):
# measured, FULLY_CONNECTED v9 (`dynamic_per_tensor`) loads and v12 (`dynamic`: per-channel
# int8 weights with dynamic-range activations) is refused ("FULLY_CONNECTED' version '12'",
# tests/test_mobile_sdk_classification.py). MediaPipe Tasks 1.2.3 runs every recipe.
TASK_LIBRARY_NEWEST_OP_VERSIONS = {"FULLY_CONNECTED": 11}
TASK_LIBRARY_RECIPES = "dynamic_per_tensor or int8_per_tensor"


def runners(head, op_versions: dict[str, int]) -> tuple[list[str], dict[str, str]]:
    """The SDK tasks of ``head`` (``head.sdk_runners``) that load a model whose op report
    says ``op_versions``, and for the others why not (``{runner: reason}``): the Task
    Library's runtime lacks newer op versions (`TASK_LIBRARY_NEWEST_OP_VERSIONS`)."""
    newer = [f"{op} v{op_versions[op]}" for op, newest in TASK_LIBRARY_NEWEST_OP_VERSIONS.items()
             if op_versions.get(op, 0) > newest]
    ok, refused = [], {}
    for runner in head.sdk_runners:
        if newer and runner.startswith("Task Library"):
            refused[runner] = (f"{', '.join(newer)} is newer than its runtime (export "
                               f"--quantization={TASK_LIBRARY_RECIPES} for it)")
        else:
            ok.append(runner)
    return ok, refused


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
    """The vocabulary file to embed for the SDKs' tokenizer (either kind; see the module
    docstring), checked on probe text: an `ExportError` naming the difference if the SDKs
    would get other ids than ours."""
    return _TOKENIZERS[vocab_lib.vocabulary_kind(vocab_file)].build(vocab_file, do_lower_case)


def same_ids(vocab: bytes) -> str:
    """On what text the SDKs' ids are ours, for an embedded vocabulary (`sdk_vocabulary`)."""
    return _TOKENIZERS[vocab_lib.data_kind(vocab)].same_ids


def _sentencepiece_vocabulary(vocab_file: str, do_lower_case: bool) -> bytes:
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


# ------------------------------------------------------------------- WordPiece
# The SDKs' BertTokenizer: whitespace it splits at (RE2's \s), the CJK ranges it splits off.
_SDK_SPACES = frozenset("\t\n\f\r ")
_SDK_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
            (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_SDK_MAX_BYTES_PER_WORD = 100
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _sdk_splits_off(char: str) -> bool:
    """ASCII punctuation and symbols, Unicode punctuation (P*) and CJK ideographs."""
    code = ord(char)
    return (33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126
            or unicodedata.category(char).startswith("P")
            or any(low <= code <= high for low, high in _SDK_CJK))


def sdk_bert_words(text: str) -> list[str]:
    """The words the SDKs' BertTokenizer looks up: ``text`` with ASCII letters lower-cased,
    split at ASCII whitespace (dropped) and around `_sdk_splits_off` characters (kept)."""
    words: list[str] = []
    word: list[str] = []
    for char in text.translate(_ASCII_LOWER):
        if char in _SDK_SPACES or _sdk_splits_off(char):
            if word:
                words.append("".join(word))
                word = []
            if char not in _SDK_SPACES:
                words.append(char)
        else:
            word.append(char)
    return words + (["".join(word)] if word else [])


def _sdk_wordpiece(word: str, vocab: Mapping[str, int], unk_id: int) -> list[int]:
    """Greedy longest-match-first WordPiece of one word; ``[UNK]`` for the whole word when a
    part has no piece or the word is longer than 100 UTF-8 bytes."""
    if len(word.encode("utf-8")) > _SDK_MAX_BYTES_PER_WORD:
        return [unk_id]
    ids: list[int] = []
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                ids.append(vocab[piece])
                start = end
                break
        else:
            return [unk_id]
    return ids


def sdk_bert_ids(vocab: Mapping[str, int], unk_id: int, text: str) -> list[int]:
    """The ids the SDKs' BertTokenizer gives ``text`` with ``vocab`` (token -> id), as
    measured with MediaPipe 1.2.3 and Task Library 0.4.4 (``tests/test_wordpiece_export.py``
    holds this function to their ids)."""
    return [i for word in sdk_bert_words(text) for i in _sdk_wordpiece(word, vocab, unk_id)]


def in_wordpiece_same_ids(text: str) -> bool:
    """Whether ``text`` is in `WORDPIECE_SAME_IDS` (printable ASCII, tab, newline, CR)."""
    return _SAME_IDS_CHARS.issuperset(text)


def check_wordpiece(py, vocab_file: str, texts: Sequence[str] = WORDPIECE_PROBE_TEXTS) -> None:
    """The SDKs' BertTokenizer (`sdk_bert_ids`) must give ``py.encode``'s ids on the
    `WORDPIECE_SAME_IDS` texts of ``texts``; an `ExportError` naming the first difference
    if not (a cased vocabulary: the SDKs lower-case ASCII letters)."""
    vocab = {token: i for i, token in enumerate(py.vocab)}
    for text in filter(in_wordpiece_same_ids, texts):
        want, got = py.encode(text), sdk_bert_ids(vocab, py.unk_id, text)
        if want != got:
            why = ("it is cased (do_lower_case=false) and the SDKs lower-case ASCII letters"
                   if not py.do_lower_case else "the SDKs' BertTokenizer tokenizes otherwise")
            raise ExportError(
                f"{vocab_file}: the mobile SDKs would get other ids than albert-tf ({why}): "
                f"{text!r} is {py.convert_ids_to_tokens(want)} in albert-tf but "
                f"{py.convert_ids_to_tokens(got)} in the SDKs. Export with "
                "--sdk_metadata=off and tokenize in the app.")


def _wordpiece_vocabulary(vocab_file: str, do_lower_case: bool) -> bytes:
    """``vocab.txt`` as `WordPieceTokenizer` reads it, one token a line; checked with
    `check_wordpiece`."""
    from albert_tf.text.wordpiece import WordPieceTokenizer
    py = WordPieceTokenizer(vocab_file, do_lower_case=do_lower_case)
    check_wordpiece(py, vocab_file)
    return "".join(token + "\n" for token in py.vocab).encode("utf-8")


@dataclasses.dataclass(frozen=True)
class _SdkTokenizer:
    """How one vocabulary kind is embedded (`_TOKENIZERS`)."""

    build: Callable[[str, bool], bytes]   # (vocab_file, do_lower_case) -> the file, checked
    file_name: str                        # its name in the .tflite
    metadata: str                         # the metadata_info class of its process unit
    ids: str                              # what the ids are (the model's description)
    same_ids: str                         # on what text the SDKs' ids are ours


_TOKENIZERS = {
    vocab_lib.SENTENCEPIECE: _SdkTokenizer(
        _sentencepiece_vocabulary, "sentencepiece.model", "SentencePieceTokenizerMd",
        "SentencePiece ids; the embedded vocabulary applies ALBERT's preprocessing",
        "any text (ALBERT's preprocessing is in the vocabulary's normalizer)"),
    vocab_lib.WORDPIECE: _SdkTokenizer(
        _wordpiece_vocabulary, "vocab.txt", "BertTokenizerMd",
        "WordPiece ids of the embedded vocab.txt (BERT's uncased tokenization)",
        WORDPIECE_SAME_IDS),
}


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


def _general(metadata_info, head_name: str, task: str, quantization: str, ids: str):
    return metadata_info.GeneralMd(
        name=f"albert-tf {task} {head_name}",
        description=(f"ALBERT {head_name} model for {task!r} exported by albert-tf "
                     f"(quantization: {quantization}). Inputs: [CLS] text [SEP] {ids}."),
        version="1", author="albert-tf", licenses="Apache License 2.0")


def embed(model: bytes, head, vocab: bytes, labels: Sequence[str] | None,
          task: str, quantization: str) -> bytes:
    """``model`` with the SDK metadata of ``head`` (an SDK-shaped export) populated;
    ``vocab``: the vocabulary file of `sdk_vocabulary` (either kind)."""
    bert_nl_classifier, metadata_info, metadata_writer = writers()
    inputs, outputs = _signature_tensors(model)
    if sorted(outputs) != sorted(head.sdk_outputs):
        raise ExportError(f"SDK metadata: outputs {outputs} are not the {head.name} SDK "
                          f"outputs {list(head.sdk_outputs)}.")
    kind = _TOKENIZERS[vocab_lib.data_kind(vocab)]
    buffer = bytearray(model)
    with tempfile.TemporaryDirectory() as tmp:
        vocab_path = os.path.join(tmp, kind.file_name)
        with open(vocab_path, "wb") as f:
            f.write(vocab)
        tokenizer = getattr(metadata_info, kind.metadata)(vocab_path)
        bert_inputs = metadata_info.BertInputTensorsMd(
            buffer, inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"],
            tokenizer_md=tokenizer)
        general = _general(metadata_info, head.name, task, quantization, kind.ids)
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
