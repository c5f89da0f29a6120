"""TFLite metadata that the mobile SDKs read, embedded in the ``.tflite`` file.

TFLite Task Library (``BertNLClassifier``, ``BertQuestionAnswerer``) and MediaPipe Tasks
(``TextClassifier``, ``TextEmbedder``) run a BERT-style model without app code for
tokenization: they read the tokenizer, the tensor roles (``ids``, ``mask``,
``segment_ids``), the label file and the score tensor from the TFLite metadata schema
embedded in the model file. This module writes that metadata as tflite-support's metadata
writers did (`albert_tf.export.metadata_schema`: the schema written with the flatbuffers
runtime; ``tests/test_sdk_metadata_writer.py`` holds it to tflite-support's writers):

==================  ===================================  ====================================
head                outputs of the SDK-shaped export     SDK tasks
==================  ===================================  ====================================
classification      ``probabilities`` float [1, C]       BertNLClassifier, TextClassifier
span                ``end_logits``, ``start_logits``     BertQuestionAnswerer (S = 384 only;
                    float [1, S], our best span marked   see `heads.span.sdk_span_logits`)
embedding           ``embedding`` float [1, H]           TextEmbedder
==================  ===================================  ====================================

The embedded vocabulary (`sdk_vocabulary`) is the model directory's, of either kind:

* SentencePiece (``vocab.model``): the SDKs tokenize with plain SentencePiece, no ALBERT
  preprocessing. The embedded model therefore carries ALBERT's preprocessing in its
  normalizer (`albert_tf.text.plain_spm.carrying_proto`), and the digit-comma
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

A plain ``pip install albert-tf`` writes it: no SDK package is needed for the export (why
none is used: `albert_tf.export.metadata_schema`).
"""

from __future__ import annotations

import dataclasses
import string
import unicodedata
from typing import Callable, Mapping, Sequence

from albert_tf.export.common import ExportError
from albert_tf.text import vocabulary as vocab_lib
from albert_tf.text.plain_spm import PROBE_TEXTS

# The tensor names the SDKs look the BERT inputs up by (metadata names).
SDK_INPUT_NAMES = ("ids", "mask", "segment_ids")
# The text on which the SDKs' BertTokenizer gives our WordPiece ids (uncased vocabularies).
WORDPIECE_SAME_IDS = ("text of printable ASCII characters, tabs, newlines and carriage "
                      "returns; other characters may get other ids (the SDKs lower-case "
                      "ASCII letters only, strip no accents, drop no control characters and "
                      "split at ASCII whitespace only)")
_SAME_IDS_CHARS = frozenset(string.printable) - frozenset("\x0b\x0c")
WORDPIECE_PROBE_TEXTS = PROBE_TEXTS + (
    "$5 + <b>x</b> = 100% ^_^ `~|{}[]\\@#&*", "CR\r\nLF", "[CLS] not [SEP] special",
    "a" * 101 + " " + "b" * 100)


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
    import albert_tf.heads.registry as heads
    if head.sdk_outputs or not requested:
        return
    supported = "; ".join(f"{name} ({', '.join(runners)})"
                          for name, runners in heads.sdk_heads().items())
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
    pieces unused (`albert_tf.text.plain_spm.carrying_proto`); checked with
    `check_vocabulary`."""
    from albert_tf.text.plain_spm import carrying_proto
    from albert_tf.text.tokenizer import AlbertTokenizer

    py = AlbertTokenizer(vocab_file, do_lower_case=do_lower_case)
    try:
        proto = carrying_proto(py)
    except vocab_lib.VocabularyError as e:
        raise ExportError(f"{vocab_file}: {e}; the mobile SDKs would tokenize differently. "
                          "Export with --sdk_metadata=off and tokenize in the app.") from None
    check_vocabulary(proto, py, vocab_file)
    return proto


def check_vocabulary(proto: bytes, py, vocab_file: str,
                     texts: Sequence[str] = PROBE_TEXTS) -> None:
    """Plain SentencePiece on ``proto`` must give ``py.encode``'s ids on ``texts`` and the
    SDKs' special pieces must exist; an `ExportError` naming the first difference if not."""
    import sentencepiece as spm

    from albert_tf.text.plain_spm import first_difference

    missing = [p for p in ("[CLS]", "[SEP]", "<pad>")
               if py.sp_model.piece_to_id(p) == py.sp_model.unk_id()]
    if missing:
        raise ExportError(f"{vocab_file} has no {missing} piece(s): the mobile SDKs pack "
                          "[CLS] text [SEP] by piece name. Export with --sdk_metadata=off.")
    difference = first_difference(py, spm.SentencePieceProcessor(model_proto=proto).encode,
                                  texts)
    if difference:
        raise ExportError(
            f"{vocab_file}: its vocabulary cannot carry ALBERT's preprocessing for the "
            f"mobile SDKs: {difference} with plain SentencePiece. Export with "
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
    options_type: str                     # its process unit (ProcessUnitOptions)
    file_field: str                       # the unit's field that names the file
    file_metadata: Mapping[str, str]      # the file's description and type there
    ids: str                              # what the ids are (the model's description)
    same_ids: str                         # on what text the SDKs' ids are ours

    def process_unit(self) -> dict:
        """Its input process unit (a `metadata_schema` ``ProcessUnit`` dict)."""
        return {"options_type": self.options_type, "options": {
            self.file_field: [{"name": self.file_name, **self.file_metadata}]}}


# The metadata as tflite-support's metadata writers (metadata_info) wrote it.
_VOCAB_FILE = {"description": "Vocabulary file to convert natural language words to "
                              "embedding vectors.", "type": "VOCABULARY"}
_TOKENIZERS = {
    vocab_lib.SENTENCEPIECE: _SdkTokenizer(
        _sentencepiece_vocabulary, "sentencepiece.model", "SentencePieceTokenizerOptions",
        "sentencePiece_model", {"description": "The sentence piece model file."},
        "SentencePiece ids; the embedded vocabulary applies ALBERT's preprocessing",
        "any text (ALBERT's preprocessing is in the vocabulary's normalizer) but where "
        "ALBERT's digit-comma split depends on context ('pre-2000,': 3 of 20,000 IMDB lines) "
        "and a Greek final sigma (albert_tf.text.plain_spm)"),
    vocab_lib.WORDPIECE: _SdkTokenizer(
        _wordpiece_vocabulary, "vocab.txt", "BertTokenizerOptions", "vocab_file", _VOCAB_FILE,
        "WordPiece ids of the embedded vocab.txt (BERT's uncased tokenization)",
        WORDPIECE_SAME_IDS),
}
# The roles of the BERT inputs (SDK_INPUT_NAMES) by our signature's input names.
_INPUTS = {
    "input_word_ids": {"name": "ids", "description": "Tokenized ids of the input text."},
    "input_mask": {"name": "mask", "description": "Mask with 1 for real tokens and 0 for "
                                                  "padding tokens."},
    "input_type_ids": {"name": "segment_ids", "description": "0 for the first sequence, 1 for "
                                                             "the second sequence if exists."},
}
_LABELS_FILE = {"name": "labels.txt", "type": "TENSOR_AXIS_LABELS",
                "description": "Labels for categories that the model can recognize."}


def _signature_tensors(model: bytes) -> tuple[list[str], list[str], int]:
    """The model's only signature: its input names in subgraph input order, its output names
    in subgraph output order, and the type (a TFLite ``TensorType``) of the first output."""
    from ai_edge_litert import schema_py_generated as schema

    m = schema.Model.GetRootAs(model, 0)
    graph, sig = m.Subgraphs(0), m.SignatureDefs(0)
    inputs = {t.TensorIndex(): t.Name().decode()
              for t in map(sig.Inputs, range(sig.InputsLength()))}
    outputs = {t.TensorIndex(): t.Name().decode()
               for t in map(sig.Outputs, range(sig.OutputsLength()))}
    return ([inputs[graph.Inputs(i)] for i in range(graph.InputsLength())],
            [outputs[graph.Outputs(i)] for i in range(graph.OutputsLength())],
            graph.Tensors(graph.Outputs(0)).Type())


def _tensor(name: str, description: str, stats: dict | None = None,
            files: Sequence[dict] = ()) -> dict:
    """A feature tensor's metadata (as tflite-support's TensorMd wrote it)."""
    tensor = {"name": name, "description": description, "stats": stats or {},
              "content": {"content_properties_type": "FeatureProperties",
                          "content_properties": {}}}
    return dict(tensor, associated_files=list(files)) if files else tensor


def embed(model: bytes, head, vocab: bytes, labels: Sequence[str] | None,
          task: str, quantization: str) -> bytes:
    """``model`` with the SDK metadata of ``head`` (an SDK-shaped export) populated;
    ``vocab``: the vocabulary file of `sdk_vocabulary` (either kind)."""
    from albert_tf.export import metadata_schema
    inputs, outputs, output_type = _signature_tensors(model)
    if sorted(outputs) != sorted(head.sdk_outputs):
        raise ExportError(f"SDK metadata: outputs {outputs} are not the {head.name} SDK "
                          f"outputs {list(head.sdk_outputs)}.")
    if sorted(inputs) != sorted(_INPUTS):
        raise ExportError(f"SDK metadata: inputs {inputs} are not the SDK inputs "
                          f"{sorted(_INPUTS)}.")
    kind = _TOKENIZERS[vocab_lib.data_kind(vocab)]
    files = {kind.file_name: vocab}
    if head.sdk_label_scores:
        output_md = [_label_scores(head.sdk_outputs[outputs[0]], output_type)]
        files = {_LABELS_FILE["name"]: "".join(f"{label}\n" for label in labels or ())
                 .encode("utf-8"), **files}
    else:
        output_md = [_tensor(name, head.sdk_outputs[name]) for name in outputs]
    metadata = {
        "name": f"albert-tf {task} {head.name}",
        "description": (f"ALBERT {head.name} model for {task!r} exported by albert-tf "
                        f"(quantization: {quantization}). Inputs: [CLS] text [SEP] "
                        f"{kind.ids}."),
        "version": "1", "author": "albert-tf", "license": "Apache License 2.0",
        "subgraph_metadata": [{"input_tensor_metadata": [_tensor(**_INPUTS[name])
                                                         for name in inputs],
                               "output_tensor_metadata": output_md,
                               "input_process_units": [kind.process_unit()]}]}
    return metadata_schema.populate(model, metadata, files)


def _label_scores(description: str, output_type: int) -> dict:
    """The metadata of a label-score output (``head.sdk_label_scores``), as the SDK
    classifiers read it: named ``probability``, the label file attached, scores in [0, 1]
    (float) or [0, 255] (uint8)."""
    from ai_edge_litert import schema_py_generated as schema
    top = {schema.TensorType.FLOAT32: 1.0, schema.TensorType.UINT8: 255.0}.get(output_type)
    return _tensor("probability", description,
                   {"max": [top], "min": [0.0]} if top else None, [_LABELS_FILE])


def read_embedded(model: bytes | str) -> dict | None:
    """The metadata embedded in ``model`` (bytes or a path): a `metadata_schema`
    ``ModelMetadata`` dict (the schema's JSON, as tflite-support's ``MetadataDisplayer``
    prints it) with ``associated_files``, the sorted names of the packed files; None if it
    has none. For reports and tests."""
    from albert_tf.export import metadata_schema
    if isinstance(model, str):
        with open(model, "rb") as f:
            model = f.read()
    meta = metadata_schema.read(model)
    if meta is None:
        return None
    return dict(meta, associated_files=sorted(metadata_schema.packed_files(model)))


# --------------------------------------------------------------- BertQuestionAnswerer's answers
# BertQuestionAnswerer's kMaxQueryLen: it cuts the question to this many pieces.
SDK_QA_MAX_QUERY_LENGTH = 64


def sdk_answer_words(tokenizer, question: str, context: str, start: int, end: int) -> str:
    """The text ``BertQuestionAnswerer`` gives for the packed token span ``start..end`` (our
    span head's ``start_index``/``end_index`` in ``[CLS] question [SEP] context [SEP]``):
    the context split on ``' '`` (empty words dropped), each word tokenized on its own, the
    span's first and last tokens mapped to their words, those words and the ones between
    joined with ``' '`` (what its ``Preprocess``/``ConvertIndexToString`` do); "" for no
    span. ``tokenizer``: the model's (``encode(text) -> ids``)."""
    if start < 0:
        return ""
    words = [w for w in context.split(" ") if w]
    token_word = [i for i, w in enumerate(words) for _ in tokenizer.encode(w)]
    offset = min(len(tokenizer.encode(question)), SDK_QA_MAX_QUERY_LENGTH) + 2  # [CLS] q [SEP]
    first, last = token_word[start - offset], token_word[end - offset]
    return " ".join(words[first:last + 1])


def word_by_word_same_ids(tokenizer, context: str) -> bool:
    """Whether tokenizing the ``' '``-split words one by one (as BertQuestionAnswerer does)
    gives the ids of the whole context (as our SavedModel does): the token positions of a
    span then agree."""
    return ([i for w in context.split(" ") if w for i in tokenizer.encode(w)]
            == tokenizer.encode(context))


def normalized_answer(tokenizer, text: str) -> str:
    """``text`` as our SavedModel spells answers: encoded and decoded by ``tokenizer``
    (ALBERT preprocessing: lower-cased, accents stripped, quotes normalized)."""
    return tokenizer.decode(tokenizer.encode(text))


def compare_spans(items: Sequence[Mapping], ours: Sequence[Mapping], sdk: Sequence[Mapping],
                  tokenizer) -> dict:
    """BertQuestionAnswerer's answers (``sdk``: ``{"answer"}`` each) against our span
    model's (``ours``: ``answer``, ``start_index``, ``end_index``) on ``items``
    (``question``, ``context``), per item:

    * **span**: the SDK's answer equals the context words that contain our span
      (`sdk_answer_words`: the SDK answers whole words, never part of one);
    * **text**: our ``answer`` (the span's pieces, detokenized) equals the SDK's answer
      put through `normalized_answer`; true when the span is whole words;
    * **within**: our ``answer`` is contained in the normalized SDK answer;
    * **same_ids**: `word_by_word_same_ids` of the context.

    Returns the counts (``examples``, ``span_agreement``, ``text_agreement``, ``within``,
    ``same_ids``) and the ``differing`` items (not span and within)."""
    rows = []
    for it, o, s in zip(items, ours, sdk):
        expected = sdk_answer_words(tokenizer, it["question"], it["context"], o["start_index"],
                                    o["end_index"])
        norm = normalized_answer(tokenizer, s["answer"])
        rows.append({"question": it["question"], "context": it["context"],
                     "ours": o["answer"], "sdk": s["answer"], "expected_sdk": expected,
                     "span": s["answer"] == expected, "text": o["answer"] == norm,
                     "within": o["answer"] in norm,
                     "same_ids": word_by_word_same_ids(tokenizer, it["context"])})
    return {"examples": len(rows), "span_agreement": sum(r["span"] for r in rows),
            "text_agreement": sum(r["text"] for r in rows),
            "within": sum(r["within"] for r in rows),
            "same_ids": sum(r["same_ids"] for r in rows),
            "differing": [r for r in rows if not (r["span"] and r["within"])]}
