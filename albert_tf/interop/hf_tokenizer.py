"""The tokenizer files of ``albert-tf-convert --to=hf``: what ``AutoTokenizer.from_pretrained``
(transformers 5) loads as the tokenizer of a model directory's vocabulary.

=====================  ===========================================================
vocabulary             written
=====================  ===========================================================
``vocab.model``        ``spiece.model`` (a copy), ``tokenizer.json`` and
(SentencePiece)        ``tokenizer_config.json`` for ``AlbertTokenizer``
``vocab.txt``          ``vocab.txt`` (a copy) and ``tokenizer_config.json`` for
(WordPiece)            ``BertTokenizer``
=====================  ===========================================================

``tokenizer_config.json`` holds ``do_lower_case`` (``task.json``'s, else the directory's
``tokenizer_config.json``, else true), ``model_max_length`` (the finetuned
``max_seq_length``, else ``max_position_embeddings``) and, for ALBERT, ``model_input_names``
with ``token_type_ids`` (transformers' ``AlbertTokenizer`` leaves them out, so a sentence
pair would reach the model as all type 0).

transformers 5's ``AlbertTokenizer`` is the ``tokenizers`` pipeline ``Replace(``, '') +
NFKD + StripAccents + Lowercase + SentencePiece's precompiled normalizer``, ``WhitespaceSplit
+ Metaspace``, ``Unigram``; it keeps only the vocabulary and scores of a ``tokenizer.json``
and rebuilds the rest. Built from ``spiece.model`` alone it turns SentencePiece's
user-defined pieces (``( ) " - . – £ €`` in ALBERT's vocabularies) into added tokens, which
drops the ``▁`` before them: 24 of the 872 SST-2 dev sentences keep our ids. The
``tokenizer.json`` written here instead scores every user-defined piece as SentencePiece's
lattice does (``bytes * max normal score - 0.1``) and lowers the digit-comma pieces by 100
(transformers' own ``AlbertConverter``, which approximates ALBERT's digit-comma split):
872 of 872. What it cannot reproduce is in `LIMITATION` (docs/models.md).
"""

from __future__ import annotations

import json
import os
import shutil

from albert_tf.checkpoints import recorded_casing
from albert_tf.interop.conversion_report import ConversionError, MappingReport
from albert_tf.text import vocabulary as vocab_lib
from albert_tf.text import wordpiece
from albert_tf.text.preprocessing import (CLS_PIECE, MASK_PIECE, PAD_PIECE, SEP_PIECE,
                                          SPIECE_UNDERLINE, UNK_PIECE)
from albert_tf.text.tokenizer import is_digit_comma_piece

# Hugging Face's file names for our vocabularies.
HF_VOCAB_FILES = {vocab_lib.SENTENCEPIECE: "spiece.model", vocab_lib.WORDPIECE: "vocab.txt"}
TOKENIZER_CLASSES = {vocab_lib.SENTENCEPIECE: "AlbertTokenizer",
                     vocab_lib.WORDPIECE: "BertTokenizer"}
SPECIAL_TOKENS = {  # tokenizer_config.json keys
    vocab_lib.SENTENCEPIECE: dict(bos_token=CLS_PIECE, eos_token=SEP_PIECE, unk_token=UNK_PIECE,
                                  sep_token=SEP_PIECE, pad_token=PAD_PIECE, cls_token=CLS_PIECE,
                                  mask_token=MASK_PIECE),
    vocab_lib.WORDPIECE: dict(zip(("pad_token", "unk_token", "cls_token", "sep_token",
                                   "mask_token"), wordpiece.SPECIAL_TOKENS)),
}
# SentencePiece piece types (sentencepiece_model.proto).
NORMAL, USER_DEFINED = 1, 4
# transformers' AlbertConverter: a digit-comma piece's score is lowered by this much.
DIGIT_COMMA_PENALTY = 100.0
LIMITATION = (
    "Hugging Face's AlbertTokenizer differs from SentencePiece + ALBERT preprocessing on: "
    "the digit-comma split (approximated by a score penalty: ',2000,' gives '2', '000', ',' "
    "for our '200', '0', ','), "
    "exact score ties (float32 in SentencePiece), U+001C-U+001F (not a word break), "
    "non-spacing marks of combining class 0 such as Thai vowel signs (stripped), and "
    "special-token text such as '[MASK]' (the special id); see docs/models.md")


def unigram_vocab(proto) -> list[tuple[str, float]]:
    """``(piece, score)`` in id order for a ``tokenizers`` Unigram that segments as
    SentencePiece's lattice: user-defined pieces get the score SentencePiece gives them
    (``len(piece in UTF-8) * max normal score - 0.1``), digit-comma pieces
    `DIGIT_COMMA_PENALTY` less."""
    top = max(p.score for p in proto.pieces if p.type == NORMAL)
    vocab = []
    for p in proto.pieces:
        score = p.score
        if p.type == USER_DEFINED:
            score = len(p.piece.encode("utf-8")) * top - 0.1
        elif p.type == NORMAL and is_digit_comma_piece(p.piece):
            score -= DIGIT_COMMA_PENALTY
        vocab.append((p.piece, score))
    return vocab


def albert_tokenizer(spm_model: str, do_lower_case: bool):
    """The `tokenizers.Tokenizer` of transformers 5's ``AlbertTokenizer`` over
    ``unigram_vocab`` of ``spm_model``."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    proto = model_pb2.ModelProto()
    with open(spm_model, "rb") as f:
        proto.ParseFromString(f.read())
    tok = Tokenizer(Unigram(unigram_vocab(proto), unk_id=proto.trainer_spec.unk_id,
                            byte_fallback=False))
    steps = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"'), normalizers.NFKD(),
             normalizers.StripAccents()] + ([normalizers.Lowercase()] if do_lower_case else [])
    if proto.normalizer_spec.precompiled_charsmap:
        steps.append(normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap))
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement=SPIECE_UNDERLINE, prepend_scheme="always")])
    tok.decoder = decoders.Metaspace(replacement=SPIECE_UNDERLINE, prepend_scheme="always")
    ids = {p.piece: i for i, p in enumerate(proto.pieces)}
    tok.post_processor = processors.TemplateProcessing(
        single=f"{CLS_PIECE}:0 $A:0 {SEP_PIECE}:0",
        pair=f"{CLS_PIECE}:0 $A:0 {SEP_PIECE}:0 $B:1 {SEP_PIECE}:1",
        special_tokens=[(CLS_PIECE, ids[CLS_PIECE]), (SEP_PIECE, ids[SEP_PIECE])])
    tok.add_special_tokens([t for t in SPECIAL_TOKENS[vocab_lib.SENTENCEPIECE].values()
                            if t in ids])
    return tok


def tokenizer_config(kind: str, do_lower_case: bool, max_length: int) -> dict:
    """``tokenizer_config.json`` of a ``kind`` vocabulary."""
    values = {"tokenizer_class": TOKENIZER_CLASSES[kind], "do_lower_case": do_lower_case,
              "model_max_length": max_length, **SPECIAL_TOKENS[kind]}
    if kind == vocab_lib.SENTENCEPIECE:
        values.update(keep_accents=False, remove_space=True,
                      model_input_names=["input_ids", "token_type_ids", "attention_mask"])
    return values


def write_tokenizer(model_dir: str, directory: str, report: MappingReport,
                    max_length: int) -> None:
    """Writes the tokenizer files of ``model_dir``'s vocabulary into ``directory`` (nothing
    when it has none)."""
    if not any(os.path.isfile(os.path.join(model_dir, n)) for n in vocab_lib.FILE_NAMES.values()):
        return                                   # no vocabulary: weights only
    try:
        kind, path = vocab_lib.find_vocabulary(model_dir)
    except vocab_lib.VocabularyError as e:       # both
        raise ConversionError(str(e), report) from e
    shutil.copyfile(path, os.path.join(directory, HF_VOCAB_FILES[kind]))
    report.assets.append(f"{path} -> {HF_VOCAB_FILES[kind]}")
    casing = recorded_casing(model_dir)
    lower = True if casing is None else casing
    if kind == vocab_lib.SENTENCEPIECE:
        albert_tokenizer(path, lower).save(os.path.join(directory, vocab_lib.HF_TOKENIZER_FILE))
        report.assets.append(f"{vocab_lib.HF_TOKENIZER_FILE}: Unigram with SentencePiece's "
                             f"user-defined scores, digit-comma pieces -{DIGIT_COMMA_PENALTY:g}")
        report.notes.append(f"tokenizer: {LIMITATION}")
    with open(os.path.join(directory, vocab_lib.CASING_FILE), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(kind, lower, max_length), f, indent=2)
        f.write("\n")
    why = "" if casing is not None else " (the directory records none: the default)"
    report.assets.append(f"do_lower_case={lower}{why} -> {vocab_lib.CASING_FILE} "
                         f"({TOKENIZER_CLASSES[kind]})")
