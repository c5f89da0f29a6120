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
* n-gram masking: whole words (a piece that does not start a word joins the previous one)
  are the units; spans of ``n`` units, ``n`` drawn with weight ``1/n`` for ``n <= ngram``,
  are masked until ``round(len * masked_lm_prob)`` (at most ``max_predictions_per_seq``)
  tokens are chosen; each chosen token becomes ``[MASK]`` (80%), itself (10%) or a random
  piece (10%);
* ``token_boundary`` marks word-start pieces (and ``[CLS]``/``[SEP]``).

Unlike the original, which holds the whole corpus and every instance in memory, documents
are read one at a time and instances pass through a bounded shuffle buffer on their way to
the TFRecord files; ``dupe_factor`` copies of each document (different target lengths, cut
points and masks) are made right after tokenizing it. With ``num_workers > 1`` worker
processes tokenize and write their own output shards, fed through bounded queues.

Determinism: each document's instances come from its own random stream, seeded by
``random_seed`` and the document's index (`document_rng`), so the set of records is a
function of the inputs and the flags, whatever ``num_workers``; their order and sharding
(the shuffle buffers, one per worker) depend on ``num_workers`` too, and the files are
byte-identical from run to run for a given ``num_workers`` and ``num_shards``
(records are serialized with sorted feature keys).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import string
import sys
import time
from typing import Iterator

import numpy as np

from albert_tf.data.documents import (ReadStats, iter_documents, resolve_inputs,
                                      split_sentences, total_bytes)


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


_SPECIAL_PIECES = set('!"#$%&"()*+,-./:;?@[\\]^_`{|}~') | {"\u20ac", "\u00a3"}
_WORD_CHARS = set(string.ascii_lowercase + string.digits)


def is_start_piece(piece: str) -> bool:
    """The original rule: pieces starting a word are those starting with '▁' or '<',
    punctuation pieces, and pieces with any character outside [a-z0-9]."""
    return (piece.startswith("\u2581") or piece.startswith("<") or piece in _SPECIAL_PIECES
            or not all(c.lower() in _WORD_CHARS for c in piece))


class InstanceMaker:
    """Documents (lists of raw lines) -> training instances, for one worker."""

    def __init__(self, tokenizer, config: PretrainingConfig, seed: int):
        self.tok = tokenizer
        self.cfg = config
        self.seed = seed
        self.rng = random.Random(seed)
        self.stats = CreationStats()
        vocab = [tokenizer.sp_model.id_to_piece(i) for i in range(tokenizer.vocab_size)]
        self.is_start = [is_start_piece(p) for p in vocab]
        sp = tokenizer.sp_model
        self.random_ids = [i for i in range(tokenizer.vocab_size)
                           if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i))]
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


def shard_paths(output_file: str, num_shards: int) -> list[str]:
    if num_shards == 1:
        return [output_file]
    return [f"{output_file}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]


class ShardWriter:
    """Writes serialized examples round-robin over its shards through a bounded shuffle
    buffer (a full buffer emits a random element for each new one)."""

    def __init__(self, paths: list[str], buffer_size: int, rng: random.Random):
        from albert_tf.backend import tf
        for p in paths:
            os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
        self.writers = [tf.io.TFRecordWriter(p) for p in paths]
        self.buffer: list[bytes] = []
        self.size = max(1, buffer_size)
        self.rng = rng
        self.count = 0

    def add(self, record: bytes) -> None:
        if len(self.buffer) < self.size:
            self.buffer.append(record)
            return
        j = self.rng.randrange(self.size)
        self.buffer[j], record = record, self.buffer[j]
        self._write(record)

    def _write(self, record: bytes) -> None:
        self.writers[self.count % len(self.writers)].write(record)
        self.count += 1

    def close(self) -> None:
        self.rng.shuffle(self.buffer)
        for r in self.buffer:
            self._write(r)
        self.buffer = []
        for w in self.writers:
            w.close()


# ----------------------------------------------------------------------------------------
# Driver


@dataclasses.dataclass
class Summary:
    read: ReadStats
    created: CreationStats
    outputs: list[str]
    seconds: float
    input_mb: float

    def as_dict(self) -> dict:
        c = self.created
        spans = {int(k): v for k, v in sorted(c.span_lengths.items())}
        total_spans = sum(spans.values()) or 1
        return {
            "input_files": self.read.files,
            "input_mb": round(self.input_mb, 2),
            "seconds": round(self.seconds, 1),
            "mb_per_second": round(self.input_mb / max(self.seconds, 1e-9), 3),
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


def _doc_batches(files, cfg: PretrainingConfig, stats: ReadStats,
                 batch_docs: int) -> Iterator[list[list[str]]]:
    batch = []
    for doc in iter_documents(files, stats, document_per_file=cfg.document_per_file):
        batch.append(doc)
        if len(batch) >= batch_docs:
            yield batch
            batch = []
    if batch:
        yield batch


def _worker_seed(seed: int, worker: int) -> int:
    return seed * 1_000_003 + worker


def document_rng(seed: int, doc_index: int) -> random.Random:
    """The random stream of document ``doc_index``: a string seed (hashed with SHA-512 by
    `random.Random`, independent of ``PYTHONHASHSEED``), so the instances are a function
    of the inputs and the flags whatever ``num_workers``."""
    return random.Random(f"albert-pretraining-data:{seed}:{doc_index}")


def _worker_main(worker, num_workers, spm_model_file, cfg_dict, paths, queue, result_queue):
    """Worker process: tokenizes the document batches it receives, writes its shards."""
    try:
        from albert_tf.text.tokenizer import AlbertTokenizer
        cfg = PretrainingConfig(**cfg_dict)
        tok = AlbertTokenizer(spm_model_file, do_lower_case=cfg.do_lower_case)
        maker = InstanceMaker(tok, cfg, cfg.random_seed)
        writer = ShardWriter(paths, cfg.shuffle_buffer // num_workers or 1,
                             random.Random(_worker_seed(cfg.random_seed, worker) + 7))
        while True:
            item = queue.get()
            if item is None:
                break
            first, docs = item
            for k, doc in enumerate(docs):
                for inst in maker.instances(doc, first + k):
                    writer.add(instance_to_example_bytes(inst, cfg.max_seq_length,
                                                         cfg.max_predictions_per_seq))
            result_queue.put(("progress", worker, maker.stats.instances))
        writer.close()
        result_queue.put(("done", worker, dataclasses.asdict(maker.stats)))
    except BaseException as e:  # reported to the parent, which fails loudly
        result_queue.put(("error", worker, f"{type(e).__name__}: {e}"))


def create_pretraining_data(input_files, output_file: str, spm_model_file: str,
                            config: PretrainingConfig | None = None, num_workers: int = 1,
                            num_shards: int | None = None, progress: bool = True,
                            batch_docs: int = 64) -> dict:
    """Reads ``input_files`` (paths/globs), writes TFRecord shards; returns the summary."""
    from albert_tf.text.tokenizer import AlbertTokenizer
    cfg = config or PretrainingConfig()
    cfg.validate()
    files = resolve_inputs(input_files)
    AlbertTokenizer(spm_model_file, cfg.do_lower_case)   # fail fast on a bad vocabulary
    num_workers = max(1, int(num_workers))
    num_shards = max(num_workers, int(num_shards or num_workers))
    paths = shard_paths(output_file, num_shards)
    read = ReadStats()
    created = CreationStats()
    bar = Progress(total_bytes(files), stream=sys.stderr if progress else None)
    start = time.time()
    if num_workers == 1:
        tok = AlbertTokenizer(spm_model_file, cfg.do_lower_case)
        maker = InstanceMaker(tok, cfg, cfg.random_seed)
        writer = ShardWriter(paths, cfg.shuffle_buffer, random.Random(_worker_seed(cfg.random_seed, 0) + 7))
        for j, batch in enumerate(_doc_batches(files, cfg, read, batch_docs)):
            for k, doc in enumerate(batch):
                for inst in maker.instances(doc, j * batch_docs + k):
                    writer.add(instance_to_example_bytes(inst, cfg.max_seq_length,
                                                         cfg.max_predictions_per_seq))
            bar.update(read.bytes_read, maker.stats.instances)
        writer.close()
        created = maker.stats
    else:
        created = _run_workers(files, spm_model_file, cfg, num_workers, paths, read, bar,
                               batch_docs)
    bar.update(read.bytes_read, created.instances, force=True)
    bar.close()
    summary = Summary(read, created, paths, time.time() - start, read.bytes_read / 1e6)
    return summary.as_dict()


def _run_workers(files, spm_model_file, cfg, num_workers, paths, read, bar, batch_docs):
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    queues = [ctx.Queue(maxsize=4) for _ in range(num_workers)]
    results = ctx.Queue()
    procs = []
    for w in range(num_workers):
        own = paths[w::num_workers]
        p = ctx.Process(target=_worker_main, daemon=True,
                        args=(w, num_workers, spm_model_file, dataclasses.asdict(cfg), own,
                              queues[w], results))
        p.start()
        procs.append(p)
    progress = [0] * num_workers
    created = CreationStats()
    done = 0
    errors = []

    def drain(block: bool):
        nonlocal done
        import queue as queue_lib
        while True:
            try:
                kind, w, payload = results.get(block=block, timeout=0.5 if block else None)
            except queue_lib.Empty:
                return
            if kind == "progress":
                progress[w] = payload
            elif kind == "done":
                stats = CreationStats(**payload)
                stats.span_lengths = {int(k): v for k, v in stats.span_lengths.items()}
                created.merge(stats)
                done += 1
            else:
                errors.append(f"worker {w}: {payload}")
            block = False

    try:
        for j, batch in enumerate(_doc_batches(files, cfg, read, batch_docs)):
            q = queues[j % num_workers]
            while True:
                try:
                    q.put((j * batch_docs, batch), timeout=0.5)
                    break
                except Exception:
                    drain(False)
                    if errors or not procs[j % num_workers].is_alive():
                        raise RuntimeError("pretraining-data worker failed: "
                                           + "; ".join(errors or ["died"]))
            drain(False)
            if errors:
                raise RuntimeError("pretraining-data worker failed: " + "; ".join(errors))
            bar.update(read.bytes_read, sum(progress))
        for q in queues:
            q.put(None)
        while done < num_workers and not errors:
            drain(True)
            if any(not p.is_alive() for p in procs) and done < num_workers:
                drain(False)
                if done < num_workers and all(not p.is_alive() for p in procs):
                    break
        if errors or done < num_workers:
            raise RuntimeError("pretraining-data worker failed: " + "; ".join(errors or ["died"]))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
    return created


def summary_json(summary: dict) -> str:
    return json.dumps(summary, indent=1)


__all__ = ["Instance", "InstanceMaker", "PretrainingConfig", "create_pretraining_data",
           "instance_to_example_bytes", "is_start_piece", "shard_paths"]
