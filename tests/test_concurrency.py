"""Concurrency of the served model (bounded version of `albert_tf.benchmark.concurrency`,
``make figures NAME=concurrency``).

The SavedModel's ``serving_default`` from 8 threads and ONE shared `TFLiteRunner` from 4
threads, on fixed batches of SST-2 dev sentences: every answer must equal the single-threaded
answer of the same batch (labels exactly, probabilities within 1e-6; the module's docstring
says why), and memory must stay flat.

Memory bound: RSS at the end minus RSS after a 1 s warm-up (when TF's kernels and caches and
every thread's interpreter exist) must stay under 64 MB. The tiny model's whole footprint
beyond TensorFlow is a few MB, so a per-call leak of anything model-sized (an interpreter, a
graph, a batch of activations) over the ~1000s of calls made here shows as hundreds of MB,
while allocator noise of a busy shared machine stays well below it. Small per-call leaks are
the job of the 60 s script (its RSS slope). No assertion on speed.
"""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

MAX_GROWTH_MB = 64


@pytest.fixture(scope="module")
def bench():
    from albert_tf.benchmark import concurrency
    return concurrency


@pytest.fixture(scope="module")
def batches(bench, data_dir):
    from albert_tf.data.task_data import split_texts
    sentences = split_texts("sst2", "dev", data_dir)[0]
    return bench.fixed_batches(sentences, num_batches=32, max_batch=6)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    # seq 32 (SST-2 dev: mean 30 ids, longer sentences truncate), TFLite buckets 16 and 32 of
    # static batch 2: the runner's bucketing, batching and padding all run under threads.
    # The benchmark's `build_exports`, built once per session and shared read-only with the
    # serving tests (tests/serving_models.py).
    from serving_models import SEQ, TFLITE_BATCH, TFLITE_LENGTHS, served_head
    assert (SEQ, TFLITE_LENGTHS, TFLITE_BATCH) == (32, [16, 32], 2)
    built = served_head(tmp_path_factory, "classification")
    return {"model_dir": built["model_dir"], "saved_model": built["path"],
            "tflite": built["tflite"]}


def _check(result, threads):
    assert result["errors"] == 0, result["examples"]
    assert result["mismatches"] == 0, result["examples"]
    assert all(n > 0 for n in result["calls_per_thread"]), result["calls_per_thread"]
    assert result["calls"] == sum(result["calls_per_thread"]) and result["threads"] == threads
    assert result["rss_growth_after_warmup_mb"] < MAX_GROWTH_MB, result["rss_samples_mb"]


@pytest.mark.slow
def test_saved_model_serving_default_from_8_threads(bench, exports, batches):
    call = bench.saved_model_caller(exports["saved_model"])
    refs = bench.references(call, batches)
    result = bench.stress(call, batches, refs, threads=8, seconds=5, atol=1e-6, warmup=1,
                          sample_every=1)
    _check(result, 8)


@pytest.mark.slow
def test_one_tflite_runner_shared_by_4_threads(bench, exports, batches):
    from albert_tflite.runner import TFLiteRunner
    runner = TFLiteRunner(exports["tflite"], num_threads=1)
    call = bench.tflite_caller(runner)
    refs = bench.references(call, batches)
    result = bench.stress(call, batches, refs, threads=4, seconds=4, atol=1e-6, warmup=1,
                          sample_every=1)
    _check(result, 4)


@pytest.mark.slow
def test_tflite_runner_interpreter_per_thread_freed_with_thread(exports, batches):
    """Each thread gets its own interpreter (never the constructing thread's); it goes away
    with the thread; answers equal the constructing thread's."""
    from albert_tflite.runner import TFLiteRunner
    runner = TFLiteRunner(exports["tflite"], num_threads=1)
    texts = [t for b in batches[:4] for t in b]
    expected = runner.predict(texts)
    main = runner.interpreter
    seen, refs, answers = [], [], []
    lock = threading.Lock()

    def work():
        answer = runner.predict(texts)
        interpreter = runner.interpreter
        assert runner.interpreter is interpreter   # stable within the thread
        with lock:
            seen.append(id(interpreter))
            refs.append(weakref.ref(interpreter))
            answers.append(answer)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 3 and all(a == expected for a in answers)
    assert len(set(seen)) == 3 and id(main) not in seen
    answers.clear()   # (the answers hold no interpreter; dropped all the same)
    gc.collect()
    assert all(r() is None for r in refs), "a finished thread's interpreter is still alive"
    assert runner.interpreter is main and runner.predict(texts) == expected
