"""Creating ALBERT pretraining data (masked LM + sentence-order prediction), streaming.

The algorithm follows ``create_pretraining_data.py`` of google-research/albert:

* every document is tokenized into segments (sentences); segments are accumulated into a
  chunk until it reaches the target length (``max_seq_length - 3``, or with probability
  ``short_seq_prob`` a random length in ``[2, max_seq_length - 3]``); the chunk is cut at a
  random segment boundary into ``A`` and ``B``;
* sentence order: with probability 0.5 ``A`` and ``B`` are swapped (label 1). Both always come
  from the same document: a chunk of one segment takes the next segment as well, and a
  single segment left at the end of a document is dropped (counted), instead of the original's
  random-document fallback;
* the pair is truncated one token at a time from the longer side, from the front or the back
  at random;
* n-gram masking: whole words are the units (a piece that does not start a word joins the
  previous one; the tokenizer's ``is_word_start`` says which do: for SentencePiece the
  original rule, `AlbertTokenizer.is_word_start`; for WordPiece every piece but the ``##``
  continuations, so a word is a piece and the ``##`` pieces after it); spans of ``n``
  units, ``n`` drawn with weight ``1/n`` for ``n <= ngram``, are masked until
  ``round(len * masked_lm_prob)`` (at most ``max_predictions_per_seq``) tokens are chosen;
  each chosen token becomes ``[MASK]`` (80%), itself (10%) or a random piece (10%;
  `replacement_ids`: never a special or reserved token);
* ``token_boundary`` marks word-start pieces (and ``[CLS]``/``[SEP]``).

Unlike the original, which holds the whole corpus and every instance in memory, documents
are read one at a time and instances pass through a bounded shuffle buffer on their way to
the TFRecord files; ``dupe_factor`` copies of each document (different target lengths, cut
points and masks) are made right after tokenizing it.

Shards: a first, cheap reading pass (`plan_shards`, no tokenizing) splits the input into
``num_shards`` contiguous runs of whole documents of about equal bytes; shard ``s`` holds
the documents that start in the ``s``-th 1/``num_shards`` of the concatenated input files.
Each shard is written on its own, by the process (with ``num_workers > 1``, one of the worker
processes, which take shards one at a time from a queue) that reads just its part of the
input (`region_documents`, a seek to its first document), through its own shuffle buffer
of ``shuffle_buffer`` instances.

Determinism: each document's instances come from its own random stream, seeded by
``random_seed`` and the document's index in the input (`document_rng`), and each shard's
shuffle from one seeded by ``random_seed`` and the shard's index (`shuffle_rng`); records are
serialized with sorted feature keys. So every output file is a function of the input files'
contents, the vocabulary (either kind, `albert_tf.text.vocabulary.load_tokenizer`) and the
flags, byte for byte, whatever ``num_workers`` and whichever worker writes which shard
(``num_shards`` counts; its default is ``num_workers``, so give it explicitly when the
worker count may change). ``num_shards=1`` with any ``num_workers`` writes
the same file as one process.

Restarting: a shard is written to a hidden partial file (``.NAME.tmp-PID``), synced and
renamed to its name only when complete, and then gets a completion record
(``.NAME.done.json``: records, bytes, sha256, the per-shard statistics, and a fingerprint of
the flags (not ``num_workers``), the inputs' and vocabulary's sha256, the data format and
package version). A run first removes partial files left by a killed one and keeps every
shard whose completion record has the current fingerprint and whose file still has the
recorded size and sha256; it (re)writes the others (``invalidated_shards`` in the summary says
why, e.g. which flag changed). Shards of an earlier run with another ``num_shards``
(``OUTPUT-00000-of-00002`` when ``OUTPUT`` is written now, and the reverse) are removed once
the new output is complete when albert-tf wrote them (their completion record, or the lock:
``removed_stale_outputs``): a glob of the output would read every record twice; other files
of those names are left alone (``stale_outputs``). Killing a run at any moment and running
the same command again therefore gives exactly the files of an uninterrupted run; workers
die with their parent (Linux), and a lock (``.OUTPUT.lock``) stops two runs writing one
output. The reader
(`albert_tf.data.pretraining`) skips the bookkeeping files and checks each shard against its
completion record.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import sys
import time

import numpy as np

from albert_tf.data.documents import ReadStats, input_size, resolve_inputs, split_sentences
from albert_tf.data.pretraining_shards import (DATA_FORMAT, CreationError, ShardPlan,
                                               ShardWriter, check_finished, check_output_files,
                                               completion_record_path, creation_fingerprint,
                                               fingerprint_key, is_bookkeeping_file, lock_path,
                                               output_lock, plan_shards, region_documents,
                                               remove_partial_files, remove_stale_outputs,
                                               shard_paths, shuffle_rng, stale_outputs,
                                               write_json_atomic)


@dataclasses.dataclass
class PretrainingConfig:
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    dupe_factor: int = 40
    short_seq_prob: float = 0.1
    ngram: int = 3
    random_seed: int = 12345
    do_lower_case: bool = True
    do_whole_word_mask: bool = True
    favor_shorter_ngram: bool = False
    split_sentences: bool = True
    document_per_file: bool = False
    shuffle_buffer: int = 10_000

    def validate(self) -> None:
        if self.max_seq_length < 5:
            raise ValueError(f"max_seq_length must be >= 5, got {self.max_seq_length}")
        if not 0.0 <= self.masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob must be in [0, 1), got {self.masked_lm_prob}")
        if self.ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {self.ngram}")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor must be >= 1, got {self.dupe_factor}")
        if self.max_predictions_per_seq < 1:
            raise ValueError("max_predictions_per_seq must be >= 1")


@dataclasses.dataclass
class Instance:
    input_ids: list[int]
    segment_ids: list[int]
    token_boundary: list[int]
    masked_lm_positions: list[int]
    masked_lm_ids: list[int]
    next_sentence_label: int
    document: int = -1


@dataclasses.dataclass
class CreationStats:
    one_segment_documents: int = 0
    unpaired_segments: int = 0
    instances: int = 0
    swapped: int = 0
    tokens: int = 0            # non-special tokens in the instances
    masked: int = 0
    truncated_tokens: int = 0
    span_lengths: dict = dataclasses.field(default_factory=dict)

    def merge(self, other: "CreationStats") -> None:
        for f in dataclasses.fields(self):
            if f.name == "span_lengths":
                for k, v in other.span_lengths.items():
                    self.span_lengths[k] = self.span_lengths.get(k, 0) + v
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def _is_reserved(token: str) -> bool:
    """A WordPiece token in brackets: the specials and BERT's ``[unusedN]`` slots."""
    return len(token) > 2 and token.startswith("[") and token.endswith("]")


def replacement_ids(tokenizer) -> list[int]:
    """The ids a masked position may become in the random-piece case: every id but the
    control, unknown and unused pieces (SentencePiece) or the special and ``[reserved]``
    tokens (WordPiece)."""
    sp = getattr(tokenizer, "sp_model", None)
    if sp is not None:
        return [i for i in range(tokenizer.vocab_size)
                if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i))]
    special = {tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
               tokenizer.mask_id}
    tokens = tokenizer.convert_ids_to_tokens(range(tokenizer.vocab_size))
    return [i for i, t in enumerate(tokens) if i not in special and not _is_reserved(t)]


class InstanceMaker:
    """Documents (lists of raw lines) -> training instances, for one worker; ``tokenizer``:
    `AlbertTokenizer` or `WordPieceTokenizer` (`albert_tf.text.vocabulary.load_tokenizer`)."""

    def __init__(self, tokenizer, config: PretrainingConfig, seed: int):
        self.tok = tokenizer
        self.cfg = config
        self.seed = seed
        self.rng = random.Random(seed)
        self.stats = CreationStats()
        vocab = tokenizer.convert_ids_to_tokens(range(tokenizer.vocab_size))
        self.is_start = [tokenizer.is_word_start(p) for p in vocab]
        self.random_ids = replacement_ids(tokenizer)
        ngrams = np.arange(1, config.ngram + 1)
        pvals = 1.0 / ngrams
        if config.favor_shorter_ngram:
            pvals = pvals[::-1]
        self.ngram_weights = [list(np.cumsum(pvals[:k] / pvals[:k].sum()))
                              for k in range(1, config.ngram + 1)]

    # -- segments ------------------------------------------------------------------------

    def segments(self, lines: list[str]) -> list[list[int]]:
        out = []
        for line in lines:
            parts = split_sentences(line) if self.cfg.split_sentences else [line]
            for part in parts:
                ids = self.tok.encode(part)
                if ids:
                    out.append(ids)
        return out

    # -- instances -----------------------------------------------------------------------

    def instances(self, lines: list[str], doc_index: int = -1) -> list[Instance]:
        """The instances of one document. With ``doc_index >= 0`` (its position in the
        input) they depend only on the seed, the document and its index, not on the
        documents before it or on which worker makes them (`document_rng`)."""
        if doc_index >= 0:
            self.rng = document_rng(self.seed, doc_index)
        segments = self.segments(lines)
        if len(segments) < 2:
            self.stats.one_segment_documents += 1
            return []
        out = []
        for _ in range(self.cfg.dupe_factor):
            out.extend(self._from_document(segments, doc_index))
        return out

    def _from_document(self, document: list[list[int]], doc_index: int) -> list[Instance]:
        cfg, rng = self.cfg, self.rng
        max_num_tokens = cfg.max_seq_length - 3
        target = max_num_tokens
        if rng.random() < cfg.short_seq_prob:
            target = rng.randint(2, max_num_tokens)
        out = []
        chunk: list[list[int]] = []
        length = 0
        i = 0
        while i < len(document):
            chunk.append(document[i])
            length += len(document[i])
            # Never close a chunk just before the last segment: it would be left alone.
            if i == len(document) - 1 or (length >= target and i != len(document) - 2):
                if len(chunk) == 1:
                    if i < len(document) - 1:
                        i += 1          # a pair needs two segments: take the next one too
                        continue
                    self.stats.unpaired_segments += 1
                    break
                a_end = rng.randint(1, len(chunk) - 1)
                tokens_a = [t for seg in chunk[:a_end] for t in seg]
                tokens_b = [t for seg in chunk[a_end:] for t in seg]
                swapped = rng.random() < 0.5
                if swapped:
                    tokens_a, tokens_b = tokens_b, tokens_a
                before = len(tokens_a) + len(tokens_b)
                self._truncate(tokens_a, tokens_b, max_num_tokens)
                self.stats.truncated_tokens += before - len(tokens_a) - len(tokens_b)
                out.append(self._instance(tokens_a, tokens_b, int(swapped), doc_index))
                chunk, length = [], 0
            i += 1
        return out

    def _truncate(self, tokens_a: list[int], tokens_b: list[int], max_num_tokens: int) -> None:
        while len(tokens_a) + len(tokens_b) > max_num_tokens:
            trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
            if self.rng.random() < 0.5:
                del trunc[0]
            else:
                trunc.pop()

    def _instance(self, tokens_a, tokens_b, label, doc_index) -> Instance:
        cls, sep = self.tok.cls_id, self.tok.sep_id
        ids = [cls] + tokens_a + [sep] + tokens_b + [sep]
        segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
        ids, positions, labels, boundary = self._mask(ids)
        st = self.stats
        st.instances += 1
        st.swapped += label
        st.tokens += len(tokens_a) + len(tokens_b)
        st.masked += len(positions)
        return Instance(ids, segment_ids, boundary, positions, labels, label, doc_index)

    def _draw_n(self, k: int) -> int:
        cum = self.ngram_weights[k - 1]
        r = self.rng.random()
        for n, c in enumerate(cum, 1):
            if r < c:
                return n
        return k

    def _mask(self, tokens: list[int]):
        cfg, rng = self.cfg, self.rng
        special = (self.tok.cls_id, self.tok.sep_id)
        cand: list[list[int]] = []
        boundary = [0] * len(tokens)
        for i, t in enumerate(tokens):
            if t in special:
                boundary[i] = 1
                continue
            start = self.is_start[t]
            if cfg.do_whole_word_mask and cand and not start:
                cand[-1].append(i)
            else:
                cand.append([i])
                if start:
                    boundary[i] = 1
        output = list(tokens)
        if cfg.masked_lm_prob == 0:
            return output, [], [], boundary
        num_to_predict = min(cfg.max_predictions_per_seq,
                             max(1, int(round(len(tokens) * cfg.masked_lm_prob))))
        starts = list(range(len(cand)))
        rng.shuffle(starts)
        covered: set[int] = set()
        masked: list[tuple[int, int]] = []
        spans = self.stats.span_lengths
        for s in starts:
            if len(masked) >= num_to_predict:
                break
            k = min(cfg.ngram, len(cand) - s)
            n = self._draw_n(k)
            index_set = [i for unit in cand[s:s + n] for i in unit]
            # Shorter n-grams when the chosen one would exceed the budget.
            while len(masked) + len(index_set) > num_to_predict and n > 1:
                n -= 1
                index_set = [i for unit in cand[s:s + n] for i in unit]
            if len(masked) + len(index_set) > num_to_predict:
                continue
            if any(i in covered for i in index_set):
                continue
            spans[n] = spans.get(n, 0) + 1
            for i in index_set:
                covered.add(i)
                if rng.random() < 0.8:
                    output[i] = self.tok.mask_id
                elif rng.random() < 0.5:
                    pass
                else:
                    output[i] = self.random_ids[rng.randint(0, len(self.random_ids) - 1)]
                masked.append((i, tokens[i]))
        masked.sort()
        return output, [p for p, _ in masked], [t for _, t in masked], boundary


# ----------------------------------------------------------------------------------------
# Serialization


def instance_to_example_bytes(inst: Instance, max_seq_length: int,
                              max_predictions_per_seq: int) -> bytes:
    """The original feature layout: int64 ``input_ids``, ``input_mask``, ``segment_ids``,
    ``token_boundary`` [S]; ``masked_lm_positions``, ``masked_lm_ids`` [P]; float
    ``masked_lm_weights`` [P]; ``next_sentence_labels`` [1] (1 = segments swapped)."""
    from albert_tf.backend import tf
    pad = [0] * (max_seq_length - len(inst.input_ids))
    mpad = [0] * (max_predictions_per_seq - len(inst.masked_lm_positions))
    example = tf.train.Example()
    feature = example.features.feature
    feature["input_ids"].int64_list.value.extend(inst.input_ids + pad)
    feature["input_mask"].int64_list.value.extend([1] * len(inst.input_ids) + pad)
    feature["segment_ids"].int64_list.value.extend(inst.segment_ids + pad)
    feature["token_boundary"].int64_list.value.extend(inst.token_boundary + pad)
    feature["masked_lm_positions"].int64_list.value.extend(inst.masked_lm_positions + mpad)
    feature["masked_lm_ids"].int64_list.value.extend(inst.masked_lm_ids + mpad)
    feature["masked_lm_weights"].float_list.value.extend(
        [1.0] * len(inst.masked_lm_ids) + [0.0] * len(mpad))
    feature["next_sentence_labels"].int64_list.value.append(inst.next_sentence_label)
    # Deterministic: the feature map's entries sorted by key. The default order follows
    # the protobuf runtime's (upb) hash table, whose seed differs between processes, so
    # the same record was written with different bytes by every run.
    return example.SerializeToString(deterministic=True)


def write_shard(plan: ShardPlan, files: list[str], sizes: list[int], maker: InstanceMaker,
                fp: dict, key: str, report=None) -> dict:
    """Writes shard ``plan`` (a partial file renamed when complete, then its completion
    record); returns the completion record. ``report(bytes consumed, instances)`` is called
    now and then."""
    cfg = maker.cfg
    maker.stats = CreationStats()
    writer = ShardWriter(plan.path, cfg.shuffle_buffer, shuffle_rng(cfg.random_seed, plan.index))
    try:
        for k, (doc, consumed) in enumerate(region_documents(files, sizes, plan,
                                                              cfg.document_per_file)):
            for inst in maker.instances(doc, plan.first_document + k):
                writer.add(instance_to_example_bytes(inst, cfg.max_seq_length,
                                                     cfg.max_predictions_per_seq))
            if report is not None and k % 16 == 15:
                report(consumed, maker.stats.instances)
        info = writer.close()
    except BaseException:
        writer.abort()
        raise
    record = {"format": DATA_FORMAT, "shard": plan.index, "num_shards": fp["flags"]["num_shards"],
              "file": os.path.basename(plan.path), **info,
              "documents": {"first": plan.first_document, "count": plan.documents},
              "stats": dataclasses.asdict(maker.stats), "key": key, "fingerprint": fp}
    done = completion_record_path(plan.path)
    if os.path.exists(done):       # never a stale record next to the new file
        os.remove(done)
    os.replace(writer.tmp, plan.path)
    write_json_atomic(done, record)
    return record


# ----------------------------------------------------------------------------------------
# Driver


@dataclasses.dataclass
class Summary:
    read: ReadStats
    created: CreationStats
    outputs: list[str]
    seconds: float
    input_mb: float
    processed_mb: float = 0.0
    shards: dict = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict:
        c = self.created
        spans = {int(k): v for k, v in sorted(c.span_lengths.items())}
        total_spans = sum(spans.values()) or 1
        return {
            "input_files": self.read.files,
            "input_mb": round(self.input_mb, 2),
            "seconds": round(self.seconds, 1),
            "mb_per_second": round(self.processed_mb / max(self.seconds, 1e-9), 3),
            "documents": self.read.documents,
            "instances": c.instances,
            "skipped": {
                "non_utf8_lines": self.read.non_utf8_lines,
                "empty_documents": self.read.empty_documents,
                "one_segment_documents": c.one_segment_documents,
                "unpaired_segments": c.unpaired_segments,
            },
            "masked_fraction": round(c.masked / max(c.tokens, 1), 4),
            "sop_swapped_fraction": round(c.swapped / max(c.instances, 1), 4),
            "span_length_fractions": {n: round(v / total_spans, 4) for n, v in spans.items()},
            "span_lengths": spans,
            "tokens": c.tokens,
            "truncated_tokens": c.truncated_tokens,
            "outputs": self.outputs,
            **self.shards,
        }


class Progress:
    """A one-line progress bar with throughput on stderr."""

    def __init__(self, total_bytes: int, stream=None, every: float = 1.0):
        """``stream=None`` disables the bar."""
        self.total = max(total_bytes, 1)
        self.stream = stream
        self.every = every
        self.start = time.time()
        self.last = 0.0
        self.enabled = stream is not None

    def update(self, done_bytes: int, instances: int, force: bool = False) -> None:
        now = time.time()
        if not self.enabled or (not force and now - self.last < self.every):
            return
        self.last = now
        frac = min(done_bytes / self.total, 1.0)
        elapsed = max(now - self.start, 1e-9)
        mbs = done_bytes / 1e6 / elapsed
        eta = (self.total - done_bytes) / 1e6 / mbs if mbs > 0 else float("inf")
        bar = "#" * int(frac * 30)
        self.stream.write(f"\r[{bar:<30}] {100 * frac:5.1f}% {done_bytes / 1e6:8.1f} MB "
                          f"{mbs:6.2f} MB/s {instances:9d} instances "
                          f"ETA {eta if math.isfinite(eta) else 0:6.0f}s")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()



def document_rng(seed: int, doc_index: int) -> random.Random:
    """The random stream of document ``doc_index``: a string seed (hashed with SHA-512 by
    `random.Random`, independent of ``PYTHONHASHSEED``), so the instances are a function
    of the inputs and the flags whatever ``num_workers``."""
    return random.Random(f"albert-pretraining-data:{seed}:{doc_index}")


def _die_with_parent(parent_pid: int) -> None:
    """A worker ends when the parent is killed (Linux: PR_SET_PDEATHSIG), so that no orphan
    goes on writing next to the rerun."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(1)


def shard_maker(vocab_file: str, cfg: PretrainingConfig) -> InstanceMaker:
    """The `InstanceMaker` a process that writes shards (`write_shard`) holds: a worker
    process here, a Beam worker (`albert_tf.data.pretraining_beam`)."""
    from albert_tf.text.vocabulary import load_tokenizer
    tok = load_tokenizer(vocab_file, do_lower_case=cfg.do_lower_case)
    return InstanceMaker(tok, cfg, cfg.random_seed)


@dataclasses.dataclass
class ShardJob:
    """What writing the shards ``todo`` needs (`write_shard` for each), handed to a
    ``write_shards`` callable of `create_pretraining_data` (the Beam runner): plain data,
    so that it pickles."""
    files: list[str]
    sizes: list[int]
    vocab_file: str
    config: PretrainingConfig
    fingerprint: dict
    key: str
    todo: list[ShardPlan]
    paths: list[str]


def _worker_main(worker, parent_pid, vocab_file, cfg_dict, files, sizes, fp, key,
                 tasks, results):
    """Worker process: writes whole shards, taken one at a time from ``tasks``."""
    _die_with_parent(parent_pid)
    try:
        maker = shard_maker(vocab_file, PretrainingConfig(**cfg_dict))
        while True:
            item = tasks.get()
            if item is None:
                break
            plan = ShardPlan(**item)

            def report(consumed, instances, shard=plan.index):
                if os.getppid() != parent_pid:
                    os._exit(1)
                results.put(("progress", worker, (shard, consumed, instances)))

            results.put(("done", worker, write_shard(plan, files, sizes, maker, fp, key,
                                                     report)))
        results.put(("exit", worker, None))
    except BaseException as e:  # reported to the parent, which fails loudly
        results.put(("error", worker, f"{type(e).__name__}: {e}"))


def _stats_of(record: dict) -> CreationStats:
    stats = CreationStats(**record["stats"])
    stats.span_lengths = {int(k): v for k, v in stats.span_lengths.items()}
    return stats


def create_pretraining_data(input_files, output_file: str, vocab_file: str,
                            config: PretrainingConfig | None = None, num_workers: int = 1,
                            num_shards: int | None = None, progress: bool = True,
                            batch_docs: int = 64, log=None, write_shards=None) -> dict:
    """Reads ``input_files`` (paths/globs), writes TFRecord shards; returns the summary.
    ``vocab_file``: a SentencePiece model or a WordPiece ``vocab.txt`` (told apart by
    content, `albert_tf.text.vocabulary`), or a model directory holding one.

    Finished shards of an earlier run with the same inputs and flags are kept; the others
    are (re)written. ``log(line)`` gets a line about what was kept and why not.
    ``write_shards(job)``, if given, writes the shards ``job.todo`` (a `ShardJob`) instead
    of this process and its ``num_workers`` worker processes, and returns their completion
    records, ``{shard index: record}`` (the Beam runner, `albert_tf.data.pretraining_beam`);
    everything else (checks, plan, what a rerun keeps, the summary) is the same.
    ``batch_docs`` is unused (kept for compatibility)."""
    del batch_docs
    from albert_tf.outputs import missing_parents
    creation = CreationPlan.from_arguments(input_files, output_file, vocab_file, config,
                                           num_workers, num_shards)
    created_dirs = missing_parents(os.path.abspath(output_file))   # removed if no instance
    lock_existed = os.path.exists(lock_path(output_file))   # an earlier run wrote beside it
    start = time.time()
    with output_lock(output_file):
        shards = _ShardState.of(creation)
        _log_kept(log, creation, shards)
        bar = Progress(shards.read.bytes_read, stream=sys.stderr if progress else None)
        _write_shards(creation, shards, bar, write_shards)
        if any(r["stats"]["instances"] for r in shards.records.values()):
            # the shards of an earlier --num_shards, once this output is complete: a glob
            # (OUTPUT*) would read every record twice; only files albert-tf wrote
            shards.removed_stale, shards.stale = remove_stale_outputs(shards.stale,
                                                                      lock_existed)
    created = CreationStats()
    for s in sorted(shards.records):
        created.merge(_stats_of(shards.records[s]))
    bar.update(shards.read.bytes_read, created.instances, force=True)
    bar.close()
    _log_stale(log, shards)
    if not created.instances:
        _remove_empty_output(creation.paths + [lock_path(output_file)], created_dirs)
        raise ValueError(f"no training instance from {len(creation.files)} input file(s) "
                         f"({shards.read.documents} document(s)): each document needs at "
                         "least two sentences for sentence-order prediction (one sentence "
                         "per line, a blank line between documents); no records were "
                         "written.")
    return Summary(shards.read, created, creation.paths, time.time() - start,
                   shards.read.bytes_read / 1e6,
                   sum(p.end - p.start for p in shards.todo) / 1e6,
                   shards.summary(creation.num_shards)).as_dict()


@dataclasses.dataclass(frozen=True)
class CreationPlan:
    """What `create_pretraining_data` writes, from its arguments, checked before any
    work: the input files, the vocabulary (a model directory's, resolved) and its
    tokenizer, the config, the number of workers and shards and the shards' paths."""

    output_file: str
    files: list[str]
    vocab_file: str
    tokenizer: object
    config: PretrainingConfig
    num_workers: int
    num_shards: int
    paths: list[str]

    @classmethod
    def from_arguments(cls, input_files, output_file: str, vocab_file: str,
                       config: PretrainingConfig | None, num_workers: int,
                       num_shards: int | None) -> "CreationPlan":
        """The plan; raises on the first problem (a bad config, no inputs, a bad
        vocabulary, ``num_shards`` < 1, outputs that are not ours to write)."""
        from albert_tf.text.vocabulary import find_vocabulary, load_tokenizer
        cfg = config or PretrainingConfig()
        cfg.validate()
        files = resolve_inputs(input_files)
        if os.path.isdir(vocab_file):                  # a model directory: its vocabulary
            vocab_file = find_vocabulary(vocab_file)[1]
        tokenizer = load_tokenizer(vocab_file, cfg.do_lower_case)   # fails fast on a bad one
        num_workers = max(1, int(num_workers))
        num_shards = int(num_shards or num_workers)
        if num_shards < 1:
            raise ValueError(f"num_shards must be >= 1, got {num_shards}")
        paths = shard_paths(output_file, num_shards)
        check_output_files(output_file, paths, files)
        return cls(output_file, files, vocab_file, tokenizer, cfg, num_workers, num_shards,
                   paths)


@dataclasses.dataclass
class _ShardState:
    """The shards under the output lock: their plans (`plan_shards`), what reading the
    inputs found, the completion ``records`` of finished shards (kept ones, then written
    ones), the shards to write (``todo``), and what was removed or invalidated."""

    plans: list[ShardPlan]
    read: ReadStats
    sizes: list[int]
    fingerprint: dict
    key: str
    records: dict[int, dict]
    reused: list[str]
    todo: list[ShardPlan]
    invalidated: dict[str, str]
    removed: list[str]
    stale: list[str]
    removed_stale: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, creation: CreationPlan) -> "_ShardState":
        """Partial files removed, the inputs planned into shards, and the finished shards
        of an earlier run with the same inputs and flags kept (others: why not)."""
        removed = remove_partial_files(creation.paths)
        read = ReadStats()
        sizes = [input_size(f) for f in creation.files]
        plans = plan_shards(creation.files, creation.paths, creation.config.document_per_file,
                            read)
        fp = creation_fingerprint(creation.files, creation.vocab_file, creation.config,
                                  creation.num_shards)
        key = fingerprint_key(fp)
        records: dict[int, dict] = {}
        invalidated: dict[str, str] = {}
        for plan in plans:
            record, reason = check_finished(plan, fp, key)
            if record is not None:
                records[plan.index] = record
            elif reason:
                invalidated[plan.path] = reason
        reused = [p.path for p in plans if p.index in records]
        todo = [p for p in plans if p.index not in records]
        stale = stale_outputs(creation.output_file, creation.paths)
        return cls(plans, read, sizes, fp, key, records, reused, todo, invalidated, removed,
                   stale)

    def summary(self, num_shards: int) -> dict:
        """The summary's shard entries: records per shard, what was kept, written,
        invalidated and removed, and stale files left."""
        return {"num_shards": num_shards,
                "shard_records": [self.records[s]["records"] if s in self.records else 0
                                  for s in range(num_shards)],
                "reused_shards": self.reused,
                "written_shards": [p.path for p in self.todo],
                "invalidated_shards": self.invalidated,
                "removed_partial_files": self.removed, "removed_stale_outputs": self.removed_stale,
                "stale_outputs": self.stale}


def _log_kept(log, creation: CreationPlan, shards: _ShardState) -> None:
    """One line, when a rerun keeps, rewrites or removes anything: what and why."""
    if log is None or not (shards.reused or shards.invalidated or shards.removed):
        return
    invalidated, removed = shards.invalidated, shards.removed
    log(f"kept {len(shards.reused)} finished shard(s) of {creation.num_shards}; writing "
        f"{len(shards.todo)}" + (f"; rewriting {len(invalidated)}: "
                                 + next(iter(invalidated.values())) if invalidated else "")
        + (f"; removed {len(removed)} partial file(s)" if removed else ""))


def _log_stale(log, shards: _ShardState) -> None:
    """Lines on the shards of an earlier --num_shards: removed, or left (not ours)."""
    if log is None:
        return
    removed_stale, stale = shards.removed_stale, shards.stale
    if removed_stale:
        log(f"removed {len(removed_stale)} shard(s) an earlier run wrote with another "
            f"--num_shards (a glob would read them too): {', '.join(removed_stale[:3])}"
            + (" ..." if len(removed_stale) > 3 else ""))
    if stale:
        log(f"warning: {len(stale)} file(s) named like shards of this output with another "
            "--num_shards that albert-tf cannot tell it wrote, left as they are (a glob "
            f"would read them too): {', '.join(stale[:3])}"
            + (" ..." if len(stale) > 3 else ""))


def _write_shards(creation: CreationPlan, shards: _ShardState, bar: "Progress",
                  write_shards) -> None:
    """Writes ``shards.todo`` and adds their completion records: through ``write_shards``
    (the Beam runner) when given, else here, or in worker processes."""
    done_bytes = sum(p.end - p.start for p in shards.plans if p.index in shards.records)
    workers = min(creation.num_workers, len(shards.todo))
    cfg = creation.config
    if write_shards is not None:
        if shards.todo:
            shards.records.update(write_shards(ShardJob(
                creation.files, shards.sizes, creation.vocab_file, cfg, shards.fingerprint,
                shards.key, shards.todo, creation.paths)))
    elif workers <= 1:
        _write_here(creation, shards, bar, done_bytes)
    else:
        _run_workers(creation.files, shards.sizes, creation.vocab_file, cfg, workers,
                     shards.todo, shards.records, shards.fingerprint, shards.key,
                     creation.paths, bar, done_bytes)


def _write_here(creation: CreationPlan, shards: _ShardState, bar: "Progress",
                done_bytes: int) -> None:
    """Writes ``shards.todo`` in this process, one after the other, with progress."""
    cfg, records = creation.config, shards.records
    maker = InstanceMaker(creation.tokenizer, cfg, cfg.random_seed)
    instances = sum(r["stats"]["instances"] for r in records.values())
    for plan in shards.todo:
        def report(consumed, made):
            bar.update(done_bytes + consumed, instances + made)
        records[plan.index] = write_shard(plan, creation.files, shards.sizes, maker,
                                          shards.fingerprint, shards.key, report)
        done_bytes += plan.end - plan.start
        instances += records[plan.index]["stats"]["instances"]
        bar.update(done_bytes, instances)


def _remove_empty_output(paths: list[str], created_dirs: list[str]) -> None:
    """Removes this output's shards, completion records and lock (no instance in any), and
    the directories this run created for them (deepest first)."""
    for path in paths:
        for name in (path, completion_record_path(path)):
            if os.path.exists(name):
                os.remove(name)
    for directory in created_dirs:
        try:
            os.rmdir(directory)
        except OSError:
            break


def _run_workers(files, sizes, vocab_file, cfg, num_workers, todo, records, fp, key,
                 paths, bar, done_bytes):
    """Worker processes take the shards to write from one queue, one shard at a time (a
    shard's records do not depend on which worker writes it)."""
    import multiprocessing as mp
    import queue as queue_lib
    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    for plan in todo:
        tasks.put(dataclasses.asdict(plan))
    for _ in range(num_workers):
        tasks.put(None)
    by_index = {p.index: p for p in todo}
    procs = []
    for w in range(num_workers):
        p = ctx.Process(target=_worker_main, daemon=True,
                        args=(w, os.getpid(), vocab_file, dataclasses.asdict(cfg), files,
                              sizes, fp, key, tasks, results))
        p.start()
        procs.append(p)
    in_flight: dict[int, tuple[int, int]] = {}
    instances = sum(r["stats"]["instances"] for r in records.values())
    exited: set[int] = set()
    errors: list[str] = []
    finished = 0

    def handle(kind, w, payload):
        nonlocal finished, done_bytes, instances
        if kind == "progress":
            in_flight[payload[0]] = payload[1:]
        elif kind == "done":
            records[payload["shard"]] = payload
            in_flight.pop(payload["shard"], None)
            plan = by_index[payload["shard"]]
            done_bytes += plan.end - plan.start
            instances += payload["stats"]["instances"]
            finished += 1
        elif kind == "exit":
            exited.add(w)
        else:
            errors.append(f"worker {w}: {payload}")

    try:
        while finished < len(todo) and not errors:
            try:
                handle(*results.get(timeout=0.5))
            except queue_lib.Empty:
                dead = [w for w, p in enumerate(procs) if not p.is_alive() and w not in exited]
                if dead:
                    try:
                        while True:
                            handle(*results.get_nowait())
                    except queue_lib.Empty:
                        pass
                    for w in dead:
                        if w not in exited and not errors:
                            errors.append(f"worker {w} died (exit code {procs[w].exitcode})")
            bar.update(done_bytes + sum(c for c, _ in in_flight.values()),
                       instances + sum(i for _, i in in_flight.values()))
        if errors:
            raise CreationError("pretraining-data worker failed: " + "; ".join(errors))
    except BaseException:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(timeout=30)
        remove_partial_files(paths)
        raise
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.terminate()


__all__ = ["CreationError", "Instance", "InstanceMaker", "PretrainingConfig", "ShardJob",
           "ShardPlan",
           "completion_record_path", "create_pretraining_data", "instance_to_example_bytes",
           "is_bookkeeping_file", "plan_shards", "replacement_ids", "shard_maker",
           "shard_paths", "write_shard"]
