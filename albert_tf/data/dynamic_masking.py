"""Pretraining batches straight from raw text, masked in the input pipeline (dynamic masking).

    ds = text_pretraining_dataset("corpus/*.txt", "official_configs/vocab/imdb_pydocs_8k.model",
                                  batch_size=64, config=PretrainingConfig(max_seq_length=128),
                                  seed=0)
    # the dict of `albert_tf.data.pretraining.pretraining_dataset`: input_word_ids,
    # input_mask, input_type_ids [B, S] int32; masked_lm_positions, masked_lm_ids [B, P]
    # int32, masked_lm_weights [B, P] float32; next_sentence_labels [B] int32

The input is what ``albert-tf-create-pretraining-data`` reads (one sentence or paragraph per
line, a blank line between documents; UTF-8, undecodable lines skipped), and the instances
follow its algorithm (`albert_tf.data.pretraining_data`), but every step runs as TensorFlow
ops inside a `tf.data` pipeline, and every epoch masks afresh (RoBERTa's dynamic masking)
instead of reading the ``dupe_factor`` fixed copies of the static TFRecords:

* documents: the lines between blank lines, read with `tf.data.TextLineDataset`;
* segments: each line cut into sentences by the rule of
  `albert_tf.data.documents.split_sentences` (as RE2 regex replacements: a second pass
  catches the splits the first pass's consumed look-ahead characters hid, so the cut points
  are the Python rule's), then tokenized by the project's in-graph tokenizer
  (`albert_tf.text.tf_tokenizer.AlbertTFTokenizer` for SentencePiece,
  `albert_tf.text.tf_wordpiece.WordPieceTFTokenizer` for WordPiece: the ids of the Python
  tokenizer); segments without tokens dropped;
* SOP pairs, as `InstanceMaker._from_document`: target length ``max_seq_length - 3`` (or,
  with probability ``short_seq_prob``, uniform in ``[2, max_seq_length - 3]``), segments
  accumulated into a chunk until the target (never leaving one segment alone at the end; a
  one-segment chunk takes the next segment), the chunk cut at a uniform segment boundary into
  A and B, swapped with probability 0.5 (``next_sentence_labels`` 1), truncated from the
  longer side, each removed token from the front or the back with probability 0.5 (the same
  final lengths, and a binomial number of front removals: the distribution of the one-token
  loop); packed by `tensorflow_text.combine_segments` into ``[CLS] A [SEP] B [SEP]``;
* MLM, as `InstanceMaker._mask`: whole words are the units (a piece that does not start a
  word joins the unit before it, `is_word_start` of the Python tokenizer, looked up per id);
  units are visited in a random order, each starts a span of ``n`` units, ``n <= ngram``
  drawn with weight ``1/n`` normalized over the ``n`` that fit before the sequence's end
  (``favor_shorter_ngram`` reverses the weights, as there), shortened while it would exceed
  the budget and skipped if it still does or overlaps a chosen span, until
  ``min(max_predictions_per_seq, max(1, round(len * masked_lm_prob)))`` tokens are chosen
  (``len`` counts [CLS] and the [SEP]s); each chosen token becomes [MASK] (80%), stays
  (10%) or becomes a random id of `replacement_ids` (10%: never a special or reserved
  token).

tensorflow-text's ``RandomItemSelector`` / ``MaskValuesChooser`` / ``mask_language_model``
are not used for the MLM step: the selector picks single items at an item rate (no n-gram
spans, no token budget), and both draw with stateful random ops (``tf.random.shuffle``,
``tf.random.uniform``), which are not reproducible inside a parallel `tf.data` map; the
chooser's random case draws from the whole vocabulary (control and unknown pieces
included). So span selection is a `tf.while_loop` over the shuffled units of each sequence
and the 80/10/10 choice uses stateless ops; ``tensorflow_text.combine_segments`` packs.

Randomness: every draw is a stateless op keyed by ``seed``, the epoch, the file's index in
the sorted input list and the document's index in its file (then the chunk or instance), so
an instance depends on those alone: not on the worker count, the parallelism or the order
work is done in; batches are then a function of the seed at a given worker count (the
instance shuffle buffer and the sharding depend on it). A new epoch re-chunks and re-masks
every document.

Sharding (``input_context``): with at least as many files as input pipelines, pipeline ``i``
reads files ``i, i + n, ...`` (of the sorted list); with fewer, every pipeline reads every
file and keeps every ``n``-th document. Training shuffles the file order each epoch (the
same order on every pipeline) and the instances through a ``shuffle_buffer``.

Differences from the static records: no ``dupe_factor`` (each epoch is a new copy),
``document_per_file`` is not supported, and the random streams differ (the same
distributions, not the same draws): the statistics match (tested), the bytes do not.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np

from albert_tf.backend import tf
from albert_tf.data import input_checks
from albert_tf.data.pretraining import PretrainingDataError
from albert_tf.data.pretraining_data import PretrainingConfig, replacement_ids

SOURCES = ("records", "text")
_CHECK_BYTES = 64 << 20       # the empty-corpus check stops after this much text


class TextDataError(PretrainingDataError):
    """Missing or unusable raw-text pretraining input (one line, naming the path)."""


# ----------------------------------------------------------------------------------------
# Files


def resolve_text_files(file_pattern) -> list[str]:
    """The files of comma-separated paths/globs (sorted per pattern, duplicates dropped);
    `TextDataError` for a pattern that matches no file."""
    patterns = file_pattern if isinstance(file_pattern, (list, tuple)) \
        else str(file_pattern or "").split(",")
    files: list[str] = []
    for pattern in patterns:
        pattern = str(pattern).strip()
        if not pattern:
            continue
        matches = sorted(m for m in tf.io.gfile.glob(pattern) if not tf.io.gfile.isdir(m))
        if not matches:
            raise TextDataError(input_checks.no_text_match(pattern, tf.io.gfile.isdir(pattern)))
        files.extend(m for m in matches if m not in files)
    if not files:
        raise TextDataError("no pretraining text files given (task.train_data.input_path)")
    return files


def check_corpus(files: list[str], split_sentences: bool = True,
                 max_bytes: int = _CHECK_BYTES) -> None:
    """`TextDataError` for a TFRecord or binary file among the first
    ``input_checks.HEAD_FILES`` (`input_checks.text_head_problem`), or unless some document
    has two segments (sentence-order prediction needs them). Reads (`tf.io.gfile`: local or
    object-store paths) until it finds one, at most ``max_bytes``: a corpus without any in
    its first ``max_bytes`` passes (the pipeline then only skips such documents)."""
    from albert_tf.data.documents import split_sentences as split
    for path in files[:input_checks.HEAD_FILES]:
        try:
            with tf.io.gfile.GFile(path, "rb") as f:
                head = f.read(input_checks.HEAD_BYTES)
        except (tf.errors.OpError, OSError) as e:
            raise TextDataError(f"pretraining text {path!r} cannot be read: "
                                f"{getattr(e, 'message', None) or e}") from None
        problem = input_checks.text_head_problem(path, head)
        if problem:
            raise TextDataError(problem)
    seen = 0
    for path in files:
        segments = 0
        with tf.io.gfile.GFile(path, "rb") as f:
            for raw in f:
                seen += len(raw)
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError:
                    continue
                if not line:
                    segments = 0
                    continue
                segments += len(split(line)) if split_sentences else 1
                if segments >= 2 or seen > max_bytes:
                    return
    raise TextDataError(
        f"no document with two sentences in {len(files)} pretraining text file(s) "
        f"({files[0]}{' ...' if len(files) > 1 else ''}): an empty corpus, or not the "
        "format (one sentence per line, a blank line between documents)")


# ----------------------------------------------------------------------------------------
# Sentence split (albert_tf.data.documents.split_sentences) as RE2 replacements


@functools.cache
def _whitespace_class() -> str:
    """Python's ``\\s`` (``str.isspace``) as an RE2 character class."""
    cps = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    return "[" + "".join(f"\\x{{{c:x}}}" for c in cps) + "]"


@functools.cache
def _sentence_patterns() -> tuple[str, str]:
    ws = _whitespace_class()
    closers = "[\"'\\x{201d}\\x{2019})\\]]*"
    opener = "[\"'\\x{201c}\\x{2018}(\\[]?"
    pattern = (f"([.!?]){closers}{ws}+({opener}[A-Z0-9])"     # "end. Next", closers dropped
               r"|([a-z)][.!?])([A-Z][a-z])")                   # "film.So"
    return pattern, "\\1\\3\n\\2\\4"


def split_sentences_tf(lines: tf.Tensor) -> tf.Tensor:
    """The sentences ``[M]`` of lines ``[L]`` (string), as
    `albert_tf.data.documents.split_sentences` cuts each line (whitespace at the cuts
    dropped; pieces that are only whitespace are left for the tokenizer to empty)."""
    pattern, rewrite = _sentence_patterns()
    text = tf.strings.regex_replace(lines, pattern, rewrite)
    # A match's consumed look-ahead ("Bc" of "a.Bc.De") hides an overlapping split from
    # the same pass; the second pass finds it and leaves the made cuts as they are.
    text = tf.strings.regex_replace(text, pattern, rewrite)
    return tf.strings.split(text, "\n").flat_values


# ----------------------------------------------------------------------------------------
# The masker


def _tf_tokenizer(vocab_file: str, do_lower_case: bool, max_seq_length: int):
    from albert_tf.text import vocabulary
    if vocabulary.vocabulary_kind(vocab_file) == vocabulary.WORDPIECE:
        from albert_tf.text.tf_wordpiece import WordPieceTFTokenizer
        return WordPieceTFTokenizer(vocab_file, do_lower_case, max_seq_length=max_seq_length)
    from albert_tf.text.tf_tokenizer import AlbertTFTokenizer
    return AlbertTFTokenizer(vocab_file, do_lower_case, max_seq_length=max_seq_length)


class DynamicMasker:
    """Documents (string lines) -> masked SOP instances, as TensorFlow ops (see the module
    docstring). ``vocab_file``: a SentencePiece model or a WordPiece ``vocab.txt``, or a model
    directory holding one."""

    def __init__(self, vocab_file: str, config: PretrainingConfig | None = None,
                 do_lower_case: bool | None = None):
        from albert_tf.text.vocabulary import find_vocabulary, load_tokenizer
        self.config = cfg = config or PretrainingConfig()
        cfg.validate()
        if os.path.isdir(vocab_file):
            vocab_file = find_vocabulary(vocab_file)[1]
        lower = cfg.do_lower_case if do_lower_case is None else do_lower_case
        py = load_tokenizer(vocab_file, do_lower_case=lower)
        self.py_tokenizer = py
        self.tokenizer = _tf_tokenizer(vocab_file, lower, cfg.max_seq_length)
        self.cls_id, self.sep_id, self.mask_id = py.cls_id, py.sep_id, py.mask_id
        self.vocab_size = py.vocab_size
        tokens = py.convert_ids_to_tokens(range(py.vocab_size))
        self._is_start = tf.constant([bool(py.is_word_start(t)) for t in tokens])
        self._random_ids = tf.constant(replacement_ids(py), tf.int32)
        weights = 1.0 / np.arange(1, cfg.ngram + 1)
        if cfg.favor_shorter_ngram:
            weights = weights[::-1]
        cum = np.ones([cfg.ngram, cfg.ngram], np.float32)      # row k-1: n <= k allowed
        for k in range(1, cfg.ngram + 1):
            cum[k - 1, :k] = np.cumsum(weights[:k] / weights[:k].sum())
            cum[k - 1, k - 1] = 1.0
        self._ngram_cum = tf.constant(cum)
        # Traced once per masker: every dataset built on it (each input pipeline, each
        # split) calls the same graph functions instead of tracing the tokenizer again.
        seq = cfg.max_seq_length
        instance_spec = {"input_word_ids": tf.TensorSpec([seq], tf.int32),
                         "input_type_ids": tf.TensorSpec([seq], tf.int32),
                         "length": tf.TensorSpec([], tf.int32),
                         "next_sentence_labels": tf.TensorSpec([], tf.int32),
                         "key": tf.TensorSpec([2], tf.int64)}
        self.instances_fn = tf.function(
            self.instances, autograph=False,
            input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([2], tf.int64)])
        self.mask_fn = {stats: tf.function(functools.partial(self.mask, with_stats=stats),
                                           autograph=False, input_signature=[instance_spec])
                        for stats in (False, True)}

    # -- documents -> segments ------------------------------------------------------------

    def segments(self, lines: tf.Tensor) -> tf.RaggedTensor:
        """Token ids ``[N, (T)]`` of a document's lines ``[L]``: `InstanceMaker.segments`."""
        parts = split_sentences_tf(lines) if self.config.split_sentences else lines
        ids = self.tokenizer.tokenize(parts)
        keep = ids.row_lengths() > 0
        return tf.ragged.boolean_mask(ids, keep)

    # -- segments -> SOP pairs ------------------------------------------------------------

    def _chunk_ends(self, lengths: tf.Tensor, target: tf.Tensor) -> tf.Tensor:
        """``emit[i]``: a chunk closes after segment ``i`` (the loop of
        `InstanceMaker._from_document`)."""
        n = tf.size(lengths)

        def body(i, start, length, emit):
            length = length + lengths[i]
            close = tf.equal(i, n - 1) | ((length >= target) & tf.not_equal(i, n - 2))
            out = close & (i > start)
            emit = emit.write(i, out)
            return (i + 1, tf.where(out, i + 1, start), tf.where(out, 0, length), emit)

        _, _, _, emit = tf.while_loop(
            lambda i, *_: i < n, body,
            (tf.constant(0), tf.constant(0), tf.constant(0),
             tf.TensorArray(tf.bool, size=n, element_shape=[])))
        return emit.stack()

    def instances(self, lines: tf.Tensor, key: tf.Tensor) -> dict:
        """The instances of one document (``lines [L]``, stateless seed ``key [2]``), packed
        to ``max_seq_length``: ``input_word_ids``, ``input_type_ids`` [C, S],
        ``length``, ``next_sentence_labels`` [C], ``key`` [C, 2] (each instance's masking
        seed)."""
        cfg = self.config
        seq = cfg.max_seq_length
        budget = seq - 3
        segments = self.segments(lines)
        lengths = tf.cast(segments.row_lengths(), tf.int32)
        splits = tf.cast(segments.row_splits, tf.int32)
        flat = segments.flat_values
        keys = tf.random.experimental.stateless_split(key, 3)
        u = tf.random.stateless_uniform([2], keys[0])
        short = tf.cast(2 + tf.floor(u[1] * tf.cast(budget - 1, tf.float32)), tf.int32)
        target = tf.where(u[0] < cfg.short_seq_prob, tf.minimum(short, budget), budget)
        emit = self._chunk_ends(lengths, target)
        ends = tf.cast(tf.where(emit)[:, 0], tf.int32) + 1           # [C] exclusive
        starts = tf.concat([[0], ends[:-1]], 0)
        num = tf.size(ends)
        r = tf.random.stateless_uniform([num, 2], keys[1])
        sizes = ends - starts
        cut = starts + 1 + tf.minimum(
            tf.cast(tf.floor(r[:, 0] * tf.cast(sizes - 1, tf.float32)), tf.int32), sizes - 2)
        swapped = r[:, 1] < 0.5
        t0, tm, t1 = tf.gather(splits, starts), tf.gather(splits, cut), tf.gather(splits, ends)
        a0, a1 = tf.where(swapped, tm, t0), tf.where(swapped, t1, tm)
        b0, b1 = tf.where(swapped, t0, tm), tf.where(swapped, tm, t1)
        len_a, len_b = a1 - a0, b1 - b0
        # The one-token loop's final lengths (the longer side loses; ties cut B first) ...
        fits = len_a + len_b <= budget
        a_long = (len_a > len_b) & (2 * len_b <= budget)
        b_long = (len_a <= len_b) & (2 * len_a <= budget)
        new_a = tf.where(fits | b_long, len_a,
                         tf.where(a_long, budget - len_b, (budget + 1) // 2))
        new_b = tf.where(fits | a_long, len_b, tf.where(b_long, budget - len_a, budget // 2))
        # ... and each removed token from the front with probability 0.5.
        front = tf.cast(tf.random.stateless_binomial(
            [2, num], keys[2], tf.cast(tf.stack([len_a - new_a, len_b - new_b]), tf.float32),
            0.5, output_dtype=tf.int32), tf.int32)
        a0, b0 = a0 + front[0], b0 + front[1]
        ids_a = tf.gather(flat, tf.ragged.range(a0, a0 + new_a))
        ids_b = tf.gather(flat, tf.ragged.range(b0, b0 + new_b))
        import tensorflow_text as tf_text
        word_ids, type_ids = tf_text.combine_segments(
            [ids_a, ids_b], start_of_sequence_id=self.cls_id, end_of_segment_id=self.sep_id)
        shape = tf.stack([num, seq])
        return {
            "input_word_ids": tf.cast(word_ids, tf.int32).to_tensor(0, shape=shape),
            "input_type_ids": tf.cast(type_ids, tf.int32).to_tensor(0, shape=shape),
            "length": new_a + new_b + 3,
            "next_sentence_labels": tf.cast(swapped, tf.int32),
            "key": tf.cast(tf.random.experimental.stateless_split(
                tf.random.experimental.stateless_fold_in(key, 1), tf.maximum(num, 1))[:num],
                tf.int64),
        }

    # -- one instance -> masked model inputs ----------------------------------------------

    def mask(self, instance: dict, with_stats: bool = False) -> dict:
        """Model inputs of one packed instance (`instances` row): n-gram whole-word MLM."""
        cfg = self.config
        seq, max_pred = cfg.max_seq_length, cfg.max_predictions_per_seq
        ids = tf.ensure_shape(instance["input_word_ids"], [seq])
        length = instance["length"]
        key = instance["key"]
        pos = tf.range(seq)
        valid = pos < length
        nonspecial = valid & tf.not_equal(ids, self.cls_id) & tf.not_equal(ids, self.sep_id)
        first = nonspecial & tf.equal(tf.cumsum(tf.cast(nonspecial, tf.int32),
                                                exclusive=True), 0)
        if cfg.do_whole_word_mask:
            new_unit = nonspecial & (tf.gather(self._is_start, ids) | first)
        else:
            new_unit = nonspecial
        unit = tf.cumsum(tf.cast(new_unit, tf.int32)) - 1              # unit of each position
        units = tf.reduce_sum(tf.cast(new_unit, tf.int32))
        unit_size = tf.math.unsorted_segment_sum(
            tf.cast(nonspecial, tf.int32), tf.where(nonspecial, unit, units), units + 1)[:-1]
        cum_size = tf.concat([[0], tf.cumsum(unit_size)], 0)          # [U + 1]
        if cfg.masked_lm_prob > 0:
            goal = tf.minimum(max_pred, tf.maximum(1, tf.cast(tf.round(
                tf.cast(length, tf.float64) * cfg.masked_lm_prob), tf.int32)))
        else:
            goal = tf.constant(0)
        keys = tf.random.experimental.stateless_split(key, 3)
        order = tf.argsort(tf.random.stateless_uniform([units], keys[0]))
        draws = tf.random.stateless_uniform([units], keys[1])
        ngram = cfg.ngram
        span_range = tf.range(1, ngram + 1)

        def body(j, masked, covered, spans):
            s = order[j]
            k = tf.minimum(ngram, units - s)
            cum = self._ngram_cum[k - 1]
            n = tf.minimum(1 + tf.reduce_sum(tf.cast(draws[j] >= cum[:-1], tf.int32)), k)
            tokens = tf.gather(cum_size, tf.minimum(s + span_range, units)) - cum_size[s]
            fits = (span_range <= n) & (masked + tokens <= goal)
            n = tf.maximum(tf.reduce_max(tf.where(fits, span_range, 0)), 1)
            count = tokens[n - 1]
            in_span = (tf.range(units) >= s) & (tf.range(units) < s + n)
            take = (masked + count <= goal) & ~tf.reduce_any(covered & in_span)
            covered = tf.where(take, covered | in_span, covered)
            spans = tf.where(take & tf.equal(span_range, n), spans + 1, spans)
            return j + 1, tf.where(take, masked + count, masked), covered, spans

        _, _, covered, spans = tf.while_loop(
            lambda j, masked, *_: (j < units) & (masked < goal), body,
            (tf.constant(0), tf.constant(0), tf.zeros([units], tf.bool),
             tf.zeros([ngram], tf.int32)))
        chosen = nonspecial & tf.gather(tf.concat([covered, [False]], 0),
                                        tf.where(nonspecial, unit, units))
        positions = tf.cast(tf.where(chosen)[:, 0], tf.int32)         # sorted
        labels = tf.gather(ids, positions)
        u = tf.random.stateless_uniform([seq, 3], keys[2])
        random_ids = tf.gather(self._random_ids, tf.minimum(
            tf.cast(u[:, 2] * tf.cast(tf.size(self._random_ids), tf.float32), tf.int32),
            tf.size(self._random_ids) - 1))
        replaced = tf.where(u[:, 0] < 0.8, self.mask_id,
                            tf.where(u[:, 1] < 0.5, ids, random_ids))
        word_ids = tf.where(chosen, replaced, ids)
        m = tf.size(positions)
        pad = [[0, max_pred - m]]
        out = {
            "input_word_ids": word_ids,
            "input_mask": tf.cast(valid, tf.int32),
            "input_type_ids": tf.ensure_shape(instance["input_type_ids"], [seq]),
            "masked_lm_positions": tf.ensure_shape(tf.pad(positions, pad), [max_pred]),
            "masked_lm_ids": tf.ensure_shape(tf.pad(labels, pad), [max_pred]),
            "masked_lm_weights": tf.ensure_shape(tf.pad(tf.ones([m], tf.float32), pad),
                                                 [max_pred]),
            "next_sentence_labels": instance["next_sentence_labels"],
        }
        if with_stats:
            out["span_counts"] = spans
        return out


# ----------------------------------------------------------------------------------------
# The pipeline


def _blank_pattern() -> str:
    return _whitespace_class() + "*"


def text_documents(files: list[str], seed: int = 0, is_training: bool = True,
                   input_context: tf.distribute.InputContext | None = None,
                   num_epochs: int | None = None, cycle_length: int = 8) -> tf.data.Dataset:
    """Documents of this input pipeline: dicts ``lines`` [L] string, ``file`` (index in
    ``files``), ``document`` (index in its file), ``epoch`` (int64). Repeats when training
    (``num_epochs`` None) with the file order shuffled per epoch."""
    n_files = len(files)
    n, i = 1, 0
    if input_context is not None:
        n, i = input_context.num_input_pipelines, input_context.input_pipeline_id
    shard_files = n > 1 and n_files >= n
    indices = list(range(n_files))[i::n] if shard_files else list(range(n_files))
    paths = tf.constant([files[k] for k in indices])
    indices = tf.constant(indices, tf.int64)
    blank = _blank_pattern()
    base = tf.constant([seed, 0x5EED], tf.int64)

    def read(file_index, path):
        lines = tf.data.TextLineDataset(path).concatenate(
            tf.data.Dataset.from_tensors(tf.constant("")))
        lines = lines.filter(lambda line: tf.equal(tf.strings.unicode_transcode(
            line, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD), line))

        def step(state, line):
            is_blank = tf.strings.regex_full_match(line, blank)
            done = is_blank & (tf.size(state) > 0)
            new = tf.cond(is_blank, lambda: tf.zeros([0], tf.string),
                          lambda: tf.concat([state, tf.reshape(line, [1])], 0))
            return new, (done, state)

        docs = lines.scan(tf.zeros([0], tf.string), step)
        docs = docs.filter(lambda done, _: done).enumerate()
        return docs.map(lambda k, d: {"lines": d[1], "file": file_index, "document": k})

    def epoch(e):
        ds = tf.data.Dataset.from_tensor_slices((indices, paths))
        if is_training:
            perm = tf.argsort(tf.random.stateless_uniform(
                tf.shape(indices), tf.random.experimental.stateless_fold_in(base, e)))
            ds = tf.data.Dataset.from_tensor_slices((tf.gather(indices, perm),
                                                     tf.gather(paths, perm)))
        ds = ds.interleave(read, cycle_length=max(1, min(len(files), cycle_length)),
                           num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if n > 1 and not shard_files:
            ds = ds.shard(n, i)
        return ds.map(lambda d: {**d, "epoch": e})

    epochs = tf.data.Dataset.counter() if is_training and num_epochs is None \
        else tf.data.Dataset.range(num_epochs or 1)
    return epochs.flat_map(epoch)


def document_key(seed: int, epoch, file_index, document) -> tf.Tensor:
    """The stateless seed of one document's instances in one epoch."""
    fold = tf.random.experimental.stateless_fold_in
    key = tf.constant([seed, 0xD0C], tf.int64)
    return fold(fold(fold(key, epoch), file_index), document)


def text_pretraining_dataset(file_pattern, vocab_file: str, batch_size: int,
                             config: PretrainingConfig | None = None,
                             do_lower_case: bool | None = None, is_training: bool = True,
                             seed: int = 0,
                             input_context: tf.distribute.InputContext | None = None,
                             shuffle_buffer: int = 10_000, num_epochs: int | None = None,
                             with_stats: bool = False, check: bool = True,
                             masker: DynamicMasker | None = None, data_service: str = "",
                             data_service_job_name: str = "") -> tf.data.Dataset:
    """Batches of pretraining inputs from raw text (the module docstring); ``batch_size``
    is global (per pipeline: ``input_context.get_per_replica_batch_size``). Repeats when
    training (``num_epochs`` None), each epoch masked afresh. ``with_stats`` adds
    ``span_counts [B, ngram]`` (masked spans of each length). ``check``: fail early, one
    line, for no files or an empty corpus (`TextDataError`). ``data_service``: a tf.data
    service dispatcher (``grpc://host:port``) that runs the pipeline up to the batches
    (`albert_tf.data.data_service`: no sharding by ``input_context`` then, one shared job
    ``data_service_job_name``)."""
    files = resolve_text_files(file_pattern)
    config = config or PretrainingConfig()
    if check:
        check_corpus(files, config.split_sentences)
        n = input_context.num_input_pipelines if input_context is not None else 1
        if 1 < n <= len(files):       # this pipeline's own files must have instances too
            check_corpus(files[input_context.input_pipeline_id::n], config.split_sentences)
    masker = masker or DynamicMasker(vocab_file, config, do_lower_case)
    per_replica = batch_size
    if input_context is not None:
        per_replica = input_context.get_per_replica_batch_size(batch_size)
        if data_service:          # the service's job is shared, not sharded per trainer
            input_context = None
    ds = text_documents(files, seed, is_training, input_context, num_epochs)

    def make(doc):
        key = document_key(seed, doc["epoch"], doc["file"], doc["document"])
        return masker.instances_fn(doc["lines"], key)

    ds = ds.map(make, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()
    ds = ds.map(masker.mask_fn[bool(with_stats)], num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True)
    if is_training and shuffle_buffer > 1:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(per_replica, drop_remainder=is_training)
    options = tf.data.Options()
    options.deterministic = True
    ds = ds.with_options(options)
    if data_service:
        from albert_tf.data import data_service as service
        ds = service.apply(ds, data_service, data_service_job_name)
    return ds.prefetch(tf.data.AUTOTUNE)


__all__ = [
    "SOURCES",
    "DynamicMasker",
    "TextDataError",
    "check_corpus",
    "document_key",
    "resolve_text_files",
    "split_sentences_tf",
    "text_documents",
    "text_pretraining_dataset",
]
