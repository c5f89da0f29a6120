"""The two vocabulary kinds a model can be trained with, and the one place that tells them apart.

===============  ===============  ============================================  ====================
kind             file             content                                       Python tokenizer
===============  ===============  ============================================  ====================
sentencepiece    ``vocab.model``  a SentencePiece ``ModelProto`` (protobuf)     `AlbertTokenizer`
wordpiece        ``vocab.txt``    UTF-8 text, one token per line (id = line)    `WordPieceTokenizer`
===============  ===============  ============================================  ====================

A model directory holds exactly one of the two files (`find_vocabulary`); a vocabulary
file's kind is read from its content (`vocabulary_kind`), so a renamed file is still
recognized. `load_tokenizer` returns the tokenizer for either. The casing of a converted
model (Hugging Face's ``do_lower_case``) is kept in ``tokenizer_config.json`` beside the
vocabulary (`write_casing` / `read_casing`); finetuned directories record it in ``task.json``.
`check_vocab_size` says, in one line, when a vocabulary does not fit the embedding matrix.
`write_vocab_txt` writes a WordPiece vocabulary atomically (training:
`albert_tf.text.wordpiece_training`; conversion: `tokenizer_json_wordpiece` reads the one a
transformers >= 5 ``tokenizer.json`` holds).
"""

from __future__ import annotations

import json
import os
from typing import Iterable

from albert_tf.text.spm_training import VocabularyError
from albert_tf.text.wordpiece import SPECIAL_TOKENS as WORDPIECE_SPECIAL_TOKENS

SENTENCEPIECE = "sentencepiece"
WORDPIECE = "wordpiece"
KINDS = (SENTENCEPIECE, WORDPIECE)
FILE_NAMES = {SENTENCEPIECE: "vocab.model", WORDPIECE: "vocab.txt"}
SENTENCEPIECE_FILE = FILE_NAMES[SENTENCEPIECE]
WORDPIECE_FILE = FILE_NAMES[WORDPIECE]
# WORDPIECE_SPECIAL_TOKENS (`wordpiece.SPECIAL_TOKENS`): in id order, as `albert-tf-train-vocab
# --type=wordpiece` writes them (the SentencePiece models have <pad>, <unk>, [CLS], [SEP],
# [MASK] at the same ids).
CASING_FILE = "tokenizer_config.json"     # the Hugging Face name for the same key
HF_TOKENIZER_FILE = "tokenizer.json"      # a `tokenizers` tokenizer, vocabulary included
# Embedding matrices are sometimes padded past the vocabulary to a multiple of 8 (NVIDIA's
# BERT: 30522 tokens, 30528 rows); more than this many unused rows is a wrong vocabulary.
MAX_PADDED_ROWS = 128


def file_name(kind: str) -> str:
    """The file name a model directory stores a ``kind`` vocabulary under."""
    if kind not in FILE_NAMES:
        raise VocabularyError(f"unknown vocabulary kind {kind!r}; use one of {list(KINDS)}.")
    return FILE_NAMES[kind]


def find_vocabulary(directory: str) -> tuple[str, str]:
    """``(kind, path)`` of the one vocabulary file in a model directory (by file name)."""
    present = [(kind, os.path.join(directory, name)) for kind, name in FILE_NAMES.items()
               if os.path.isfile(os.path.join(directory, name))]
    if len(present) == 1:
        return present[0]
    if present:
        raise VocabularyError(
            f"{directory} holds both {SENTENCEPIECE_FILE} (SentencePiece) and {WORDPIECE_FILE} "
            "(WordPiece); a model directory has one vocabulary: delete the file the model was "
            "not trained with.")
    raise VocabularyError(
        f"{directory} has no vocabulary: expected {SENTENCEPIECE_FILE} (SentencePiece) or "
        f"{WORDPIECE_FILE} (WordPiece); copy in the vocabulary the model was trained with "
        "(albert_tf.save_model_dir(..., vocab_file=...)) or pass its path explicitly.")


def file_sha256(path: str) -> str:
    """The sha256 of the file ``path`` (hex): what tells one vocabulary from another."""
    import hashlib
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_vocabulary(model_dir: str, vocab_file: str | None = None, *,
                     flag: str = "--vocab_file", vocab_type: str | None = None) -> str:
    """The vocabulary a model directory's model tokenizes with, checked without TensorFlow
    before the model loads (the exports, ``albert-tflite-metadata``): ``vocab_file`` (a file,
    or a directory holding one vocabulary, `find_vocabulary`), else the directory's own.

    A `VocabularyError` (one line) when there is none, when it is empty or not a vocabulary,
    when ``vocab_file`` is not the vocabulary the directory ships (another sha256: its
    embedding rows are that vocabulary's ids), or when its kind is not ``vocab_type`` (default:
    ``task.json``'s ``vocab_type``, when recorded).
    """
    shipped = None
    if any(os.path.isfile(os.path.join(model_dir, name)) for name in FILE_NAMES.values()):
        shipped = find_vocabulary(model_dir)[1]     # both kinds: its one line
    given = None
    if vocab_file:
        given = find_vocabulary(vocab_file)[1] if os.path.isdir(vocab_file) else vocab_file
        if not os.path.isfile(given):
            raise VocabularyError(f"{flag}={vocab_file}: no such file; pass the vocab.model or "
                                  "vocab.txt the model was trained with.")
    path = given or shipped
    if path is None:
        find_vocabulary(model_dir)                  # raises: names the files it looked for
    if vocab_type is None:
        vocab_type = _recorded_vocab_type(model_dir)
    kind = vocabulary_kind(path)                    # empty or not a vocabulary: one line
    shown = f"{flag}={vocab_file}" if given else path
    if given and shipped and file_sha256(given) != file_sha256(shipped):
        raise VocabularyError(
            f"{shown} ({kind}) is not the vocabulary the model was trained with, {shipped} "
            f"({vocabulary_kind(shipped)}, another sha256): its embeddings would get another "
            f"vocabulary's ids. Drop {flag} (the model directory's vocabulary is used), or pass "
            f"{flag}={shipped}.")
    if vocab_type in KINDS and kind != vocab_type:
        raise VocabularyError(
            f"{shown} is a {kind} vocabulary but the model in {model_dir} was trained with a "
            f"{vocab_type} one (task.json vocab_type); pass the {file_name(vocab_type)} it was "
            "trained with.")
    return path


def _recorded_vocab_type(model_dir: str) -> str | None:
    """``task.json``'s ``vocab_type`` in ``model_dir``, read as JSON (None: not recorded,
    or a task.json that others report on)."""
    try:
        with open(os.path.join(model_dir, "task.json"), encoding="utf-8") as f:
            value = json.load(f).get("vocab_type")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _is_text(data: bytes) -> bool:
    """UTF-8 without NUL bytes: a vocab.txt (a SentencePiece protobuf has NULs in its scores)."""
    if b"\x00" in data or not data.strip():
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _is_sentencepiece(data: bytes) -> bool:
    """A ``ModelProto`` with pieces. Parsed with protobuf first: sentencepiece's C++ side
    logs "Model is not initialized" to stderr, past every setting, for a proto without
    pieces (an empty file parses as one)."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2
    try:
        proto = model_pb2.ModelProto()
        proto.ParseFromString(data)
        if not proto.pieces:
            return False
    except Exception:  # noqa: BLE001  (protobuf's DecodeError, and any parse error)
        return False
    import sentencepiece as spm
    try:
        return spm.SentencePieceProcessor(model_proto=data).get_piece_size() > 0
    except (RuntimeError, OSError, TypeError):
        return False


def vocabulary_kind(path: str) -> str:
    """``sentencepiece`` or ``wordpiece``, read from the file's content (not its name)."""
    if not os.path.isfile(path):
        raise VocabularyError(f"vocabulary file not found: {path}")
    with open(path, "rb") as f:
        return data_kind(f.read(), path)


def data_kind(data: bytes, name: str = "the vocabulary") -> str:
    """``sentencepiece`` or ``wordpiece``: the kind of a vocabulary file's content ``data``."""
    if not data.strip():
        raise VocabularyError(f"{name} is empty{' (only whitespace)' if data else ''}: a "
                              "vocabulary is a SentencePiece model (vocab.model) or a "
                              "WordPiece vocab.txt; copy in the one the model was trained with.")
    if _is_text(data):
        return WORDPIECE
    if _is_sentencepiece(data):
        return SENTENCEPIECE
    raise VocabularyError(
        f"{name} is neither a SentencePiece model (a ModelProto, e.g. vocab.model) nor a "
        "WordPiece vocabulary (UTF-8 text, one token per line, e.g. vocab.txt).")


def kind_from_name(path: str) -> str:
    """The kind a vocabulary file's name says (``.txt``: WordPiece; ``.model``, ``.spm``:
    SentencePiece), for files found by name beside a checkpoint; else its content's kind."""
    extension = os.path.splitext(path)[1].lower()
    if extension == ".txt":
        return WORDPIECE
    if extension in (".model", ".spm"):
        return SENTENCEPIECE
    return vocabulary_kind(path)


def load_tokenizer(path: str, do_lower_case: bool = True):
    """The Python tokenizer for a vocabulary file, or for a model directory's vocabulary:
    `AlbertTokenizer` (SentencePiece) or `WordPieceTokenizer` (WordPiece)."""
    if os.path.isdir(path):
        path = find_vocabulary(path)[1]
    if vocabulary_kind(path) == SENTENCEPIECE:
        from albert_tf.text.tokenizer import AlbertTokenizer
        return AlbertTokenizer(path, do_lower_case=do_lower_case)
    from albert_tf.text.wordpiece import WordPieceTokenizer
    return WordPieceTokenizer(path, do_lower_case=do_lower_case)


def check_vocab_size(vocab_size: int, config_vocab_size: int, vocab_file: str = "") -> None:
    """Raises `VocabularyError` (one line) unless a tokenizer of ``vocab_size`` ids fits an
    embedding of ``config_vocab_size`` rows: equal, or rows padded to a multiple of 8 with
    fewer than `MAX_PADDED_ROWS` unused."""
    extra = config_vocab_size - vocab_size
    if extra == 0 or (0 < extra < MAX_PADDED_ROWS and config_vocab_size % 8 == 0):
        return
    which = f"the vocabulary {vocab_file}" if vocab_file else "the vocabulary"
    why = (f"its ids {config_vocab_size}..{vocab_size - 1} would index past the embedding"
           if extra < 0 else f"{extra} embedding rows would never be used")
    raise VocabularyError(
        f"{which} has {vocab_size} tokens but the model's vocab_size (config.json) is "
        f"{config_vocab_size}: {why}; use the vocabulary the model was trained with, or a "
        f"config with vocab_size={vocab_size}.")


def write_vocab_txt(tokens: Iterable[str], path: str) -> str:
    """Writes a WordPiece vocabulary, one token a line, to ``path`` atomically (a temporary
    file in the same directory, renamed into place): a crash leaves the previous file or
    none, never half of one."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = _new_file(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            for token in tokens:
                f.write(token + "\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def _new_file(path: str) -> tuple[int, str]:
    """A new hidden file beside ``path`` (``.<name>.tmp-<random>``), open for writing, with
    the umask's modes like any file a program creates (``tempfile.mkstemp``'s are 0600, which
    a server or a colleague running as another user cannot read); ``(fd, its path)``."""
    import secrets
    directory, name = os.path.split(os.path.abspath(path))
    while True:
        tmp = os.path.join(directory, f".{name}.tmp-{secrets.token_hex(4)}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def tokenizer_json_wordpiece(path: str) -> list[str] | None:
    """The WordPiece vocabulary (tokens in id order, added tokens included) of a Hugging
    Face ``tokenizer.json``, what transformers >= 5 saves instead of ``vocab.txt``;
    ``None`` when its model is not WordPiece."""
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
        model = values["model"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise VocabularyError(f"{path}: not a readable tokenizer.json ({e}).") from e
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        return None
    ids = dict(model.get("vocab") or {})
    ids.update({t["content"]: t["id"] for t in values.get("added_tokens") or ()})
    tokens = sorted(ids, key=ids.__getitem__)
    if [ids[t] for t in tokens] != list(range(len(tokens))):
        raise VocabularyError(f"{path}: the WordPiece ids are not 0..{len(tokens) - 1}, each "
                              "once; it cannot be written as a vocab.txt.")
    return tokens


def write_casing(directory: str, do_lower_case: bool) -> str:
    """Records a converted model's casing in ``<directory>/tokenizer_config.json``."""
    path = os.path.join(directory, CASING_FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": bool(do_lower_case)}, f, indent=2)
        f.write("\n")
    return path


def read_casing(directory: str) -> bool | None:
    """``do_lower_case`` from ``<directory>/tokenizer_config.json`` (Hugging Face's file or
    ours); ``None`` when the file or the key is absent."""
    path = os.path.join(directory, CASING_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError) as e:
        raise VocabularyError(f"{path}: not a readable JSON file ({e}).") from e
    value = values.get("do_lower_case") if isinstance(values, dict) else None
    if value is not None and not isinstance(value, bool):
        raise VocabularyError(f"{path}: do_lower_case must be true or false, got {value!r}.")
    return value


def wordpiece_is_uncased(vocab_txt: str) -> bool:
    """Whether a WordPiece vocabulary was built from lower-cased text: no token but the
    ``[BRACKETED]`` specials has an upper-case letter (BERT's uncased vocabularies)."""
    try:
        with open(vocab_txt, encoding="utf-8") as f:
            tokens = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise VocabularyError(f"{vocab_txt}: not a readable UTF-8 vocab.txt ({e}).") from e
    return not any(t != t.lower() for t in tokens if not (t.startswith("[") and t.endswith("]")))


__all__ = ["CASING_FILE", "FILE_NAMES", "HF_TOKENIZER_FILE", "KINDS", "SENTENCEPIECE",
           "SENTENCEPIECE_FILE", "VocabularyError", "WORDPIECE", "WORDPIECE_FILE",
           "WORDPIECE_SPECIAL_TOKENS", "check_vocab_size", "data_kind", "file_name",
           "file_sha256", "find_vocabulary", "kind_from_name", "load_tokenizer",
           "model_vocabulary", "read_casing",
           "tokenizer_json_wordpiece", "vocabulary_kind", "wordpiece_is_uncased",
           "write_casing", "write_vocab_txt"]


def pad_sentencepiece(vocab_file: str, size: int, output: str) -> str:
    """Writes ``vocab_file`` (a SentencePiece model) to ``output`` with ``<unused_N>`` pieces
    of type UNUSED appended up to ``size`` pieces: ids the tokenizer never emits, so a
    smaller vocabulary fits a model config of ``size`` embedding rows (the official configs'
    30000 / 30522, timed with random weights). Written atomically."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2
    model = model_pb2.ModelProto()
    with open(vocab_file, "rb") as f:
        model.ParseFromString(f.read())
    if len(model.pieces) > size:
        raise VocabularyError(f"{vocab_file} has {len(model.pieces)} pieces, more than the "
                              f"{size} to pad to; use a config with vocab_size >= "
                              f"{len(model.pieces)}.")
    existing = {piece.piece for piece in model.pieces}
    index = 0
    while len(model.pieces) < size:
        name = f"<unused_{index}>"
        index += 1
        if name not in existing:
            model.pieces.add(piece=name, score=0.0, type=model_pb2.ModelProto.SentencePiece.UNUSED)
    fd, tmp = _new_file(output)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model.SerializeToString())
        os.replace(tmp, output)
    except BaseException:
        os.unlink(tmp)
        raise
    return output
