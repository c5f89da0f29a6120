"""The latency target: the shapes it may choose, the search over their timings, the cache,
the one-line refusals, and (slow) a real search timed with LiteRT."""

import json

import pytest

from albert_tf.compression import speedup
from albert_tf.compression.compression_config import (CompressionConfigError, SpeedupConfig,
                                                     build_compression_config)
from albert_tf.compression.speedup_space import (Shape, candidates, check_space, flops,
                                                 full_shape, int8_targets)
from albert_tf.config import load_config


def mini():
    return load_config("albert_mini")           # L4, N2, I512


def test_candidates_are_every_allowed_shape_but_the_full_one_most_flops_first():
    config = mini()
    shapes = candidates(config, SpeedupConfig())
    assert len(shapes) == 4 * 2 * 8 - 1 and full_shape(config) not in shapes
    costs = [flops(config, s, 128) for s in shapes]
    assert costs == sorted(costs, reverse=True)
    only_ffn = candidates(config, SpeedupConfig(parts=["ffn"], ffn_steps=4))
    assert [s.intermediate_size for s in only_ffn] == [384, 256, 128]
    assert {(s.num_layers, s.num_heads) for s in only_ffn} == {(4, 2)}


def test_a_shape_round_trips_through_the_structured_fractions():
    from albert_tf.compression.compression_config import (StructuredConfig,
                                                         structured_stage_config)
    config = mini()
    for shape in candidates(config, SpeedupConfig())[::7]:
        cfg = shape.structured(config, StructuredConfig())
        reduced = structured_stage_config(config, cfg)
        assert (reduced.num_hidden_layers, reduced.num_attention_heads,
                reduced.intermediate_size) == (shape.num_layers, shape.num_heads,
                                               shape.intermediate_size)
        assert reduced == shape.config(config)


def test_nothing_to_remove_is_one_line():
    one_head = mini().replace(num_attention_heads=1)
    with pytest.raises(CompressionConfigError, match="remove nothing"):
        check_space(one_head, SpeedupConfig(parts=["heads"]))


def fake_timings(speedups):
    """A timing function from a table ``{label: speedup}`` (latency 1 ms / speedup)."""
    seen = []

    def time_shape(shape):
        seen.append(shape.label())
        s = speedups(shape)
        return speedup.Timing(shape, 1.0 / s, 1.0, s, s * 0.9, s * 1.1)
    return time_shape, seen


def test_search_finds_the_most_flops_shape_that_reaches_the_target_by_bisection():
    config = mini()
    full = flops(config, full_shape(config), 128)
    # Speedup proportional to the FLOPs removed (monotone): the answer is the first shape,
    # most FLOPs first, with full / flops >= 2.
    ratio = lambda s: full / flops(config, s, 128)                  # noqa: E731
    time_shape, seen = fake_timings(ratio)
    chosen = speedup.search(config, SpeedupConfig(target_speedup=2), time_shape)
    shapes = candidates(config, SpeedupConfig())
    expected = next(s for s in shapes if ratio(s) >= 2)
    assert chosen.shape == expected
    assert len(seen) <= 8 < len(shapes)          # about log2(63) timings, not 63
    assert seen[0] == shapes[-1].label()         # the fastest first: is the target reachable?


def test_an_unreachable_target_names_the_best_reachable_speedup():
    time_shape, seen = fake_timings(lambda s: 1.5)
    with pytest.raises(speedup.SpeedupError, match=r"reaches 1.50x.*nothing was written"):
        speedup.search(mini(), SpeedupConfig(target_speedup=3), time_shape)
    assert len(seen) == 1


def test_a_latency_budget_the_init_model_already_meets_is_refused():
    time_shape, _ = fake_timings(lambda s: 2.0)            # the full model: 1 ms
    with pytest.raises(speedup.SpeedupError, match="already runs in 1.000 ms"):
        speedup.search(mini(), SpeedupConfig(latency_budget_ms=2.0), time_shape)
    chosen = speedup.search(mini(), SpeedupConfig(latency_budget_ms=0.5), time_shape)
    assert chosen.latency_ms <= 0.5


def test_the_cache_keeps_timings_per_machine_and_model(tmp_path):
    machine = {"cpu": "x", "isa": "AVX2", "target": "tflite_int8"}
    cache = speedup.LatencyCache(str(tmp_path / "c"), machine, mini())
    shape = Shape(2, 1, 256)
    assert cache.get(shape) is None
    cache.put(speedup.Timing(shape, 0.2, 0.6, 3.0, 2.8, 3.2))
    again = speedup.LatencyCache(str(tmp_path / "c"), machine, mini()).get(shape)
    assert again.cached
    assert again.speedup == 3.0 and again.low == 2.8
    other = speedup.LatencyCache(str(tmp_path / "c"), dict(machine, isa="AVX-512"), mini())
    assert other.get(shape) is None                     # another CPU class times anew
    bigger = speedup.LatencyCache(str(tmp_path / "c"), machine, mini().replace(
        intermediate_size=1024))
    assert bigger.get(shape) is None                    # another model too


def test_searches_at_once_keep_every_timing(tmp_path):
    """Four processes adding to one cache file at once: no timing is lost."""
    import subprocess
    import sys
    script = (
        "import sys\n"
        "from albert_tf.compression import speedup\n"
        "from albert_tf.compression.speedup_space import Shape\n"
        "from albert_tf.config import load_config\n"
        "cache = speedup.LatencyCache(sys.argv[1], {}, load_config('albert_mini'))\n"
        "for size in range(int(sys.argv[2]), int(sys.argv[2]) + 25):\n"
        "    cache.put(speedup.Timing(Shape(2, 1, size), 0.2, 0.6, 3.0, 2.8, 3.2))\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(start)])
             for start in (1, 101, 201, 301)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    values = json.loads((tmp_path / speedup.CACHE_FILE).read_text())
    assert len(values) == 100
    cache = speedup.LatencyCache(str(tmp_path), {}, mini())
    assert all(cache.get(Shape(2, 1, size)) for size in (1, 125, 201, 325))


def test_an_unwritable_cache_is_said_once_and_never_an_error(tmp_path):
    blocker = tmp_path / "a-file"            # the cache directory cannot be made (even as root)
    blocker.write_text("the user's file\n")
    said = []
    cache = speedup.LatencyCache(str(blocker / "cache"), {}, mini(), said.append)
    for size in (128, 256):
        cache.put(speedup.Timing(Shape(2, 1, size), 0.2, 0.6, 3.0, 2.8, 3.2))
    assert len(said) == 1 and "not cached" in said[0]
    assert blocker.read_text() == "the user's file\n"


def test_a_damaged_cache_file_is_ignored(tmp_path):
    (tmp_path / speedup.CACHE_FILE).write_text("{not json")
    cache = speedup.LatencyCache(str(tmp_path), {}, mini())
    assert cache.get(Shape(2, 1, 256)) is None
    cache.put(speedup.Timing(Shape(2, 1, 256), 0.2, 0.6, 3.0, 2.8, 3.2))
    assert json.loads((tmp_path / speedup.CACHE_FILE).read_text())


@pytest.mark.parametrize("override, message", [
    ("speedup.target_speedup=1", "must be > 1"),
    ("speedup.target_speedup=2,speedup.latency_budget_ms=3", "give one"),
    ("speedup.target=onnx_int8", "int8 deployment targets"),
    ("speedup.target=tflite_none", "int8 deployment targets"),
    ("speedup.parts=[heads,tokens]", "speedup.parts"),
    ("speedup.rounds=0", "speedup.rounds"),
])
def test_bad_speedup_values_are_refused_with_the_key(override, message):
    with pytest.raises(CompressionConfigError, match=message):
        build_compression_config(params_overrides=["stages=[structured]," + override])


def test_a_target_without_the_structured_stage_is_refused():
    with pytest.raises(CompressionConfigError, match="structured stage"):
        build_compression_config(params_overrides=["stages=[qat],speedup.target_speedup=2"])


def test_the_targets_are_the_registrys_dense_int8_ones():
    from albert_tf.benchmark import targets
    names = int8_targets()
    assert targets.latency_target() in names
    assert SpeedupConfig().target == targets.latency_target()
    for name in names:
        target = targets.get(name)
        assert not target.peer and target.arithmetic == "int8" and not target.sparse_patterns


@pytest.mark.slow
def test_a_real_search_times_litert_and_caches(tmp_path, data_dir):
    """albert_tiny at 1 x 32 on tflite_int8: the chosen shape's own timing reaches the
    target, and a second search times nothing new (every timing cached)."""
    from albert_tf.compression.compressor import choose_structure
    from tests.compression_fixtures import tiny_model_dir, tiny_sst2_dir
    init = tiny_model_dir(str(tmp_path / "init"))
    data = tiny_sst2_dir(str(tmp_path / "data"), data_dir, train=80, dev=8)

    def config():
        return build_compression_config(params_overrides=[f"""
init_model: {init}
stages: [structured]
data: {{data_dir: {data}}}
speedup: {{target_speedup: 1.3, seq_length: 32, rounds: 3, round_seconds: 0.05,
  parts: [heads, layers], cache_dir: {tmp_path / "cache"}}}
"""])
    first = config()
    said = []
    choice = choose_structure(first, said.append)
    assert choice.timing.speedup >= 1.3 and not choice.timing.cached
    assert first.structured.num_layers or first.structured.head_fraction
    second = config()
    again = choose_structure(second, said.append)
    assert all(t.cached for t in again.timed)
    assert again.timing.shape == choice.timing.shape
    assert second.structured == first.structured


def test_a_target_whose_runtime_is_not_installed_is_one_line(monkeypatch):
    """--target=ir_int8 without OpenVINO: refused when the config is checked (a found/not
    found lookup: nothing imported), naming the extra that installs it."""
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "openvino" else real(name, *a))
    with pytest.raises(CompressionConfigError, match=r"its runtime \(openvino\) is not "
                       r"installed; pip install 'albert-tf\[openvino\]'"):
        build_compression_config(params_overrides=[
            "stages=[structured],speedup.target_speedup=2,speedup.target=ir_int8"])
    build_compression_config(params_overrides=["stages=[structured],speedup.target=ir_int8"])
