"""The shapes a latency target may choose from (no TensorFlow: checked before it loads).

A `Shape` is what the structured stage keeps: layers, heads per attention block, neurons
per feed-forward block. `candidates` lists every shape `SpeedupConfig.parts` allows (heads
``1..N``, FFN widths in ``ffn_steps`` equal steps of ``I``, layers ``max(1, groups)..L``),
largest first by FLOPs (`albert_tf.benchmark.flops`: the order the search walks, assuming
fewer multiplies run no slower; what it chooses is timed, never predicted from FLOPs).
"""

from __future__ import annotations

import dataclasses
import typing

from albert_tf.benchmark.flops import flops_per_sequence
from albert_tf.compression.errors import CompressionConfigError
from albert_tf.config import AlbertConfig

SPEEDUP_PARTS = ("heads", "ffn", "layers")   # what a search may remove (speedup.parts)


@dataclasses.dataclass
class SpeedupConfig:
    """A latency target for the structured stage (`albert_tf.compression.speedup`): the
    heads, FFN neurons and layers to keep are chosen from latencies measured on this CPU
    (``albert-tf-compress --target_speedup`` / ``--latency_budget_ms`` / ``--target``).

    Attributes:
      target_speedup: run this many times faster than the dense export of the
        ``init_model`` on ``target`` (> 1; 0 = no target).
      latency_budget_ms: or run within this many milliseconds (0 = no budget).
      target: the deployment target timed (`albert_tf.benchmark.targets`: one of ours at
        int8; default the registry's `~albert_tf.benchmark.targets.latency_target`).
      batch_size / seq_length: the input shape timed (the export's static signature).
      parts: what the search may remove: ``heads``, ``ffn``, ``layers``.
      ffn_steps: FFN widths tried: multiples of ``intermediate_size / ffn_steps``.
      threads: interpreter threads when timing.
      rounds / round_seconds: interleaved timing rounds (the teacher and each candidate
        in turn, the order rotating) and the seconds each artifact runs per round; the
        speedup is the median over rounds of the per-round ratios.
      cache_dir: where measured latencies are kept, per CPU model, ISA and target
        ("" = ``$ALBERT_TF_CACHE_DIR``, else ``~/.cache/albert-tf``).
      measure_result: time the compressed model's export against the teacher's at the
        end (the measured speedup in ``report.json``).
    """

    target_speedup: float = 0.0
    latency_budget_ms: float = 0.0
    target: str = dataclasses.field(default_factory=lambda: _latency_target())
    batch_size: int = 1
    seq_length: int = 128
    parts: typing.List[str] = dataclasses.field(
        default_factory=lambda: list(SPEEDUP_PARTS))
    ffn_steps: int = 8
    threads: int = 2
    rounds: int = 7
    round_seconds: float = 0.4
    cache_dir: str = ""
    measure_result: bool = True

    @property
    def active(self) -> bool:
        return bool(self.target_speedup or self.latency_budget_ms)


def _latency_target() -> str:
    from albert_tf.benchmark import targets
    return targets.latency_target()


@dataclasses.dataclass(frozen=True)
class Shape:
    """What a candidate keeps: ``num_layers`` layers, ``num_heads`` heads per attention
    block and ``intermediate_size`` neurons per feed-forward block."""

    num_layers: int
    num_heads: int
    intermediate_size: int

    def label(self) -> str:
        return f"L{self.num_layers}/N{self.num_heads}/I{self.intermediate_size}"

    def config(self, base: AlbertConfig) -> AlbertConfig:
        """``base`` reduced to this shape (the head width stays ``base.head_size``)."""
        return base.replace(num_hidden_layers=self.num_layers,
                            num_attention_heads=self.num_heads,
                            attention_head_size=base.head_size,
                            intermediate_size=self.intermediate_size)

    def structured(self, base: AlbertConfig, cfg):   # a StructuredConfig in, a copy out
        """``cfg`` with the fractions and layer count that give this shape (`pruned_config`
        rounds ``fraction * N`` back to exactly the heads removed here)."""
        return dataclasses.replace(
            cfg, head_fraction=(base.num_attention_heads - self.num_heads)
            / base.num_attention_heads,
            ffn_fraction=(base.intermediate_size - self.intermediate_size)
            / base.intermediate_size,
            num_layers=self.num_layers if self.num_layers != base.num_hidden_layers else 0)


def full_shape(config: AlbertConfig) -> Shape:
    return Shape(config.num_hidden_layers, config.num_attention_heads, config.intermediate_size)


def check_target(name: str) -> None:
    """``name`` is one of our int8 deployment targets (`int8_targets`)."""
    allowed = int8_targets()
    if name not in allowed:
        raise CompressionConfigError(f"--target: {name!r} is not one of albert-tf's int8 "
                                     f"deployment targets; use one of {', '.join(allowed)}.")


def check_runtime(name: str) -> None:
    """The runtime that times target ``name`` is installed (found, not imported)."""
    import importlib.util
    from albert_tf.benchmark import targets
    from albert_tf.runtime.sessions import runtime_package
    target = targets.get(name)
    module = (runtime_package(target.worker) or (None, None))[1]
    if module and importlib.util.find_spec(module) is None:
        extra = f"pip install 'albert-tf[{target.extra}]'" if target.extra else \
            f"pip install {module}"
        raise CompressionConfigError(f"--target={name}: its runtime ({module}) is not "
                                     f"installed; {extra}, or choose another --target.")


def int8_targets() -> list[str]:
    """Our dense integer targets of `albert_tf.benchmark.targets` (what the search times)."""
    from albert_tf.benchmark import targets
    return [t.name for t in targets.every_target()
            if not t.peer and t.integer and not t.sparse_patterns and t.arithmetic == "int8"]


def candidates(config: AlbertConfig, cfg: SpeedupConfig) -> list[Shape]:
    """Every shape ``cfg.parts`` allows except the full one, most FLOPs first."""
    layers = range(max(1, config.num_hidden_groups), config.num_hidden_layers + 1) \
        if "layers" in cfg.parts else [config.num_hidden_layers]
    heads = range(1, config.num_attention_heads + 1) if "heads" in cfg.parts \
        else [config.num_attention_heads]
    width = config.intermediate_size
    ffn = sorted({max(1, int(round(width * k / cfg.ffn_steps)))
                  for k in range(1, cfg.ffn_steps + 1)}) if "ffn" in cfg.parts else [width]
    full = full_shape(config)
    shapes = [Shape(n, h, i) for n in layers for h in heads for i in ffn]
    shapes = [s for s in shapes if s != full]
    return sorted(shapes, key=lambda s: (-flops(config, s, cfg.seq_length), s.label()))


def flops(config: AlbertConfig, shape: Shape, seq_length: int) -> int:
    return flops_per_sequence(shape.config(config), seq_length)


def check_space(config: AlbertConfig, cfg: SpeedupConfig) -> None:
    """A one-line error when ``cfg.parts`` leaves nothing to remove from ``config``."""
    if not candidates(config, cfg):
        raise CompressionConfigError(
            f"speedup.parts: {cfg.parts} remove nothing from this model "
            f"({config.num_hidden_layers} layers, {config.num_attention_heads} heads, "
            f"{config.intermediate_size} FFN neurons); allow more of "
            f"heads, ffn, layers.")
