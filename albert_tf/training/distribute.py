"""Distribution strategies: one factory, one training code path for every device set-up.

``one_device``             the CPU, or GPU 0 with ``num_gpus >= 1``
``mirrored``               synchronous data parallelism over ``num_gpus`` GPUs, or over
                           ``num_cpu_devices`` logical CPU devices when there is no GPU
``multi_worker_mirrored``  synchronous data parallelism over the workers of ``TF_CONFIG``
                           (collective all-reduce); every worker runs the same command
``tpu``                    a Cloud/Colab TPU: only adds `TPUClusterResolver`, the
                           connection to the cluster and TPU system initialization

The runtime settings that TF only accepts before it initializes its devices
(logical CPU devices, thread pools) are applied by `configure_runtime`, which the
binaries call first.
"""

from __future__ import annotations

import json
import logging
import os
import socket

from albert_tf.backend import tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


class DistributionError(RuntimeError):
    """The requested distribution strategy cannot be set up here; the message says why."""


def configure_runtime(num_cpu_devices: int = 1, intra_op_threads: int = 0,
                      inter_op_threads: int = 0, deterministic: bool = False) -> None:
    """Applies device/thread settings; must run before TF initializes its devices."""
    try:
        if intra_op_threads:
            tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
        if inter_op_threads:
            tf.config.threading.set_inter_op_parallelism_threads(inter_op_threads)
        if num_cpu_devices and num_cpu_devices > 1:
            cpus = tf.config.list_physical_devices("CPU")
            current = tf.config.get_logical_device_configuration(cpus[0])
            if not current or len(current) != num_cpu_devices:
                tf.config.set_logical_device_configuration(
                    cpus[0], [tf.config.LogicalDeviceConfiguration()] * num_cpu_devices)
    except RuntimeError as e:
        have = len(tf.config.list_logical_devices("CPU"))
        if num_cpu_devices > 1 and have != num_cpu_devices:
            raise DistributionError(
                f"runtime.num_cpu_devices={num_cpu_devices} must be set before TensorFlow "
                f"initializes its devices (it already has {have} CPU device(s)): {e}") from e
    if deterministic:
        tf.config.experimental.enable_op_determinism()


def read_tf_config() -> dict:
    """The parsed ``TF_CONFIG`` (``{}`` when unset), with a clear error when malformed."""
    raw = os.environ.get("TF_CONFIG", "")
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise DistributionError(f"TF_CONFIG is not valid JSON ({e}); expected e.g. "
                                '{"cluster": {"worker": ["host:port", ...]}, '
                                '"task": {"type": "worker", "index": 0}}.') from e
    cluster = value.get("cluster", {})
    task = value.get("task", {})
    if not cluster.get("worker") and not cluster.get("chief"):
        raise DistributionError("TF_CONFIG has no cluster.worker list: " + raw)
    if "type" not in task or "index" not in task:
        raise DistributionError("TF_CONFIG has no task.type/task.index: " + raw)
    return value


def _check_reachable(address: str, timeout: float = 10.0) -> None:
    """Fails fast (instead of TF waiting forever) when a grpc:// TPU address is unreachable."""
    host_port = address[len("grpc://"):]
    host, _, port = host_port.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as e:
        raise DistributionError(
            f"--distribution_strategy=tpu: the TPU address {address!r} is not reachable "
            f"({type(e).__name__}: {e}). Check --tpu (grpc://host:port of the TPU worker) "
            "and the network.") from None


def _tpu_strategy(tpu: str, resolver_cls=None):
    """Resolves, connects to and initializes a TPU; clear `DistributionError` without one."""
    resolver_cls = resolver_cls or tf.distribute.cluster_resolver.TPUClusterResolver
    address = tpu or ""
    try:
        resolver = resolver_cls(tpu=address) if address else resolver_cls()
    except Exception as e:  # noqa: BLE001 - TF raises ValueError/RuntimeError/others.
        raise DistributionError(
            f"--distribution_strategy=tpu: no TPU could be resolved at "
            f"{address or '(local/Colab default)'!r}: {type(e).__name__}: {e}. "
            "Attach a TPU runtime (Colab: Runtime > Change runtime type > TPU) or pass "
            "--tpu=<name or grpc://host:port>; use --distribution_strategy=one_device or "
            "mirrored to train on CPU/GPU.") from None
    if address.startswith("grpc://"):
        _check_reachable(address)
    try:
        if address not in ("", "local"):
            tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except Exception as e:  # noqa: BLE001
        raise DistributionError(
            f"--distribution_strategy=tpu: the TPU at {address or 'local'!r} was resolved "
            f"but could not be initialized: {type(e).__name__}: {str(e).splitlines()[0]}. "
            "Is the TPU reachable and not in use by another process?") from None
    return tf.distribute.TPUStrategy(resolver)


def get_strategy(distribution_strategy: str = "one_device", num_gpus: int = 0, tpu: str = "",
                 num_cpu_devices: int = 1, tpu_resolver_cls=None) -> tf.distribute.Strategy:
    """The `tf.distribute.Strategy` for a ``runtime.distribution_strategy`` name.

    Args:
      distribution_strategy: one of `STRATEGIES`.
      num_gpus: GPUs to use (0 = CPU).
      tpu: TPU address for ``tpu``.
      num_cpu_devices: logical CPU devices (set by `configure_runtime`) that
        ``mirrored`` uses as replicas when ``num_gpus == 0``.
      tpu_resolver_cls: the cluster resolver class (tests inject a fake one).
    """
    name = (distribution_strategy or "one_device").lower()
    if name not in STRATEGIES:
        raise DistributionError(f"--distribution_strategy={distribution_strategy!r} is not one "
                                f"of {list(STRATEGIES)}.")
    gpus = tf.config.list_physical_devices("GPU")
    if num_gpus > len(gpus):
        raise DistributionError(f"--num_gpus={num_gpus} but only {len(gpus)} GPU(s) are visible "
                                f"({[g.name for g in gpus]}).")
    if name == "tpu":
        return _tpu_strategy(tpu, tpu_resolver_cls)
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if num_gpus >= 1 else "/cpu:0")
    if name == "mirrored":
        if num_gpus >= 1:
            devices = [f"/gpu:{i}" for i in range(num_gpus)]
        else:
            cpus = tf.config.list_logical_devices("CPU")
            if num_cpu_devices > 1 and len(cpus) < num_cpu_devices:
                raise DistributionError(
                    f"runtime.num_cpu_devices={num_cpu_devices} but TF has {len(cpus)} CPU "
                    "device(s); configure_runtime must run before TF initializes.")
            devices = [f"/cpu:{i}" for i in range(max(1, min(num_cpu_devices, len(cpus))))]
        return tf.distribute.MirroredStrategy(devices=devices)
    # multi_worker_mirrored
    tf_config = read_tf_config()
    if not tf_config:
        logging.warning("multi_worker_mirrored without TF_CONFIG: running as a single worker.")
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING)
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the worker that writes checkpoints, summaries and exports."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type in (None, "chief"):
        return True
    has_chief = "chief" in (resolver.cluster_spec().as_dict() or {})
    return task_type == "worker" and task_id == 0 and not has_chief


def worker_id(strategy: tf.distribute.Strategy) -> int:
    resolver = getattr(strategy, "cluster_resolver", None)
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and resolver is not None:
        return int(resolver.task_id or 0)
    return 0
