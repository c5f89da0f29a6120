"""``albert-tf-benchmark --compressed --structured=...``: physically smaller copies of the
model beside the sparse ones (issue #28).

A recipe names what is removed, in percent, by magnitude (no training data:
`albert_tf.compression.structured.prune_by_magnitude` and `~albert_tf.compression.
structured.keep_layers`): ``heads50_ffn50`` removes half the attention heads and half the
FFN neurons of every block (ALBERT's shared block once: one set of weights), ``ffn50`` half
the neurons only, ``layers50`` half the layers (evenly spaced, the last kept). The copy is
an ordinary dense model, so it is timed on every dense int8 target of the baseline (the
plan's ``baselines``) and its rows sit in the table and the summary line beside the sparse
ones, named by what is left, e.g. ``structured heads 6/12, ffn 1536/3072``. Each copy is
written once, to ``<output_dir>/artifacts/<model>/structured/<recipe>/model``, its artifacts
beside it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Sequence

from albert_tf.benchmark.compressed import CompressedInputError, Row

DEFAULT_RECIPES = ("heads50_ffn50", "ffn50")
PARTS = ("heads", "ffn", "layers")        # what a recipe may remove (any order, each once)
_PART = re.compile(rf"({'|'.join(PARTS)})(\d+)")


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Fractions removed: of every block's heads, of its FFN neurons, of the layers."""

    name: str
    heads: float = 0.0
    ffn: float = 0.0
    layers: float = 0.0

    def config(self, config):
        """The `AlbertConfig` of the smaller model; a `CompressedInputError` when the
        fractions remove nothing or everything of ``config``."""
        from albert_tf.compression.compression_config import (  # no TensorFlow
            CompressionConfigError, StructuredConfig, fewer_layers_config, pruned_config)
        try:
            if self.heads or self.ffn:
                config = pruned_config(config, StructuredConfig(head_fraction=self.heads,
                                                                ffn_fraction=self.ffn))
            if self.layers:
                layers = config.num_hidden_layers
                config = fewer_layers_config(
                    config, layers - int(round(self.layers * layers)))
        except CompressionConfigError as e:
            raise CompressedInputError(f"--structured={self.name}: {e}") from None
        return config

    def describe(self, config) -> str:
        """``structured heads 6/12, ffn 1536/3072`` (what is left of ``config``'s)."""
        new = self.config(config)
        parts = [("heads", "num_attention_heads"), ("ffn", "intermediate_size"),
                 ("layers", "num_hidden_layers")]
        return "structured " + ", ".join(
            f"{part} {getattr(new, field)}/{getattr(config, field)}"
            for part, field in parts if getattr(self, part))

    def benchmark(self, name: str, model_dir: str, runtimes: Sequence[str], shapes,
                  work_dir: str, data_dir: str | None, echo, **common) -> list[Row]:
        """This recipe's copy of ``model_dir`` (`structured_model_dir`) timed on ``runtimes``
        (the dense int8 targets) by `albert_tf.benchmark.suite.benchmark_model`; one `Row`
        per (runtime, shape), its kind `describe`. `albert_tf.benchmark.compressed.
        benchmark_compressed` calls it for each recipe of the plan."""
        from albert_tf.benchmark.suite import benchmark_model
        from albert_tf.checkpoints import load_config_from_dir
        kind = self.describe(load_config_from_dir(model_dir))
        where = os.path.join(work_dir, name, "structured", self.name)
        echo(f"  {name} {kind}: {where}")
        smaller = structured_model_dir(model_dir, os.path.join(where, "model"), self)
        return [Row(name, m.batch, m.seq, m.runtime, kind, 0.0, m.median_ms, m.file_mib)
                for m in benchmark_model(name, smaller, list(runtimes), shapes, where,
                                         data_dir, echo=echo, **common)]


def parse_recipes(values: Sequence[str]) -> list[Recipe]:
    """``--structured`` values -> recipes; ``none`` (alone) -> none. A name is parts
    ``heads<P>``, ``ffn<P>``, ``layers<P>`` joined by ``_``, each at most once, ``P`` the
    percent removed (1..99)."""
    values = [v.strip() for v in values if v.strip()]
    if values == ["none"]:
        return []
    recipes = []
    for value in values:
        parts = value.split("_")
        matches = [_PART.fullmatch(p) for p in parts]
        kinds = [m.group(1) for m in matches if m]
        if not all(matches) or len(set(kinds)) != len(kinds) or not all(
                0 < int(m.group(2)) < 100 for m in matches):
            raise CompressedInputError(
                f"--structured: unknown recipe {value!r}; use parts heads<P>, ffn<P>, "
                f"layers<P> (P: percent removed, 1-99) joined by _, e.g. "
                f"{','.join(DEFAULT_RECIPES)}, or none.")
        recipes.append(Recipe(value, **{m.group(1): int(m.group(2)) / 100 for m in matches}))
    if not recipes:
        raise CompressedInputError("--structured: give a recipe, e.g. "
                                   f"{','.join(DEFAULT_RECIPES)}, or none.")
    return recipes


def check_recipes(recipes: Sequence[Recipe], configs: dict) -> None:
    """A `CompressedInputError` (one line) when a recipe does not fit a model's config
    (``{model name: AlbertConfig}``)."""
    for name, config in configs.items():
        for recipe in recipes:
            try:
                recipe.config(config)
            except CompressedInputError as e:
                raise CompressedInputError(f"{e} (model {name})") from None


def smaller_model(model, recipe: Recipe, build_fn=None):
    """``model`` made smaller by ``recipe``: heads and neurons first, then layers."""
    from albert_tf.compression import structured
    if recipe.heads or recipe.ffn:
        model, _ = structured.prune_by_magnitude(model, recipe.heads, recipe.ffn, build_fn)
    if recipe.layers:
        layers = model.albert_config.num_hidden_layers
        model = structured.keep_layers(model, layers - int(round(recipe.layers * layers)),
                                       build_fn)
    return model


def structured_model_dir(model_dir: str, out: str, recipe: Recipe) -> str:
    """A copy of ``model_dir`` made smaller by ``recipe`` at ``out`` (kept: made once). A
    finetuned directory (``task.json``) keeps its head."""
    if os.path.exists(os.path.join(out, "config.json")):
        return out
    from albert_tf import checkpoints
    build_fn, task_info = None, None
    if os.path.isfile(os.path.join(model_dir, checkpoints.TASK_FILE)):
        model, task_info = checkpoints.load_task_model(model_dir)
        build_fn = lambda config: checkpoints.build_task_model(config, task_info)  # noqa: E731
    else:
        model = checkpoints.load_encoder(model_dir)
    smaller = smaller_model(model, recipe, build_fn)
    checkpoints.save_model_dir(smaller, out, task_info=task_info,
                               vocab_file=checkpoints.vocab_path(model_dir))
    return out
