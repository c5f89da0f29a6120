"""The TPU path up to the cluster resolver (mocked), and a clear error without a TPU."""

import subprocess
import sys
import os

import pytest

from albert_tf.training import distribute

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FakeResolver:
    calls = []

    def __init__(self, tpu=None):
        FakeResolver.calls.append(("resolve", tpu))


def test_tpu_path_resolves_connects_and_initializes(monkeypatch):
    events = []
    monkeypatch.setattr(distribute, "_check_reachable", lambda address: events.append(
        ("reachable", address)))
    monkeypatch.setattr(distribute.tf.config, "experimental_connect_to_cluster",
                        lambda resolver: events.append(("connect", resolver)))
    monkeypatch.setattr(distribute.tf.tpu.experimental, "initialize_tpu_system",
                        lambda resolver: events.append(("initialize", resolver)))
    sentinel = object()
    monkeypatch.setattr(distribute.tf.distribute, "TPUStrategy",
                        lambda resolver: (events.append(("strategy", resolver)), sentinel)[1])
    FakeResolver.calls = []
    strategy = distribute.get_strategy("tpu", tpu="grpc://10.0.0.2:8470",
                                       tpu_resolver_cls=FakeResolver)
    assert strategy is sentinel
    assert FakeResolver.calls == [("resolve", "grpc://10.0.0.2:8470")]
    assert [e[0] for e in events] == ["reachable", "connect", "initialize", "strategy"]
    # local / Colab TPU: no explicit connect
    events.clear()
    distribute.get_strategy("tpu", tpu="", tpu_resolver_cls=FakeResolver)
    assert [e[0] for e in events] == ["initialize", "strategy"]


def test_tpu_initialization_failure_is_clear(monkeypatch):
    def fail(resolver):
        raise RuntimeError("TPU system not found\n<deep stack>")
    monkeypatch.setattr(distribute.tf.tpu.experimental, "initialize_tpu_system", fail)
    with pytest.raises(distribute.DistributionError, match="could not be initialized"):
        distribute.get_strategy("tpu", tpu="local", tpu_resolver_cls=FakeResolver)


def test_resolver_failure_is_clear():
    class NoTpu:
        def __init__(self, tpu=None):
            raise ValueError("Please provide a TPU Name to connect to.")
    with pytest.raises(distribute.DistributionError) as e:
        distribute.get_strategy("tpu", tpu="my-tpu", tpu_resolver_cls=NoTpu)
    assert "no TPU could be resolved" in str(e.value) and "my-tpu" in str(e.value)


def test_unreachable_tpu_address_is_clear():
    with pytest.raises(distribute.DistributionError, match="not reachable"):
        distribute.get_strategy("tpu", tpu="grpc://127.0.0.1:1", tpu_resolver_cls=FakeResolver)


def test_unknown_strategy_and_bad_tf_config(monkeypatch):
    with pytest.raises(distribute.DistributionError, match="gpu_farm"):
        distribute.get_strategy("gpu_farm")
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(distribute.DistributionError, match="TF_CONFIG"):
        distribute.read_tf_config()


@pytest.mark.slow
def test_binary_without_tpu_fails_with_one_clear_line(tmp_path):
    """The real resolver on a machine without a TPU: exit 2, no traceback."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.pretrain", "--distribution_strategy=tpu",
         f"--model_dir={tmp_path}", "--train_files=unused",
         "--config_file=tiny_ci"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "error: --distribution_strategy=tpu: no TPU could be resolved" in result.stderr
