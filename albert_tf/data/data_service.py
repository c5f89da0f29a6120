"""Pretraining input through the tf.data service: masking on CPU hosts, training elsewhere.

An input-bound run (dynamic masking for a pod of accelerators, say) moves the input
pipeline to a `tf.data service <https://www.tensorflow.org/api_docs/python/tf/data/experimental/service>`_:
a dispatcher and any number of workers on CPU hosts run it; the trainers only fetch batches.
Set ``task.train_data.data_service`` (and ``validation_data``'s, if wanted) to the
dispatcher's address::

    python -m albert_tf.data.data_service dispatcher --port=5050          # one host
    python -m albert_tf.data.data_service worker --dispatcher=HOST:5050 --port=5051  # each CPU host
    albert-tf-pretrain ... --train_source=text \\
        --params_override=task.train_data.data_service=grpc://HOST:5050

What runs where (`apply`): the whole per-example pipeline of
`albert_tf.data.dynamic_masking.text_pretraining_dataset` (or of the TFRecord reader,
`albert_tf.data.pretraining.pretraining_dataset`), up to and including the per-replica
batching, runs on the workers; the trainers' side keeps only the ``prefetch``. This is where
TF Model Garden's ``InputReader`` applies ``tf_data_service_address`` by default (after
batching, before prefetching): one RPC carries a batch, not an instance.

Processing mode ``distributed_epoch`` (`tf.data.experimental.service.ShardingPolicy.DYNAMIC`),
not Model Garden's ``parallel_epochs``: our pipelines are seeded (every draw of dynamic
masking is a stateless op keyed by the seed, the epoch, the file and the document), so
``parallel_epochs``, where every worker runs the whole pipeline, would send each batch once
per worker; Model Garden avoids that by dropping the seed. In ``distributed_epoch`` the
dispatcher hands out the pipeline's source splits (the epochs of the text source, each one
re-chunked and re-masked; the files of the TFRecord source) one at a time, so each is
processed by exactly one worker: the instances of an epoch are those of the run without the
service (a function of the seed), and with one worker so is their order; with several, the
order depends on which worker answers first. Batches are made per worker.

Sharding: with the service the trainers do not shard by their `tf.distribute.InputContext`
(every trainer builds the same pipeline, with per-replica batches) but read from one shared
job (``data_service_job_name``; with several input pipelines the task's default is
``albert_tf-<model_dir name>-<split>``, with one an anonymous job), whose elements go to one
trainer each (first come, first served). A resumed run does not skip the batches it trained
on (`albert_tf.training.trainer`): it rejoins a named job where the job is, or starts an
anonymous one from the first epoch.

Workers need what the pipeline reads: the text or TFRecord paths (shared storage, e.g.
``gs://``) and the ops it uses (tensorflow-text: the worker command imports it). The
vocabulary travels inside the graph.
"""

from __future__ import annotations

import re
import sys

PROTOCOLS = ("grpc",)
MODE = "distributed_epoch"
_ADDRESS = re.compile(r"^(?:(?P<protocol>[a-z][a-z0-9+.-]*)://)?(?P<host>\[[0-9a-fA-F:.]+\]|"
                      r"[A-Za-z0-9_.-]+):(?P<port>[0-9]+)$")


def check_address(key: str, address: str) -> str:
    """``address`` (``grpc://host:port`` or ``host:port``) normalized to
    ``grpc://host:port``; ``ValueError`` (one line naming ``key``) otherwise."""
    text = str(address).strip()
    match = _ADDRESS.match(text)
    why = ""
    if not match:
        why = "not grpc://HOST:PORT"
    elif (match["protocol"] or "grpc") not in PROTOCOLS:
        why = f"protocol {match['protocol']!r} is not one of {', '.join(PROTOCOLS)}"
    elif not 0 < int(match["port"]) < 65536:
        why = f"port {match['port']} is not in 1-65535"
    if why:
        raise ValueError(f"{key}={address!r}: {why}: the tf.data service dispatcher's "
                         "address, e.g. grpc://dispatcher:5050 ('' = no service)")
    return f"grpc://{match['host']}:{match['port']}"


def apply(dataset, address: str, job_name: str = ""):
    """``dataset`` processed by the tf.data service at ``address`` (`check_address`), in
    ``distributed_epoch`` mode; ``job_name`` shares one job between the trainers ('' = an
    anonymous job of this iterator's own)."""
    from albert_tf.backend import tf
    return dataset.apply(tf.data.experimental.service.distribute(
        processing_mode=MODE, service=check_address("data_service", address),
        job_name=job_name or None))


def main(argv=None) -> int:
    """``dispatcher --port=P`` or ``worker --dispatcher=HOST:P --port=Q``: runs a tf.data
    service server until killed (the worker with tensorflow-text loaded)."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m albert_tf.data.data_service",
                                description=main.__doc__.split(":")[0])
    p.add_argument("role", choices=("dispatcher", "worker"))
    p.add_argument("--port", type=int, default=0, help="0: a free port")
    p.add_argument("--dispatcher", default="", help="worker: the dispatcher's HOST:PORT")
    p.add_argument("--worker_address", default="",
                   help="worker: HOST:%%port the dispatcher and trainers reach it by "
                        "(default: localhost)")
    p.add_argument("--work_dir", default="",
                   help="dispatcher: a directory for its journal (fault tolerance)")
    args = p.parse_args(argv)
    from albert_tf.backend import tf
    import tensorflow_text  # noqa: F401  (the ops of the text pipeline)
    service = tf.data.experimental.service
    if args.role == "dispatcher":
        server = service.DispatchServer(service.DispatcherConfig(
            port=args.port, work_dir=args.work_dir or None,
            fault_tolerant_mode=bool(args.work_dir)))
        print(f"dispatcher: {server.target}", flush=True)
    else:
        if not args.dispatcher:
            p.error("worker needs --dispatcher=HOST:PORT")
        dispatcher = check_address("--dispatcher", args.dispatcher).split("://", 1)[1]
        config = dict(dispatcher_address=dispatcher, port=args.port)
        if args.worker_address:
            config["worker_address"] = args.worker_address
        server = service.WorkerServer(service.WorkerConfig(**config))
        print(f"worker of {dispatcher} on port {args.port or '(free)'}", flush=True)
    server.join()
    return 0


__all__ = ["MODE", "apply", "check_address"]

if __name__ == "__main__":
    sys.exit(main())
