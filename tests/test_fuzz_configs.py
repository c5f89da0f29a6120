"""Property-based fuzzing (hypothesis) of the configuration entry points: experiment YAML
files and ``--params_override`` (`albert_tf.training.experiment_config`), and the model's JSON
config
(`albert_tf.config.AlbertConfig`).

Properties: any string / file gives either a valid config or ConfigKeyError /
ConfigValueError / ConfigError with a one-line message (naming the file where there is
one); a generated valid config survives ``to_yaml`` -> YAML file -> load (and
``to_json`` -> ``from_json``) unchanged; a string field set with ``key=text`` is that text.

Examples per entry point in the CI profile (`make fuzz`: 20x): ``--params_override``
strings 1,000 arbitrary + 500 structured + 300 string-field values; YAML files 700 +
150 round trips (+ the 500 mappings above, a third of them as files); AlbertConfig dicts 1,000
+ JSON files 300.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
import typing

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from albert_tf.config import AlbertConfig, ConfigError
from albert_tf.training import experiment_config as cfg
from fuzzing import fuzz_examples

_TMP = tempfile.TemporaryDirectory(prefix="fuzz_configs_")
ERRORS = (cfg.ConfigKeyError, cfg.ConfigValueError)


def _write(name: str, data: bytes) -> str:
    path = os.path.join(_TMP.name, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _leaf_fields(cls=cfg.ExperimentConfig, prefix=""):
    """(dotted key, type) of every non-dataclass field of the experiment config."""
    out = []
    instance = cls()
    for name, kind in typing.get_type_hints(cls).items():
        if dataclasses.is_dataclass(getattr(instance, name)):
            out += _leaf_fields(type(getattr(instance, name)), f"{prefix}{name}.")
        else:
            out.append((f"{prefix}{name}", kind))
    return out


LEAVES = _leaf_fields()
KEYS = [k for k, _ in LEAVES] + ["task", "trainer", "model", "runtime.seed.x", "bogus",
                                 "task.bogus", "", ".", "task.", "a..b"]

YAML_SCALAR_TEXT = st.one_of(
    st.sampled_from(["1", "0", "-1", "1e-4", "1.5", ".nan", "nan", ".inf", "-.inf", "1e400",
                     "0x10", "010", "1_000", "yes", "no", "on", "true", "False", "null", "~",
                     "", "[a,b]", "[]", "{}", "{a: 1}", "[1, [2]]", "'quoted'", '"dq"', "1:30",
                     "2001-12-14", "!!binary aGk=", "&a x", "*a", "a: b", "- x", "#c", "%x",
                     "@x", "`x", "|", ">", "'unterminated", "[unterminated", "\t", "dynamic",
                     "mirrored", "lamb", "adamw", "higher", "squad", "mixed_float16"]),
    st.text(max_size=12))
OVERRIDE = st.lists(st.tuples(st.sampled_from(KEYS), YAML_SCALAR_TEXT), max_size=5).map(
    lambda kvs: ",".join(f"{k}={v}" for k, v in kvs))


def _check_error(e: Exception, name: str | None = None):
    message = str(e)
    assert message and "\n" not in message, message
    if name is not None:
        assert name in message


def _check_valid(config):
    assert isinstance(config, cfg.ExperimentConfig)
    cfg.validate(config)
    for key, kind in LEAVES:
        value = config
        for part in key.split("."):
            value = getattr(value, part)
        if kind is float:
            assert isinstance(value, float) and math.isfinite(value), key
        elif kind is int:
            assert isinstance(value, int) and not isinstance(value, bool), key
        elif kind is str:
            assert isinstance(value, str), key
        elif kind is bool:
            assert isinstance(value, bool), key


@pytest.mark.slow
@settings(max_examples=fuzz_examples(1000))
@given(st.one_of(st.text(max_size=60), OVERRIDE))
@example("{a: [}")
@example("optimizer.learning_rate=.nan")
@example("trainer=5")
@example("task.name=a: b")
def test_params_override_any_string(text):
    _build(config_files=[], overrides=[text], source="--params_override")


def _build(config_files, overrides, source):
    """The layers (errors name their source), then `validate` (errors name the key)."""
    try:
        config = cfg.apply_config_layers(cfg.ExperimentConfig(), config_files, overrides)
    except ERRORS as e:
        _check_error(e, source)
        return
    try:
        cfg.validate(config)
    except cfg.ConfigValueError as e:
        _check_error(e)
        return
    _check_valid(config)


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(), st.text(max_size=8)),
    lambda c: st.one_of(st.lists(c, max_size=3),
                        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=5),
                                                  st.integers()), c, max_size=4)),
    max_leaves=10)


@st.composite
def nested_overrides(draw):
    """A mapping shaped like the config (dotted or nested keys, any values)."""
    out: dict = {}
    for key, _ in draw(st.lists(st.sampled_from(LEAVES), max_size=5)):
        value = draw(st.one_of(JSONISH, st.sampled_from([1, 2.5, "x", True, [], {}, None])))
        if draw(st.booleans()):
            out[key] = value
        else:
            node = out
            *heads, last = key.split(".")
            for h in heads:
                node = node.setdefault(h, {}) if isinstance(node.get(h, {}), dict) else {}
            node[last] = value
    if draw(st.integers(0, 5)) == 0:
        out[draw(st.sampled_from(KEYS + ["x", "task.x"]))] = draw(JSONISH)
    return out


@pytest.mark.slow
@settings(max_examples=fuzz_examples(500))
@given(nested_overrides(), st.sampled_from(["yaml", "json", "file"]))
def test_params_override_mappings_and_yaml_files(mapping, form):
    if form == "json":
        text = json.dumps(mapping)
    else:
        text = yaml.safe_dump(mapping, default_flow_style=form == "yaml", width=10**6)
    if form == "file":
        path = _write("override.yaml", text.encode())
        _build(config_files=[path], overrides=[], source=path)
    else:
        _build(config_files=[], overrides=[text], source="--params_override")


@settings(max_examples=fuzz_examples(700))
@given(st.one_of(st.binary(max_size=80), st.text(max_size=80).map(str.encode),
                 st.lists(st.sampled_from([b"task:", b"\n", b"  ", b"name: ", b"yes", b"[",
                                           b"]", b"{", b"}", b"- ", b"trainer:", b"\t",
                                           b"train_steps: ", b"1", b"-5", b".nan", b"\xff",
                                           b"\xef\xbb\xbf", b"&a ", b"*a", b"<<: ", b"!!set",
                                           b"---", b"...", b"\r\n"]),
                          max_size=30).map(b"".join)))
@example(b"\xff")
@example(b"task:\n  name: [\n")
@example(b"optimizer:\n  learning_rate: .nan\n")
def test_yaml_config_file_any_bytes(data):
    path = _write("any.yaml", data)
    _build(config_files=[path], overrides=[], source=path)


# Valid configs for the round trips: each leaf a value of its type (strings that YAML
# would otherwise type: "yes", "1:30", "null", "010", "", unicode).
YAML_LIKE = st.sampled_from(
    ["yes", "no", "on", "null", "~", "1:30", "010", "0x10", "1e3", "2001-12-14", "", " x ",
     "a: b", "- x", "#c", "'q'", '"dq"', "[a]", "\u00e9\u4e2d\U0001f600", ".nan", "-.inf"])
STRINGS = st.one_of(st.text(max_size=10), YAML_LIKE)
FINITE = st.floats(allow_nan=False, allow_infinity=False)


def _value_for(kind):
    if kind is bool:
        return st.booleans()
    if kind is int:
        return st.integers(-(2**40), 2**40)
    if kind is float:
        return FINITE
    if kind is str:
        return STRINGS
    if typing.get_origin(kind) is typing.Union:
        return st.one_of(st.none(), _value_for(typing.get_args(kind)[0]))
    if typing.get_origin(kind) is list:
        return st.lists(STRINGS.filter(lambda s: s.strip() == s and "," not in s), max_size=3)
    raise AssertionError(kind)


@st.composite
def valid_configs(draw):
    chosen = draw(st.lists(st.sampled_from(LEAVES), unique=True, max_size=12))
    return {k: draw(_value_for(kind)) for k, kind in chosen}


@pytest.mark.slow
@settings(max_examples=fuzz_examples(150))
@given(valid_configs())
def test_to_yaml_round_trip(values):
    config = cfg.override_params(cfg.ExperimentConfig(), dict(values))
    path = _write("round_trip.yaml", config.to_yaml().encode())
    loaded = cfg.apply_config_layers(cfg.ExperimentConfig(), [path])
    assert loaded.as_dict() == config.as_dict()


PLAIN_TEXT = st.text(st.sampled_from("abcXYZ019._/+-: "), min_size=1, max_size=12)


@settings(max_examples=fuzz_examples(300))
@given(st.sampled_from([k for k, kind in LEAVES if kind is str]), st.one_of(PLAIN_TEXT, YAML_LIKE))
@example("task.name", "yes")
@example("runtime.tpu", "1:30")
@example("task.vocab_file", "010")
def test_string_field_from_key_value_is_the_text_written(key, text):
    """``key=text`` sets a string field to ``text`` (stripped), not to YAML's reading of it
    (``yes`` -> "True", ``1:30`` -> "90"); or a clear error (e.g. ``a: b`` is a mapping)."""
    try:
        config = cfg.apply_config_layers(cfg.ExperimentConfig(), [], [f"{key}={text}"])
    except ERRORS as e:
        _check_error(e, key)
        return
    value = config
    for part in key.split("."):
        value = getattr(value, part)
    raw = text.strip()
    if value != raw:
        # only where the text is YAML syntax, not a plain scalar: null, quotes, comments
        assert yaml.safe_load(raw) is None or raw[0] in "'\"#&*!|>%@`" or value == (
            yaml.safe_load(raw) if isinstance(yaml.safe_load(raw), str) else None), (raw, value)


def test_string_fields_keep_the_text_of_yaml_booleans_and_numbers(tmp_path):
    """Regression (fuzzing): ``task.label_list=[yes,no]`` gave ``["True", "False"]`` (YAML 1.1
    booleans, then str()), ``task.name=on`` gave "True" and ``runtime.tpu=1:30`` gave "90"
    (sexagesimal); a custom task with yes/no labels then skipped every row."""
    config = cfg.build_experiment(None, [], ["task.label_list=[yes,no],task.name=on,"
                                             "runtime.tpu=1:30,task.vocab_file=010"])
    assert config.task.label_list == ["yes", "no"] and config.task.name == "on"
    assert config.runtime.tpu == "1:30" and config.task.vocab_file == "010"
    f = tmp_path / "x.yaml"
    f.write_text("task:\n  name: yes\n  label_list: [no, 1.0]\nruntime:\n  seed: 0x10\n")
    config = cfg.build_experiment(None, [str(f)])
    assert config.task.name == "yes" and config.task.label_list == ["no", "1.0"]
    assert config.runtime.seed == 16                       # non-string fields: YAML's value
    assert cfg.parse_params_override("task.name=yes") == {"task.name": True}  # public: typed


def test_non_finite_floats_are_rejected_naming_the_key():
    """Regression (fuzzing): ``optimizer.learning_rate=nan`` (or ``.nan``) passed
    ``validate`` (NaN <= 0 is False) and trained on NaN; ``.inf`` likewise."""
    for text in ("optimizer.learning_rate=nan", "optimizer.learning_rate=.nan",
                 "trainer.max_seconds=.inf", "model.hidden_dropout_prob=-inf"):
        with pytest.raises(cfg.ConfigValueError, match="expected a finite number"):
            cfg.build_experiment(None, [], [text])


def test_yaml_errors_are_one_line(tmp_path):
    """Regression (fuzzing): a YAML syntax error in ``--params_override`` or a config file
    gave PyYAML's multi-line message (with a caret line); a non-UTF-8 file raised
    UnicodeDecodeError."""
    with pytest.raises(cfg.ConfigValueError) as e:
        cfg.build_experiment(None, [], ["{a: [}"])
    assert "\n" not in str(e.value) and "line 1, column 6" in str(e.value)
    bad = tmp_path / "bad.yaml"
    bad.write_text("task:\n  name: [\n")
    with pytest.raises(cfg.ConfigValueError) as e:
        cfg.build_experiment(None, [str(bad)])
    assert "\n" not in str(e.value) and "bad.yaml: invalid YAML" in str(e.value)
    bad.write_bytes(b"task:\n  name: \xff\n")
    with pytest.raises(cfg.ConfigValueError, match="bad.yaml: not UTF-8"):
        cfg.build_experiment(None, [str(bad)])


# ------------------------------------------------------------------------- AlbertConfig

FIELDS = {f.name: f for f in dataclasses.fields(AlbertConfig)}
ANY_JSON_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-5, 5000), st.floats(),
                           st.sampled_from(["gelu", "relu", "all", "none", "ffn", "x", ""]),
                           st.lists(st.integers(), max_size=2),
                           st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@st.composite
def model_config_dicts(draw):
    out = {}
    for name in draw(st.lists(st.sampled_from(sorted(FIELDS)), unique=True, max_size=10)):
        if draw(st.booleans()):   # a plausible value
            out[name] = draw({
                "hidden_act": st.sampled_from(sorted(["gelu", "relu", "gelu_new", "silu", "x"])),
                "sharing": st.sampled_from(["all", "attention", "ffn", "none", "ALL"]),
            }.get(name, st.sampled_from([1, 2, 4, 8, 12, 64, 768, 0.0, 0.1, 0.02, 1e-12, None,
                                         float("nan"), float("inf")])))
        else:
            out[name] = draw(ANY_JSON_VALUE)
    if draw(st.integers(0, 6)) == 0:
        out[draw(st.sampled_from(["model_type", "bogus", "architectures", "1"]))] = 1
    return out


def _check_model_config(config: AlbertConfig):
    d = config.to_dict()
    assert AlbertConfig.from_dict(d) == config
    for name in ("initializer_range", "layer_norm_eps", "hidden_dropout_prob",
                 "attention_probs_dropout_prob"):
        assert math.isfinite(d[name])
    assert d["classifier_dropout_prob"] is None or 0 <= d["classifier_dropout_prob"] < 1


@pytest.mark.slow
@settings(max_examples=fuzz_examples(1000))
@given(model_config_dicts())
@example({"initializer_range": float("nan")})
@example({"classifier_dropout_prob": 5.0})
@example({1: 2})
def test_albert_config_from_any_dict(values):
    try:
        config = AlbertConfig.from_dict(values)
    except ConfigError as e:
        _check_error(e)
        return
    _check_model_config(config)


@settings(max_examples=fuzz_examples(300))
@given(st.one_of(model_config_dicts().map(lambda d: json.dumps(d).encode()),
                 st.binary(max_size=40), st.just(b"[" * 100_000),
                 st.builds(lambda d: b"\xef\xbb\xbf" + json.dumps(d).encode(),
                           model_config_dicts())))
def test_albert_config_json_file(data):
    path = _write("albert_config.json", data)
    try:
        config = AlbertConfig.from_json(path)
    except ConfigError as e:
        _check_error(e, path)
        return
    _check_model_config(config)
    out = _write("round_trip.json", b"")
    config.to_json(out)
    assert AlbertConfig.from_json(out) == config


def test_albert_config_rejects_non_finite_and_out_of_range_values(tmp_path):
    """Regression (fuzzing): ``"initializer_range": NaN`` (JSON as Python writes it) or
    ``Infinity`` passed the ``<= 0`` check; ``classifier_dropout_prob`` was not checked at
    all (5.0 failed later inside Keras); a non-string key made the unknown-key message
    raise TypeError; a non-UTF-8 or deeply nested file raised UnicodeDecodeError /
    RecursionError."""
    for changes, key in (({"initializer_range": float("nan")}, "initializer_range"),
                         ({"layer_norm_eps": float("inf")}, "layer_norm_eps"),
                         ({"classifier_dropout_prob": 5.0}, "classifier_dropout_prob"),
                         ({"classifier_dropout_prob": -0.1}, "classifier_dropout_prob")):
        with pytest.raises(ConfigError, match=key):
            AlbertConfig.from_dict(changes)
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) \['1', 'x'\]"):
        AlbertConfig.from_dict({1: 2, "x": 3})
    path = tmp_path / "c.json"
    for data in (b"\xff{}", b"[" * 100_000):
        path.write_bytes(data)
        with pytest.raises(ConfigError, match="c.json: not valid JSON"):
            AlbertConfig.from_json(str(path))
