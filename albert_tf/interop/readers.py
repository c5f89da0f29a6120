"""Readers for external weights and configs: Google TF1 checkpoints and Hugging Face dirs.

A reader returns a `TensorSource` (source tensors by their original names, plus the
canonical name each one is looked up under in the name map) and an `AlbertConfig`.
keras-hub lives in `albert_tf.interop.keras_hub` because it needs Keras 3.

Hugging Face ``pytorch_model.bin`` files are read only with
``torch.load(weights_only=True)``, never with a plain unpickle.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Callable

import numpy as np

from albert_tf import user_inputs
from albert_tf.config import AlbertConfig, ConfigError, activation_from_hf
from albert_tf.interop.conversion_report import ConversionError
from albert_tf.text import vocabulary as vocab_lib


class TensorSource:
    """Source tensors: ``{original name: (shape, loader)}`` and their canonical names."""

    def __init__(self, description: str):
        self.description = description
        self._entries: dict[str, tuple[tuple[int, ...], Callable[[], np.ndarray]]] = {}
        self._canonical: dict[str, str] = {}

    def add(self, name: str, shape, loader: Callable[[], np.ndarray],
            canonical: str | None = None) -> None:
        self._entries[name] = (tuple(int(d) for d in shape), loader)
        self._canonical[name] = canonical or name

    def names(self) -> list[str]:
        return sorted(self._entries)

    def rename(self, canonical: Callable[[str], str]) -> None:
        """Sets every canonical name to ``canonical(original name)``."""
        self._canonical = {n: canonical(n) for n in self._entries}

    def canonical(self, name: str) -> str:
        return self._canonical[name]

    def by_canonical(self) -> dict[str, str]:
        return {c: n for n, c in self._canonical.items()}

    def shape(self, name: str) -> tuple[int, ...]:
        return self._entries[name][0]

    def get(self, name: str) -> np.ndarray:
        """The tensor's value; a `ConversionError` unless it is finite floating point."""
        value = self._entries[name][1]()
        if not np.issubdtype(value.dtype, np.floating):
            raise ConversionError(f"{self.description}: tensor {name!r} has dtype {value.dtype}; "
                                  "weights must be floating point (a wrong dtype in the file?).")
        bad = int(value.size - np.count_nonzero(np.isfinite(value)))
        if bad:
            raise ConversionError(f"{self.description}: tensor {name!r} has {bad} NaN/Inf "
                                  f"value(s) of {value.size}; refusing to convert non-finite "
                                  "weights (re-export the source from a healthy checkpoint).")
        return value

    def __len__(self) -> int:
        return len(self._entries)


def as_float32(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    if array.dtype != np.float32 and np.issubdtype(array.dtype, np.floating):
        return array.astype(np.float32)
    return array


# ------------------------------------------------------------------------ Google TF1
# Keys of released albert_config.json files that albert-tf has no use for, with the only
# value the standard architecture allows.
GOOGLE_EXTRA_KEYS = {"net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0,
                     "down_scale_factor": 1, "layers_to_keep": []}
GOOGLE_CONFIG_NAMES = ("albert_config.json", "bert_config.json", "config.json")
# Keys of released bert_config.json files (multilingual, Chinese) that BERT's own code ignores.
GOOGLE_BERT_EXTRA_KEYS = ("directionality", "pooler_fc_size", "pooler_num_attention_heads",
                          "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type")
# Keys only an ALBERT config has: a config without any of them is an original BERT's.
_ALBERT_ONLY_KEYS = ("embedding_size", "num_hidden_groups", "inner_group_num", "sharing")


def _bert_values(values: dict, path: str, notes: list[str] | None) -> dict:
    """An original ``bert_config.json`` as our BERT config (E == H, sharing "none")."""
    ignored = sorted(set(GOOGLE_BERT_EXTRA_KEYS) & set(values))
    values = {k: v for k, v in values.items() if k not in GOOGLE_BERT_EXTRA_KEYS}
    if notes is not None:
        notes.append(f"{os.path.basename(path)}: a BERT config (no embedding_size): "
                     "embedding_size == hidden_size, sharing='none'"
                     + (f"; unused key(s) {ignored} ignored" if ignored else ""))
    return dict(values, embedding_size=values.get("hidden_size"), sharing="none")


def google_config(path: str, notes: list[str] | None = None) -> AlbertConfig:
    """Reads an original ``albert_config.json`` (or ours), tolerating the unused keys."""
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError) as e:   # bad JSON or UTF-8
        raise ConversionError(f"{path}: cannot read the config ({e}).") from e
    if not isinstance(values, dict):
        raise ConversionError(f"{path}: a config must be a JSON object.")
    if "model_type" in values or "architectures" in values:
        raise ConversionError(
            f"{path}: this is a Hugging Face config (model_type="
            f"{values.get('model_type')!r}), not an original albert_config.json; "
            "convert that directory with --from=hf.")
    values = dict(values)
    bert = not set(_ALBERT_ONLY_KEYS) & set(values)
    if bert:
        values = _bert_values(values, path, notes)
    for key, default in GOOGLE_EXTRA_KEYS.items():
        if key in values:
            value = values.pop(key)
            if value != default and not (key == "layers_to_keep" and not value):
                raise ConversionError(
                    f"{path}: {key}={value!r} selects a non-standard ALBERT architecture that "
                    f"albert-tf does not implement (only {key}={default!r}).")
            if notes is not None:
                notes.append(f"config key {key}={value!r} ignored (standard architecture)")
    if not bert and values.get("sharing", "all") != "all":
        raise ConversionError(f"{path}: sharing={values['sharing']!r}, but original checkpoints "
                              "share every sublayer within a group (sharing='all').")
    try:
        return AlbertConfig.from_dict(values)
    except ConfigError as e:
        raise ConversionError(f"{path}: {e}") from e


def _find_config(dirs: list[str], names=GOOGLE_CONFIG_NAMES) -> str | None:
    for d in dirs:
        for name in names:
            path = os.path.join(d, name)
            if os.path.isfile(path):
                return path
    return None


def find_google_checkpoint(path: str) -> str:
    """The checkpoint prefix for a prefix, a checkpoint directory or a TF-Hub TF1 module."""
    from albert_tf.backend import tf
    if os.path.isfile(path + ".index"):
        return path
    if path.endswith(".index") and os.path.isfile(path):
        return path[: -len(".index")]
    if not os.path.isdir(path):
        raise ConversionError(f"{path!r}: no such checkpoint prefix ({path}.index) or directory.")
    hub = os.path.join(path, "variables", "variables")
    if os.path.isfile(hub + ".index"):
        return hub
    for name in ("model.ckpt-best",):
        if os.path.isfile(os.path.join(path, name + ".index")):
            return os.path.join(path, name)
    latest = tf.train.latest_checkpoint(path)
    if latest and os.path.isfile(latest + ".index"):
        return latest
    found = sorted(glob.glob(os.path.join(path, "*.index")))
    if len(found) == 1:
        return found[0][: -len(".index")]
    if not found:
        raise ConversionError(f"{path}: no TF checkpoint (*.index, variables/variables.index) in "
                              "this directory; pass the directory of model.ckpt-best and "
                              "albert_config.json, or a checkpoint prefix.")
    raise ConversionError(f"{path}: several checkpoints {[os.path.basename(f) for f in found]} "
                          "and no 'checkpoint' file; pass the prefix of the one to convert.")


def read_google(path: str, config_path: str | None = None,
                notes: list[str] | None = None) -> tuple[AlbertConfig, TensorSource, list[str]]:
    """A TF1 checkpoint in the original layout (``module/`` prefix allowed).

    Returns the config, the tensors, and the vocabulary found beside it (a list of at most
    one path: an ALBERT release's SentencePiece model or a BERT release's vocab.txt).
    """
    from albert_tf.backend import tf
    prefix = find_google_checkpoint(path)
    ckpt_dir = os.path.dirname(os.path.abspath(prefix))
    search = [ckpt_dir, os.path.join(ckpt_dir, "assets")]
    if os.path.basename(ckpt_dir) == "variables":            # TF-Hub module layout
        module_dir = os.path.dirname(ckpt_dir)
        search = [module_dir, os.path.join(module_dir, "assets")] + search
    if os.path.isdir(path):
        search = [path, os.path.join(path, "assets")] + search
    config_path = config_path or _find_config(search)
    if config_path is None:
        raise ConversionError(f"{path}: no albert_config.json (or bert_config.json) beside the "
                              f"checkpoint (looked in {sorted(set(search))}); pass --config=PATH.")
    config = google_config(config_path, notes)
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        dtypes = reader.get_variable_to_dtype_map()
    except Exception as e:  # noqa: BLE001 - TF raises several types for corrupt files
        raise ConversionError(f"{prefix}: not a readable TF checkpoint ({e}).") from e
    source = TensorSource(f"TF1 checkpoint {prefix} (config {config_path})")
    for name, shape in shapes.items():
        canonical = name[len("module/"):] if name.startswith("module/") else name

        def load(name=name, dtype=dtypes[name]):
            try:
                value = reader.get_tensor(name)
            except Exception as e:  # noqa: BLE001
                raise ConversionError(f"{prefix}: cannot read tensor {name!r} ({e}).") from e
            return as_float32(value) if dtype.is_floating else value
        source.add(name, shape, load, canonical)
    return config, source, _find_vocab(search, notes)


# Vocabularies beside an original checkpoint, by preference: ALBERT's SentencePiece model,
# then BERT's WordPiece vocab.txt (vocab_chinese.txt beside the Chinese ALBERTs).
_RELEASE_VOCABS = (("SentencePiece model", "30k-clean.model", "*.model"),
                   ("WordPiece vocabulary", "vocab.txt", "*vocab*.txt"))


def _find_vocab(dirs: list[str], notes: list[str] | None) -> list[str]:
    """The release's vocabulary (``30k-clean.model`` or the one ``*.model``, else
    ``vocab.txt`` or the one ``*vocab*.txt``): a list of at most one path."""
    for d in dict.fromkeys(dirs):
        for what, name, pattern in _RELEASE_VOCABS:
            if os.path.isfile(os.path.join(d, name)):
                return [os.path.join(d, name)]
            found = sorted(glob.glob(os.path.join(d, pattern)))
            if len(found) == 1:
                return found
            if len(found) > 1 and notes is not None:
                notes.append(f"several {what}s in {d} {found}: none copied")
    return []


# ---------------------------------------------------------------------- Hugging Face
HF_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json",
                   "pytorch_model.bin", "pytorch_model.bin.index.json")


def hf_config(path: str, notes: list[str] | None = None) -> tuple[AlbertConfig, str]:
    """Our config from a Hugging Face ``config.json``; returns it and the model type."""
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError) as e:   # bad JSON or UTF-8
        raise ConversionError(f"{path}: cannot read the config ({e}).") from e
    model_type = values.get("model_type") if isinstance(values, dict) else None
    if model_type not in ("albert", "bert"):
        raise ConversionError(
            f"{path}: model_type {model_type!r} is not supported; albert-tf converts Hugging Face "
            "'albert' and 'bert' models (an original albert_config.json converts with "
            "--from=google).")
    if values.get("position_embedding_type", "absolute") != "absolute":
        raise ConversionError(f"{path}: position_embedding_type="
                              f"{values['position_embedding_type']!r}; only 'absolute' is "
                              "supported.")
    if values.get("is_decoder") or values.get("add_cross_attention"):
        raise ConversionError(f"{path}: decoder / cross-attention models are not supported.")
    hf_act = values.get("hidden_act", "gelu_new" if model_type == "albert" else "gelu")
    if not isinstance(hf_act, str):
        raise ConversionError(f"{path}: hidden_act: expected an activation name, got {hf_act!r}.")
    try:
        act = activation_from_hf(hf_act)
    except ConfigError as e:
        raise ConversionError(f"{path}: {e}") from e
    if notes is not None:
        notes.append(f"hidden_act: Hugging Face {hf_act!r} -> albert-tf {act!r}")

    def number(key: str, default=None):
        value = values.get(key, default)
        if value is None:
            return None
        try:
            return float(value)
        except (TypeError, ValueError) as e:
            raise ConversionError(f"{path}: {key}: expected a number, got {value!r}.") from e

    missing = [k for k in ("vocab_size", "hidden_size", "num_hidden_layers",
                           "num_attention_heads", "intermediate_size") if k not in values]
    if missing:
        raise ConversionError(f"{path}: required key(s) {missing} missing from the config.")
    hidden = values["hidden_size"]
    common = dict(
        vocab_size=values["vocab_size"], hidden_size=hidden,
        num_hidden_layers=values["num_hidden_layers"],
        num_attention_heads=values["num_attention_heads"],
        intermediate_size=values["intermediate_size"], hidden_act=act,
        hidden_dropout_prob=number("hidden_dropout_prob", 0.0),
        attention_probs_dropout_prob=number("attention_probs_dropout_prob", 0.0),
        max_position_embeddings=values.get("max_position_embeddings", 512),
        type_vocab_size=values.get("type_vocab_size", 2),
        initializer_range=number("initializer_range", 0.02),
        layer_norm_eps=number("layer_norm_eps", 1e-12))
    try:
        if model_type == "albert":
            config = AlbertConfig(
                embedding_size=values.get("embedding_size", 128),
                num_hidden_groups=values.get("num_hidden_groups", 1),
                inner_group_num=values.get("inner_group_num", 1), sharing="all",
                classifier_dropout_prob=number("classifier_dropout_prob"), **common)
        else:
            config = AlbertConfig(
                embedding_size=hidden, num_hidden_groups=1, inner_group_num=1, sharing="none",
                classifier_dropout_prob=number("classifier_dropout"), **common)
    except (ConfigError, TypeError, ValueError) as e:
        raise ConversionError(f"{path}: {e}") from e
    return config, model_type


def _read_safetensors(path: str, source: TensorSource) -> None:
    from safetensors import SafetensorError, safe_open
    try:
        with safe_open(path, framework="numpy") as f:
            names = list(f.keys())
            shapes = {n: f.get_slice(n).get_shape() for n in names}
    except (SafetensorError, OSError, ValueError) as e:
        raise ConversionError(f"{path}: not a readable safetensors file ({e}); the file may be "
                              "truncated or corrupt.") from e

    def load(name: str) -> np.ndarray:
        try:
            with safe_open(path, framework="numpy") as f:
                return as_float32(f.get_tensor(name))
        except (SafetensorError, TypeError, ValueError):
            pass
        try:           # dtypes NumPy lacks (bfloat16) go through torch
            import torch  # noqa: F401
            with safe_open(path, framework="pt") as f:
                return f.get_tensor(name).float().numpy()
        except Exception as e:  # noqa: BLE001
            raise ConversionError(f"{path}: cannot read tensor {name!r} ({e}).") from e

    for n in names:
        source.add(n, shapes[n], lambda n=n: load(n))


def _check_zip_crc(path: str) -> None:
    """torch.load does not check the CRC-32 of a zip ``.bin``'s members; a flipped bit in a
    tensor's bytes would load as a silently different weight, so check them first."""
    import zipfile
    if not zipfile.is_zipfile(path):
        return                                   # legacy (pre-1.6) format: no checksums
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except Exception as e:  # noqa: BLE001 - zipfile raises many types for bad archives
        raise ConversionError(f"{path}: not a readable zip archive ({e}); the file may be "
                              "truncated or corrupt.") from e
    if bad is not None:
        raise ConversionError(f"{path}: member {bad!r} fails its CRC-32 check; the file is "
                              "corrupt (download or save it again).")


def _read_torch_bin(path: str, source: TensorSource) -> None:
    try:
        import torch
    except ImportError as e:
        raise ConversionError(f"{path}: reading pytorch_model.bin needs torch (pip install torch); "
                              "or convert the model to safetensors first.") from e
    _check_zip_crc(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises many types for bad files
        raise ConversionError(f"{path}: cannot load with torch.load(weights_only=True) ({e}); "
                              "the file may be truncated, corrupt or contain non-tensor "
                              "objects.") from e
    if not isinstance(state, dict):
        raise ConversionError(f"{path}: expected a state dict, got {type(state).__name__}.")
    for name, tensor in state.items():
        if not hasattr(tensor, "detach"):
            raise ConversionError(f"{path}: entry {name!r} is not a tensor.")
        t = tensor.detach()
        value = t.float().numpy() if t.is_floating_point() else t.numpy()
        source.add(name, value.shape, lambda value=value: value)


def _hf_canonical(names: list[str], model_type: str) -> Callable[[str], str]:
    """Adds the ``albert.``/``bert.`` prefix of a bare base model; old gamma/beta names."""
    prefix = f"{model_type}."
    bare = not any(n.startswith(prefix) for n in names) and any(
        n.startswith("embeddings.") for n in names)

    def canonical(name: str) -> str:
        if bare:
            name = prefix + name
        if name.endswith(".gamma"):
            name = name[: -len(".gamma")] + ".weight"
        elif name.endswith(".beta"):
            name = name[: -len(".beta")] + ".bias"
        return name
    return canonical


def read_hf(path: str, notes: list[str] | None = None
            ) -> tuple[AlbertConfig, str, TensorSource, list[str]]:
    """A Hugging Face model directory (or one weights file in it).

    Returns the config, the model type (``albert``/``bert``), the tensors and the
    vocabulary (``spiece.model``, ``vocab.txt`` or a WordPiece ``tokenizer.json``) when the
    directory has one.
    """
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    problem = user_inputs.convert_source_problem(path, "hf", flag=None)
    if problem:     # missing, an albert-tf model directory, a keras-hub preset, an export
        raise ConversionError(problem)
    config_path = os.path.join(directory, "config.json")
    if not os.path.isfile(config_path):
        raise ConversionError(f"{directory}: no config.json; a Hugging Face model directory holds "
                              "config.json and model.safetensors (or pytorch_model.bin).")
    config, model_type = hf_config(config_path, notes)
    if os.path.isfile(path):
        files = [path]
    else:
        files = []
        for name in HF_WEIGHT_FILES:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                if name.endswith(".index.json"):
                    try:
                        with open(candidate, encoding="utf-8") as f:
                            weight_map = json.load(f)["weight_map"]
                    except (OSError, ValueError, KeyError) as e:
                        raise ConversionError(f"{candidate}: not a valid shard index ({e}).") from e
                    files = [os.path.join(directory, s) for s in dict.fromkeys(weight_map.values())]
                    missing = [f for f in files if not os.path.isfile(f)]
                    if missing:
                        raise ConversionError(f"{candidate}: shard file(s) {missing} do not exist.")
                else:
                    files = [candidate]
                break
        if not files:
            raise ConversionError(f"{directory}: no weights; looked for {list(HF_WEIGHT_FILES)}.")
    source = TensorSource(f"Hugging Face {model_type} {', '.join(files)}")
    for f in files:
        if f.endswith(".safetensors"):
            _read_safetensors(f, source)
        elif f.endswith(".bin"):
            _read_torch_bin(f, source)
        else:
            raise ConversionError(f"{f}: unknown weights file type (expected .safetensors "
                                  "or .bin).")
    source.rename(_hf_canonical(source.names(), model_type))
    return config, model_type, source, _hf_vocab(directory, model_type)


def _hf_vocab(directory: str, model_type: str) -> list[str]:
    """The directory's vocabulary: ``spiece.model`` (SentencePiece, ALBERT) or ``vocab.txt``
    (WordPiece: BERT, the Chinese ALBERTs), the model type's own kind first when both; else
    a ``tokenizer.json`` with a WordPiece model (transformers >= 5 saves only that)."""
    names = ["spiece.model", "vocab.txt"]
    if model_type == "bert":
        names.reverse()
    found = [p for p in (os.path.join(directory, n) for n in names) if os.path.isfile(p)]
    tokenizer_json = os.path.join(directory, vocab_lib.HF_TOKENIZER_FILE)
    if not found and os.path.isfile(tokenizer_json):
        try:
            if vocab_lib.tokenizer_json_wordpiece(tokenizer_json) is not None:
                found = [tokenizer_json]
        except vocab_lib.VocabularyError as e:
            raise ConversionError(str(e)) from e
    return found[:1]
