"""keras-hub `AlbertBackbone` interop (Keras 3).

keras-hub is imported only inside these functions: the rest of albert-tf runs on
Keras 2 (``tf_keras``) and must not pull Keras 3 in at import time.

A keras-hub backbone always has ``embedding_projection`` (also when E == H), uses the
tanh GELU and LayerNorm epsilon 1e-12, and gives layer ``i`` of ``L`` to group
``i // (L / G)`` (it requires ``L % G == 0``), which is the group our formula gives.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from albert_tf.config import AlbertConfig, ConfigError
from albert_tf.interop.readers import TensorSource, as_float32
from albert_tf.interop.conversion_report import ConversionError

BACKBONE_CLASS = "AlbertBackbone"


def config_from_keras_hub(values: dict[str, Any], where: str = "keras-hub config") -> AlbertConfig:
    """Our config from ``AlbertBackbone.get_config()``."""
    try:
        dropout = float(values.get("dropout", 0.0))
        return AlbertConfig(
            vocab_size=values["vocabulary_size"], embedding_size=values["embedding_dim"],
            hidden_size=values["hidden_dim"], num_hidden_layers=values["num_layers"],
            num_hidden_groups=values.get("num_groups", 1),
            inner_group_num=values.get("num_inner_repetitions", 1),
            num_attention_heads=values["num_heads"], intermediate_size=values["intermediate_dim"],
            hidden_act="gelu", hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
            max_position_embeddings=values.get("max_sequence_length", 512),
            type_vocab_size=values.get("num_segments", 2), layer_norm_eps=1e-12, sharing="all")
    except KeyError as e:
        raise ConversionError(f"{where}: missing AlbertBackbone config key {e}.") from e
    except (ConfigError, TypeError) as e:
        raise ConversionError(f"{where}: {e}") from e


def _load_preset(path: str):
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        raise ConversionError(f"{path}: no config.json; pass a keras-hub preset directory "
                              "written by AlbertBackbone.save_to_preset.")
    try:
        with open(config_path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ConversionError(f"{config_path}: cannot read ({e}).") from e
    class_name = meta.get("class_name") if isinstance(meta, dict) else None
    if class_name != BACKBONE_CLASS:
        hint = ""
        if isinstance(meta, dict) and "model_type" in meta:
            hint = " This is a Hugging Face config; convert the directory with --from=hf."
        raise ConversionError(f"{config_path}: class_name {class_name!r} is not "
                              f"{BACKBONE_CLASS!r}.{hint}")
    weights = [n for n in os.listdir(path) if n.endswith((".weights.h5", ".weights.json"))]
    if not weights:
        raise ConversionError(f"{path}: no weights file (model.weights.h5) in the preset.")
    import keras_hub
    try:
        return keras_hub.models.AlbertBackbone.from_preset(path)
    except Exception as e:  # noqa: BLE001 - Keras raises many types for bad files
        raise ConversionError(f"{path}: keras-hub could not load the preset ({e}).") from e


def read_keras_hub(backbone_or_path) -> tuple[AlbertConfig, TensorSource, list[str]]:
    """Config, tensors and assets of an `AlbertBackbone` (object or preset directory).

    An ``AlbertMaskedLM`` task object is accepted too: its backbone is converted and the
    keras-hub MLM head is reported as skipped.
    """
    assets: list[str] = []
    if isinstance(backbone_or_path, (str, os.PathLike)):
        path = os.fspath(backbone_or_path)
        if not os.path.isdir(path):
            raise ConversionError(f"{path!r} is not a keras-hub preset directory.")
        obj = _load_preset(path)
        description = f"keras-hub preset {path}"
        for name in ("assets/tokenizer/vocabulary.spm", "vocabulary.spm"):
            if os.path.isfile(os.path.join(path, name)):
                assets.append(os.path.join(path, name))
    else:
        obj = backbone_or_path
        description = f"keras-hub {type(obj).__name__} object"
    extra = []
    backbone = obj
    if type(obj).__name__ != BACKBONE_CLASS and hasattr(obj, "backbone"):
        backbone = obj.backbone
        extra = [w for w in obj.weights if w.path.startswith("mlm_head/")]
    if type(backbone).__name__ != BACKBONE_CLASS:
        raise ConversionError(f"{description}: expected a keras-hub {BACKBONE_CLASS}, got "
                              f"{type(backbone).__name__}.")
    config = config_from_keras_hub(backbone.get_config(), description)
    source = TensorSource(description)
    seen = set()
    for w in list(backbone.weights) + extra:
        if w.path in seen:
            continue
        seen.add(w.path)
        source.add(w.path, w.shape, lambda w=w: as_float32(np.array(w.numpy())))
    return config, source, assets
