"""Reading pretraining TFRecords (``albert-tf-create-pretraining-data``) into model batches.

    ds = pretraining_dataset("out/pretrain/imdb.tfrecord*", batch_size=64, max_seq_length=128,
                             max_predictions_per_seq=20, seed=0)
    # dict: input_word_ids, input_mask, input_type_ids [B, S] int32; masked_lm_positions,
    #       masked_lm_ids [B, P] int32, masked_lm_weights [B, P] float32;
    #       next_sentence_labels [B] int32

``batch_size`` is the global batch size; with an ``input_context`` each input pipeline gets
its own files (or every n-th record when there are fewer files than pipelines) and batches
of ``input_context.get_per_replica_batch_size(batch_size)``.

Files are checked before TensorFlow reads them: a missing file, a file whose TFRecord framing
is broken (truncated, not a TFRecord) or whose first record does not have the expected
features raises ``PretrainingDataError`` naming the file; so does a file whose size or record
count differs from its completion record (``.NAME.done.json``, written by the creator), which
catches a shard cut at a record boundary. Empty shards are skipped (an error if every file is
empty); the creator's bookkeeping files (completion records, partial ``.NAME.tmp-PID`` files
of a run in progress or killed) are never read as data, even when a glob matches them.
"""

from __future__ import annotations

import json
import os
import struct

from albert_tf.backend import tf
from albert_tf.data.input_checks import crc32c, masked_crc32c  # noqa: F401  (re-exported)
from albert_tf.data.pretraining_shards import completion_record_path, is_bookkeeping_file

RERUN = ("rerun albert-tf-create-pretraining-data with the same flags: it rewrites damaged "
         "or unfinished shards")


class PretrainingDataError(ValueError):
    """A missing, empty or corrupt pretraining data file."""


# -- TFRecord framing check (no TensorFlow needed; the CRC is `albert_tf.data.input_checks`'s)


def check_tfrecord_framing(path: str, max_records: int | None = None) -> int:
    """Walks the record headers of ``path`` (seeking over the payloads); returns the number of
    records. Raises ``PretrainingDataError`` for a truncated or non-TFRecord file."""
    if not os.path.isfile(path):
        raise PretrainingDataError(f"pretraining data file not found: {path}")
    size = os.path.getsize(path)
    count = 0
    with open(path, "rb") as f:
        offset = 0
        while offset < size:
            if max_records is not None and count >= max_records:
                break
            header = f.read(12)
            if len(header) < 12:
                raise PretrainingDataError(
                    f"corrupt TFRecord file {path}: truncated record header at byte {offset}; "
                    f"{RERUN}")
            length_bytes, (length_crc,) = header[:8], struct.unpack("<I", header[8:])
            if masked_crc32c(length_bytes) != length_crc:
                raise PretrainingDataError(
                    f"corrupt TFRecord file {path}: bad record length checksum at byte "
                    f"{offset} (not a TFRecord file, or damaged); {RERUN}")
            (length,) = struct.unpack("<Q", length_bytes)
            end = offset + 12 + length + 4
            if end > size:
                raise PretrainingDataError(
                    f"corrupt TFRecord file {path}: record at byte {offset} needs {length} "
                    f"bytes, file ends at {size} (truncated); {RERUN}")
            f.seek(end)
            offset = end
            count += 1
    return count


# -- features ---------------------------------------------------------------------------------

def feature_spec(max_seq_length: int, max_predictions_per_seq: int) -> dict:
    s, p = max_seq_length, max_predictions_per_seq
    return {
        "input_ids": tf.io.FixedLenFeature([s], tf.int64),
        "input_mask": tf.io.FixedLenFeature([s], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([s], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([p], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([p], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([p], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def _to_model_inputs(parsed: dict) -> dict:
    def i32(x):
        return tf.cast(x, tf.int32)
    return {
        "input_word_ids": i32(parsed["input_ids"]),
        "input_mask": i32(parsed["input_mask"]),
        "input_type_ids": i32(parsed["segment_ids"]),
        "masked_lm_positions": i32(parsed["masked_lm_positions"]),
        "masked_lm_ids": i32(parsed["masked_lm_ids"]),
        "masked_lm_weights": parsed["masked_lm_weights"],
        "next_sentence_labels": i32(parsed["next_sentence_labels"])[..., 0],
    }


def check_first_record(path: str, max_seq_length: int, max_predictions_per_seq: int) -> None:
    """Parses the first record of ``path`` with the expected feature spec."""
    spec = feature_spec(max_seq_length, max_predictions_per_seq)
    try:
        for record in tf.data.TFRecordDataset(path).take(1):
            tf.io.parse_single_example(record, spec)
    except (tf.errors.OpError, ValueError) as e:
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PretrainingDataError(
            f"pretraining data file {path} does not match max_seq_length={max_seq_length}, "
            f"max_predictions_per_seq={max_predictions_per_seq} or is corrupt: {message}"
        ) from None


def resolve_files(file_pattern: str | list[str]) -> list[str]:
    patterns = file_pattern if isinstance(file_pattern, (list, tuple)) else str(file_pattern).split(",")
    files: list[str] = []
    for pattern in patterns:
        pattern = pattern.strip()
        if not pattern:
            continue
        matches = sorted(tf.io.gfile.glob(pattern))
        if not matches:
            raise PretrainingDataError(f"pretraining data file not found: {pattern}")
        data = [m for m in matches if not is_bookkeeping_file(m)]
        if not data:
            raise PretrainingDataError(
                f"pretraining data file not found: {pattern} (it matches only bookkeeping "
                f"files of albert-tf-create-pretraining-data: {', '.join(matches[:3])})")
        matches = data
        files.extend(m for m in matches if m not in files)
    if not files:
        raise PretrainingDataError("no pretraining data files given")
    return files


def check_completion_record(path: str, records: int) -> None:
    """Compares ``path`` (``records`` records) with its completion record, if it has one."""
    done = completion_record_path(path)
    if not os.path.exists(done):
        return
    try:
        with open(done, encoding="utf-8") as f:
            expected = json.load(f)
        expected_bytes, expected_records = int(expected["bytes"]), int(expected["records"])
    except (OSError, ValueError, KeyError, TypeError):
        raise PretrainingDataError(f"unreadable completion record {done} of {path}; {RERUN}"
                                   ) from None
    size = os.path.getsize(path)
    if size != expected_bytes or records != expected_records:
        raise PretrainingDataError(
            f"pretraining data file {path} has {records} records ({size} bytes), its "
            f"completion record {os.path.basename(done)} says {expected_records} "
            f"({expected_bytes} bytes): truncated or replaced; {RERUN}")


def validate_files(files: list[str], max_seq_length: int, max_predictions_per_seq: int
                   ) -> list[str]:
    """The files holding records (empty shards are dropped); raises for bad ones."""
    nonempty = []
    for path in files:
        records = check_tfrecord_framing(path)
        check_completion_record(path, records)
        if records:
            check_first_record(path, max_seq_length, max_predictions_per_seq)
            nonempty.append(path)
    if not nonempty:
        raise PretrainingDataError(f"no records in the pretraining data files: {', '.join(files)}")
    return nonempty


def pretraining_dataset(file_pattern: str, batch_size: int, max_seq_length: int,
                        max_predictions_per_seq: int, is_training: bool = True,
                        seed: int | None = None,
                        input_context: tf.distribute.InputContext | None = None,
                        shuffle_buffer: int = 10_000, validate: bool = True,
                        data_service: str = "",
                        data_service_job_name: str = "") -> tf.data.Dataset:
    """Batches of pretraining inputs (see the module docstring); repeats when training.
    ``data_service``: a tf.data service dispatcher (``grpc://host:port``) that runs the
    pipeline up to the batches (`albert_tf.data.data_service`: no sharding by
    ``input_context`` then, one shared job ``data_service_job_name``)."""
    files = resolve_files(file_pattern)
    if validate:
        files = validate_files(files, max_seq_length, max_predictions_per_seq)
    spec = feature_spec(max_seq_length, max_predictions_per_seq)
    per_replica = batch_size
    shard_records = None
    ds = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None:
        per_replica = input_context.get_per_replica_batch_size(batch_size)
    if input_context is not None and not data_service:
        n, i = input_context.num_input_pipelines, input_context.input_pipeline_id
        if len(files) >= n:
            ds = ds.shard(n, i)
        else:
            shard_records = (n, i)
    if is_training:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 8),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shard_records is not None:
        ds = ds.shard(*shard_records)
    if is_training:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(per_replica, drop_remainder=is_training)
    ds = ds.map(lambda records: _to_model_inputs(tf.io.parse_example(records, spec)),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    options = tf.data.Options()
    options.deterministic = True
    ds = ds.with_options(options)
    if data_service:
        from albert_tf.data import data_service as service
        ds = service.apply(ds, data_service, data_service_job_name)
    return ds.prefetch(tf.data.AUTOTUNE)


def synthetic_batch(config, batch_size: int, seq_length: int, max_predictions: int,
                    seed: int = 0) -> dict:
    """One random pretraining batch of numpy arrays in `pretraining_dataset`'s layout, for
    timing the training step without an input pipeline: ``input_word_ids`` /
    ``input_mask`` / ``input_type_ids`` [batch_size, seq_length] int32 (``[CLS]`` first,
    masked positions set to ``[MASK]``), ``masked_lm_positions`` / ``masked_lm_ids``
    [batch_size, max_predictions] int32, ``masked_lm_weights`` [batch_size,
    max_predictions] float32 and ``next_sentence_labels`` [batch_size] int32; ids below
    ``config.vocab_size``."""
    import numpy as np
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, config.vocab_size, size=(batch_size, seq_length)).astype(np.int32)
    ids[:, 0] = 2
    mask = np.ones_like(ids)
    types = (np.arange(seq_length)[None, :] >= seq_length // 2).astype(np.int32).repeat(
        batch_size, 0)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq_length), max_predictions,
                                             replace=False) for _ in range(batch_size)]),
                        axis=1).astype(np.int32)
    masked_ids = np.take_along_axis(ids, positions, axis=1)
    np.put_along_axis(ids, positions, 4, axis=1)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types,
            "masked_lm_positions": positions, "masked_lm_ids": masked_ids,
            "masked_lm_weights": np.ones(positions.shape, np.float32),
            "next_sentence_labels": rng.randint(0, 2, size=batch_size).astype(np.int32)}
