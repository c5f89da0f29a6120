"""Pretraining input through the tf.data service (`albert_tf.data.data_service`): a dispatcher
and workers started in this process on 127.0.0.1 (free ports) run the dynamic-masking and
TFRecord pipelines; the trainer's side gets the elements of the pipeline run without the
service.

Order: with one worker, the same batches in the same order (the worker runs the one
pipeline, taking the source's splits, the epochs, in turn). With two workers, the same
instances as a multiset: in ``distributed_epoch`` mode each split (epoch) is processed by
one worker, every draw depends on the seed, the epoch and the document only, so the content
of an epoch is fixed, but which worker answers first, and so the order and the batch
boundaries, is not.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from albert_tf.backend import tf
from albert_tf.data import data_service
from albert_tf.data import dynamic_masking as dm
from albert_tf.data.pretraining_data import PretrainingConfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ, PRED = 64, 10
CONFIG = PretrainingConfig(max_seq_length=SEQ, max_predictions_per_seq=PRED)
DOCS = 40


def _servers(workers: int):
    service = tf.data.experimental.service
    dispatcher = service.DispatchServer(service.DispatcherConfig(port=0))
    address = dispatcher.target.split("://", 1)[1]
    started = [service.WorkerServer(service.WorkerConfig(
        dispatcher_address=address, port=0, heartbeat_interval_ms=100))
        for _ in range(workers)]
    return dispatcher, started


@pytest.fixture(scope="module")
def one_worker():
    dispatcher, workers = _servers(1)
    yield dispatcher.target
    for server in workers + [dispatcher]:
        server.stop()


@pytest.fixture(scope="module")
def two_workers():
    dispatcher, workers = _servers(2)
    yield dispatcher.target
    for server in workers + [dispatcher]:
        server.stop()


@pytest.fixture(scope="module")
def corpus(data_dir, tmp_path_factory):
    """``DOCS`` IMDB reviews as one blank-line separated file."""
    docs, current = [], []
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                current.append(line.rstrip("\n"))
            elif current:
                docs.append("\n".join(current))
                current = []
                if len(docs) >= DOCS:
                    break
    path = tmp_path_factory.mktemp("text") / "imdb.txt"
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def masker():
    return dm.DynamicMasker(VOCAB, CONFIG)


def _text(corpus, masker, **kwargs):
    return dm.text_pretraining_dataset(corpus, VOCAB, 8, CONFIG, seed=5, shuffle_buffer=32,
                                       masker=masker, **kwargs)


def _rows(batches) -> list[bytes]:
    """Every instance of ``batches`` as one byte string (all features), sorted."""
    rows = []
    for b in batches:
        keys = sorted(b)
        for i in range(len(b[keys[0]])):
            rows.append(b"".join(np.ascontiguousarray(b[k][i]).tobytes() for k in keys))
    return sorted(rows)


@pytest.mark.slow
def test_one_worker_same_batches_same_order(corpus, masker, one_worker):
    """Training (shuffled, repeating): the service's first batches are the local ones."""
    local = list(_text(corpus, masker).take(12).as_numpy_iterator())
    served = list(_text(corpus, masker, data_service=one_worker).take(12)
                  .as_numpy_iterator())
    assert len(served) == 12
    for a, b in zip(local, served):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


@pytest.mark.slow
def test_two_workers_same_instances(corpus, masker, two_workers):
    """Two epochs (two splits) over two workers: the same instances, any order."""
    local = list(_text(corpus, masker, is_training=False, num_epochs=2).as_numpy_iterator())
    served = list(_text(corpus, masker, is_training=False, num_epochs=2,
                        data_service=two_workers).as_numpy_iterator())
    assert len(_rows(local)) > 2 * DOCS
    assert _rows(served) == _rows(local)


def test_records_through_the_service(tmp_path, one_worker):
    from albert_tf.data.pretraining import pretraining_dataset
    from tests.training_fixtures import write_pretraining_tfrecords
    path = write_pretraining_tfrecords(str(tmp_path / "x.tfrecord"), num_examples=40,
                                       seq_length=SEQ, max_predictions=PRED)
    local = list(pretraining_dataset(path, 8, SEQ, PRED, is_training=False)
                 .as_numpy_iterator())
    served = list(pretraining_dataset(path, 8, SEQ, PRED, is_training=False,
                                      data_service=one_worker).as_numpy_iterator())
    assert _rows(served) == _rows(local) and len(served) == 5


@pytest.mark.slow
def test_pretraining_steps_through_the_service(tmp_path, corpus, one_worker, monkeypatch):
    """task.train_data.data_service reaches the pipeline: albert-tf-pretrain's config, a
    few steps, every training batch from the service."""
    from albert_tf.bin.pretrain import defaults
    from albert_tf.training.experiment_config import build_experiment
    from albert_tf.training.trainer import run_experiment
    calls = []
    real = data_service.apply
    monkeypatch.setattr(data_service, "apply",
                        lambda ds, address, job="": calls.append((address, job))
                        or real(ds, address, job))
    address = one_worker.split("://", 1)[1]           # host:port is accepted too
    config = build_experiment(defaults(), ["tiny_ci"], [
        f"model_dir={tmp_path}", f"task.train_data.input_path={corpus}",
        "task.train_data.source=text", "task.train_data.shuffle_buffer=32",
        f"task.train_data.data_service={address}", f"task.vocab_file={VOCAB}",
        "trainer.train_steps=4", "trainer.steps_per_loop=2", "trainer.checkpoint_interval=4"])
    assert config.task.train_data.data_service == one_worker
    result = run_experiment(config, "train")
    assert calls == [(one_worker, "")]
    assert result["step"] == 4 and np.isfinite(result["train"]["mlm_loss"])


def test_shared_job_name_with_several_input_pipelines():
    from albert_tf.training.experiment_config import ExperimentConfig
    from albert_tf.training.tasks import PretrainingTask
    config = ExperimentConfig(model_dir="/runs/wiki")
    data = config.task.train_data
    data.data_service = "grpc://dispatcher:5050"
    task = PretrainingTask.__new__(PretrainingTask)
    task.config = config
    assert task._data_service(data, None) == {"data_service": data.data_service,
                                              "data_service_job_name": ""}
    many = tf.distribute.InputContext(4, 1, 4)
    assert task._data_service(data, many)["data_service_job_name"] == "albert_tf-wiki-train"
    data.data_service_job_name = "mine"
    assert task._data_service(data, many)["data_service_job_name"] == "mine"


@pytest.mark.parametrize("address, why", [
    ("dispatcher", "not grpc://HOST:PORT"), ("grpc://dispatcher", "not grpc://HOST:PORT"),
    ("http://dispatcher:5050", "protocol 'http'"), ("grpc://dispatcher:70000", "port 70000"),
    ("grpc://dispatcher:5050/x", "not grpc://HOST:PORT")])
def test_bad_address_is_one_line(address, why):
    from albert_tf.training.experiment_config import ConfigValueError, build_experiment
    with pytest.raises(ConfigValueError) as info:
        build_experiment(params_overrides=[f"task.train_data.data_service={address}"])
    message = str(info.value)
    assert "\n" not in message and "task.train_data.data_service" in message and why in message


def test_address_forms():
    check = data_service.check_address
    assert check("k", "grpc://10.0.0.2:5050") == "grpc://10.0.0.2:5050"
    assert check("k", "localhost:1") == "grpc://localhost:1"
    assert check("k", "grpc://[::1]:5050") == "grpc://[::1]:5050"
