"""The shards of `albert-tf-create-pretraining-data`: which documents each holds, the files,
their completion records, and what a rerun may keep.

`plan_shards` splits the input, in one reading pass, into contiguous runs of whole documents
of about equal bytes; `region_documents` reads one shard's documents back from its byte
position. A shard is written through `ShardWriter` into a hidden partial file
(``.NAME.tmp-PID``) renamed when complete; its completion record (``.NAME.done.json``,
`completion_record_path`) holds the record count, size, sha256 and the fingerprint of what
the records depend on (`creation_fingerprint`: the flags, the inputs' and the vocabulary's
contents, `DATA_FORMAT`; the vocabulary's kind is recorded too). `check_finished` says
whether a rerun keeps a shard, or why not. The pipeline itself (tokenizing, instances,
workers) is `albert_tf.data.pretraining_data`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob as glob_lib
import hashlib
import json
import os
import random
import re
from typing import Iterator

from albert_tf.data.documents import (ReadStats, input_path, input_size, iter_documents,
                                      open_input)
from albert_tf.text.vocabulary import vocabulary_kind

DATA_FORMAT = 1    # bump whenever the same flags and inputs would give different records


class CreationError(RuntimeError):
    """Creation could not run or finish (another run holds the output, a worker failed)."""


def shard_paths(output_file: str, num_shards: int) -> list[str]:
    if num_shards == 1:
        return [output_file]
    return [f"{output_file}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]


def completion_record_path(path: str) -> str:
    """The completion record of the finished shard ``path``: ``.<name>.done.json`` beside it
    (hidden, and `is_bookkeeping_file`, so that the reader skips it in a glob)."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.done.json")


def partial_path(path: str, what: str = "tmp") -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.{what}-{os.getpid()}")


_BOOKKEEPING = re.compile(r"^\..+\.(done\.json|lock|tmp-\d+|done-tmp-\d+)$")


def is_bookkeeping_file(path: str) -> bool:
    """A completion record, lock or partial (being written, or left by a killed run) file of
    `create_pretraining_data`: never pretraining data."""
    return bool(_BOOKKEEPING.match(os.path.basename(path)))


@dataclasses.dataclass
class ShardPlan:
    """Shard ``index`` holds the documents ``first_document ..`` ``+ documents - 1``: those
    starting in its 1/num_shards of the concatenated input's bytes (``start``/``end``: byte
    positions of its first document and after its last one)."""
    index: int
    path: str
    first_document: int = 0
    documents: int = 0
    start: int = 0
    end: int = 0


def plan_shards(files: list[str], paths: list[str], document_per_file: bool,
                read: ReadStats) -> list[ShardPlan]:
    """One reading pass (no tokenizing): contiguous document ranges of about equal bytes, and
    the read statistics. Memory: one `ShardPlan` per shard."""
    total = max(sum(input_size(f) for f in files), 1)
    plans = [ShardPlan(s, p) for s, p in enumerate(paths)]
    previous_end = 0
    for k, _ in enumerate(iter_documents(files, read, document_per_file=document_per_file)):
        plan = plans[min(len(paths) - 1, previous_end * len(paths) // total)]
        if plan.documents == 0:
            plan.first_document, plan.start = k, previous_end
        plan.documents += 1
        previous_end = plan.end = read.bytes_read
    return plans


def region_documents(files: list[str], sizes: list[int], plan: ShardPlan,
                      document_per_file: bool) -> Iterator[tuple[list[str], int]]:
    """The shard's documents, exactly as `iter_documents` yields them, read from the byte
    position ``plan.start`` on; with the bytes consumed so far."""
    if plan.documents == 0:
        return
    first, offset = len(files), 0
    position = plan.start
    for i, size in enumerate(sizes):
        if position < size:
            first, offset = i, position
            break
        position -= size
    n = consumed = 0
    for i in range(first, len(files)):
        lines: list[str] = []
        with open_input(files[i]) as f:
            if i == first:
                f.seek(offset)
            for raw in f:
                consumed += len(raw)
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError:
                    continue
                if line:
                    lines.append(line)
                    continue
                if lines and not document_per_file:
                    yield lines, consumed
                    n += 1
                    if n == plan.documents:
                        return
                    lines = []
        if lines:
            yield lines, consumed
            n += 1
            if n == plan.documents:
                return
    raise CreationError(f"the input files changed while reading them: shard {plan.index} "
                        f"expected {plan.documents} documents, found {n}")


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    buffer = bytearray(1 << 16)          # memory does not depend on the file's size
    view = memoryview(buffer)
    with open_input(path) as f:           # a local path: open(path, "rb")
        while n := f.readinto(buffer):
            h.update(view[:n])
    return h.hexdigest()


def creation_fingerprint(files: list[str], vocab_file: str, cfg,
                         num_shards: int) -> dict:
    """What the records depend on: the flags (not ``num_workers``), the input files' and the
    vocabulary's contents (not their paths or times), the data format and package version.
    The vocabulary's kind (``sentencepiece``/``wordpiece``) is recorded beside its sha256;
    being a function of the content, it is not part of `fingerprint_key` (shards written
    before it was recorded stay valid)."""
    from albert_tf.version import __version__
    return {
        "format": DATA_FORMAT, "albert_tf": __version__,
        "flags": {**dataclasses.asdict(cfg), "num_shards": num_shards},
        "inputs": [{"path": input_path(f), "bytes": input_size(f),
                    "sha256": sha256_file(f)} for f in files],
        "vocabulary": {"path": os.path.abspath(vocab_file),
                       "kind": vocabulary_kind(vocab_file),
                       "sha256": sha256_file(vocab_file)},
    }


def fingerprint_key(fp: dict) -> str:
    key = {"format": fp["format"], "albert_tf": fp["albert_tf"], "flags": fp["flags"],
           "inputs": [[i["bytes"], i["sha256"]] for i in fp["inputs"]],
           "vocabulary": fp["vocabulary"]["sha256"]}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _vocabulary_change(old: dict, new: dict) -> str:
    """How the fingerprinted vocabulary changed (its kind too when that changed), or ""."""
    if old.get("sha256") == new["sha256"]:
        return ""
    kinds = old.get("kind"), new.get("kind")
    if None in kinds or kinds[0] == kinds[1]:
        return "the vocabulary changed"
    return f"the vocabulary changed ({kinds[0]} -> {kinds[1]})"


def what_changed(old: dict, new: dict) -> str:
    changes = []
    old_flags, new_flags = old.get("flags") or {}, new["flags"]
    for k in sorted(set(old_flags) | set(new_flags)):
        if old_flags.get(k) != new_flags.get(k):
            changes.append(f"--{k} {old_flags.get(k)!r} -> {new_flags.get(k)!r}")
    if [(i.get("bytes"), i.get("sha256")) for i in old.get("inputs") or []] != \
            [(i["bytes"], i["sha256"]) for i in new["inputs"]]:
        changes.append("the input files changed")
    vocabulary = _vocabulary_change(old.get("vocabulary") or {}, new["vocabulary"])
    if vocabulary:
        changes.append(vocabulary)
    for k in ("format", "albert_tf"):
        if old.get(k) != new[k]:
            changes.append(f"{'data format' if k == 'format' else k} {old.get(k)} -> {new[k]}")
    return "made with other flags or inputs: " + "; ".join(changes or ["unknown difference"])


def read_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def check_finished(plan: ShardPlan, fp: dict, key: str) -> tuple[dict | None, str]:
    """``(completion record, "")`` for a finished shard that can be kept; else ``(None,
    why it is rewritten)``, the reason empty when there was nothing to rewrite."""
    done = completion_record_path(plan.path)
    exists = os.path.exists(plan.path)
    if not os.path.exists(done):
        return None, ("no completion record (an interrupted run, or an older tool)"
                      if exists else "")
    record = read_json(done)
    if not isinstance(record, dict) or "key" not in record:
        return None, "unreadable completion record"
    if record["key"] != key:
        return None, what_changed(record.get("fingerprint") or {}, fp)
    if not exists:
        return None, "the shard file is missing"
    size = os.path.getsize(plan.path)
    if size != record.get("bytes"):
        return None, (f"the file has {size} bytes, its completion record says "
                      f"{record.get('bytes')} (truncated or replaced)")
    if sha256_file(plan.path) != record.get("sha256"):
        return None, "the file's contents differ from its completion record (sha256)"
    return record, ""


def write_json_atomic(path: str, data: dict) -> None:
    directory, name = os.path.split(path)          # .<shard>.done.json
    tmp = os.path.join(directory, f"{name.removesuffix('.json')}-tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def remove_partial_files(paths: list[str]) -> list[str]:
    """Partial files of a killed run (``.<shard>.tmp-<pid>``)."""
    removed = []
    for path in paths:
        directory, name = os.path.split(path)
        for p in sorted(glob_lib.glob(os.path.join(directory or ".",
                                                  f".{glob_lib.escape(name)}.*tmp-*"))):
            if is_bookkeeping_file(p):
                try:
                    os.remove(p)
                    removed.append(p)
                except FileNotFoundError:
                    pass
    return removed


def stale_outputs(output_file: str, paths: list[str]) -> list[str]:
    """Shards of this output with another ``--num_shards`` (a glob would read them too)."""
    candidates = glob_lib.glob(glob_lib.escape(output_file) + "-[0-9]*-of-[0-9]*")
    if len(paths) > 1 and os.path.exists(output_file):
        candidates.append(output_file)
    return sorted(p for p in candidates if p not in paths and not is_bookkeeping_file(p))


def written_by_albert_tf(path: str, lock_existed: bool) -> bool:
    """Whether the shard file ``path`` (of this output, `stale_outputs`) is one an earlier
    albert-tf run wrote: its completion record names it and holds its size and sha256; or,
    without a record (a run killed between the rename and the record), the output's lock
    existed before this run (every run takes it before writing, `check_output_files`) and
    the file is TFRecords."""
    done = completion_record_path(path)
    if not os.path.exists(done):
        if not lock_existed:
            return False
        from albert_tf.data.input_checks import is_tfrecord
        try:
            with open(path, "rb") as f:
                return is_tfrecord(f.read(12))
        except OSError:
            return False
    record = read_json(done)
    if not isinstance(record, dict) or record.get("file") != os.path.basename(path):
        return False
    try:
        return os.path.getsize(path) == record.get("bytes") and \
            sha256_file(path) == record.get("sha256")
    except OSError:
        return False


def remove_stale_outputs(stale: list[str], lock_existed: bool) -> tuple[list[str], list[str]]:
    """Removes the shard files of an earlier ``--num_shards`` that albert-tf wrote
    (`written_by_albert_tf`), with their completion records: a glob of the output
    (``OUTPUT*``) would read them too, every record twice. ``(removed, kept)``: files it
    cannot tell albert-tf wrote are never touched."""
    removed, kept = [], []
    for path in stale:
        if not written_by_albert_tf(path, lock_existed):
            kept.append(path)
            continue
        for name in (path, completion_record_path(path)):
            try:
                os.remove(name)
            except FileNotFoundError:
                pass
        removed.append(path)
    return removed, kept


def lock_path(output_file: str) -> str:
    """``.<name>.lock`` beside ``output_file``: every run takes it before writing, so its
    presence also tells that albert-tf wrote the output files beside it."""
    directory, name = os.path.split(os.path.abspath(output_file))
    return os.path.join(directory, f".{name}.lock")


def check_output_files(output_file: str, paths: list[str], inputs: list[str]) -> None:
    """Refuses (`albert_tf.outputs.OutputError`, nothing touched) shard paths that are an
    input file, a directory, or files that exist though no albert-tf run ever took this
    output's lock (so albert-tf did not write them)."""
    from albert_tf.outputs import OutputError
    read = {os.path.realpath(f): f for f in inputs}
    for path in paths:
        if os.path.realpath(path) in read:
            raise OutputError(f"--output_file={output_file}: {path} is --input_file="
                              f"{read[os.path.realpath(path)]}; write the records elsewhere.")
        if os.path.isdir(path):
            raise OutputError(f"--output_file={output_file}: {path} is a directory; pass a "
                              "file path (shards are written beside it).")
    existing = [p for p in paths if os.path.lexists(p)]
    if existing and not os.path.exists(lock_path(output_file)):
        raise OutputError(f"--output_file={output_file}: {existing[0]} exists and albert-tf did "
                          "not write it; nothing was touched: pass a new output path.")


@contextlib.contextmanager
def output_lock(output_file: str):
    path = lock_path(output_file)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as f:
        try:
            import fcntl
        except ImportError:        # not POSIX: no lock
            yield
            return
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise CreationError(f"another albert-tf-create-pretraining-data is writing "
                                f"{output_file} (it holds {path})") from None
        yield


def shuffle_rng(seed: int, shard: int) -> random.Random:
    """The shuffle buffer's random stream of shard ``shard``."""
    return random.Random(f"albert-pretraining-shuffle:{seed}:{shard}")


class ShardWriter:
    """Writes one shard through a bounded shuffle buffer (a full buffer emits a random
    element for each new one) into a partial file ``.<name>.tmp-<pid>`` beside it;
    `finish` renames that to the shard's name."""

    def __init__(self, path: str, buffer_size: int, rng: random.Random):
        from albert_tf.backend import tf
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self.tmp = partial_path(path)
        self.writer = tf.io.TFRecordWriter(self.tmp)
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
        self.writer.write(record)
        self.count += 1

    def close(self) -> dict:
        """Flushes the buffer and closes the partial file (synced to disk); its facts."""
        self.rng.shuffle(self.buffer)
        for r in self.buffer:
            self._write(r)
        self.buffer = []
        self.writer.close()
        with open(self.tmp, "rb") as f:
            os.fsync(f.fileno())
        return {"records": self.count, "bytes": os.path.getsize(self.tmp),
                "sha256": sha256_file(self.tmp)}

    def abort(self) -> None:
        try:
            self.writer.close()
        finally:
            if os.path.exists(self.tmp):
                os.remove(self.tmp)
