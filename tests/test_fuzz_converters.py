"""Property-based fuzzing of the checkpoint converters (issue #20).

Entry point: `albert_tf.interop.converter.load_source` (what ``albert-tf-convert`` and
``convert_hf``/``convert_google`` run before writing anything), fed corrupted copies of a
valid small Hugging Face directory (``model.safetensors`` / ``pytorch_model.bin`` +
``config.json``) and of a Google TF1 checkpoint. The property, for every input:

* it is refused with a `ConversionError` (a `CheckpointError`) whose first line names the
  file or directory, never a raw struct/JSON/numpy/torch exception; or
* it converts, and then every weight it mapped equals the valid file's (a 16-bit dtype
  within its precision): a corrupted file never gives a silently wrong model.

NaN/Inf weights and non-floating dtypes are refused, naming the tensor. Examples per test
are in each ``@settings``; the CI profile runs >= 1,000 corrupted inputs in all
(`tests/fuzzing.py`, profiles in `tests/conftest.py`). The pretrainer a conversion builds is
cached per config so that an example costs the reading and checking, not a Keras build.
"""

from __future__ import annotations

import json
import os
import shutil
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzzing import fuzz_examples

SMALL = dict(vocab_size=60, embedding_size=8, hidden_size=16, num_hidden_layers=2,
             num_hidden_groups=2, inner_group_num=1, num_attention_heads=2,
             intermediate_size=32, max_position_embeddings=20)
ST_DTYPES = ["BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64",
             "I64", "U64", "F8_E4M3", "F8_E5M2", "XX", "f32", ""]
CASTS = [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8, np.bool_]


class Fixture(dict):
    """A module fixture's values, with a short repr for hypothesis' failure reports."""

    def __repr__(self) -> str:
        return f"<fixture {sorted(self)}>"


@pytest.fixture(scope="module")
def cached_builds():
    """Builds each config's pretrainer once (load_source assigns only on success)."""
    from albert_tf.models import pretrainer
    real = pretrainer.build_pretrainer
    cache = {}

    def build(config):
        key = repr(config)
        if key not in cache:
            cache[key] = real(config)
        return cache[key]

    mp = pytest.MonkeyPatch()
    mp.setattr(pretrainer, "build_pretrainer", build)
    yield cache
    mp.undo()


@pytest.fixture(scope="module")
def hf(tmp_path_factory, cached_builds):
    """A valid Hugging Face ALBERT directory, its bytes, header and reference weights."""
    import albert_tf
    from albert_tf.interop import export_hf
    root = tmp_path_factory.mktemp("fuzz_conv")
    albert_tf.save_model_dir(albert_tf.build_pretrainer(albert_tf.AlbertConfig(**SMALL)),
                             str(root / "ours"))
    export_hf(str(root / "ours"), str(root / "hf"))
    blob = (root / "hf" / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    from safetensors.numpy import load_file
    tensors = load_file(str(root / "hf" / "model.safetensors"))
    case = root / "case"
    case.mkdir()
    return Fixture({"root": root, "dir": str(root / "hf"), "blob": blob, "n": n, "header": header,
            "body": blob[8 + n:], "tensors": tensors, "case": str(case),
            "config": (root / "hf" / "config.json").read_text(),
            "reference": _converted(str(root / "hf"))})


def _converted(path: str, fmt: str = "hf") -> dict[str, np.ndarray]:
    """``{target: value}`` of every weight ``load_source`` mapped (raises on refusal)."""
    from albert_tf.checkpoints import named_weights
    from albert_tf.interop.converter import load_source
    model, _, report, _ = load_source(fmt, path)
    weights = named_weights(model)
    return {target: weights[target].numpy() for _, target, _, _ in report.mapped}


def check(path: str, reference: dict[str, np.ndarray], fmt: str = "hf", atol: float = 1e-6,
          must_fail: bool = False, names: str | None = None) -> str | None:
    """The property; returns the error message (None when it converted)."""
    from albert_tf.interop import ConversionError
    try:
        got = _converted(path, fmt)
    except ConversionError as e:
        first = str(e).splitlines()[0]
        assert path in first, f"error does not name {path}: {e}"
        if names is not None:
            assert names in str(e), f"error does not name {names!r}: {e}"
        return str(e)
    assert not must_fail, f"{path} converted but must be refused"
    for target, value in got.items():
        assert np.all(np.isfinite(value)), target
        np.testing.assert_allclose(value, reference[target], atol=atol, rtol=atol,
                                   err_msg=f"silently wrong weight {target}")
    return None


def write_case(hf, blob: bytes | None = None, config: str | bytes | None = None,
               weights_name: str = "model.safetensors") -> str:
    case = hf["case"]
    for name in os.listdir(case):
        os.remove(os.path.join(case, name))
    config = hf["config"] if config is None else config
    with open(os.path.join(case, "config.json"), "wb") as f:
        f.write(config.encode("utf-8") if isinstance(config, str) else config)
    with open(os.path.join(case, weights_name), "wb") as f:
        f.write(hf["blob"] if blob is None else blob)
    return case


def with_header(header: dict, body: bytes, length: int | None = None) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + body


def save(tensors: dict[str, np.ndarray]) -> bytes:
    from safetensors.numpy import save
    return save(tensors)


# ---------------------------------------------------------------------- safetensors
@pytest.mark.slow
@settings(max_examples=fuzz_examples(300))
@given(cut=st.integers(min_value=0, max_value=28927))
def test_truncated_safetensors_at_any_byte(hf, cut):
    cut = cut % len(hf["blob"])
    check(write_case(hf, hf["blob"][:cut]), hf["reference"], must_fail=True)


def _header_mutation():
    small = st.integers(min_value=-2, max_value=70)
    return st.one_of(
        st.tuples(st.just("shape"), st.lists(small, max_size=3)),
        st.tuples(st.just("dtype"), st.sampled_from(ST_DTYPES)),
        st.tuples(st.just("offsets"), st.lists(st.integers(-1, 30000), min_size=0, max_size=3)),
        st.tuples(st.just("length"), st.integers(0, 2**64 - 1)),
        st.tuples(st.just("json"), st.binary(max_size=64)),
        st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 7)),
        st.tuples(st.just("drop_key"), st.sampled_from(["dtype", "shape", "data_offsets"])),
        st.tuples(st.just("value"), st.none() | st.integers() | st.text(max_size=5)
                  | st.lists(st.integers(), max_size=2)),
    )


@pytest.mark.slow
@settings(max_examples=fuzz_examples(500))
@given(which=st.integers(0, 10**6), mutation=_header_mutation())
def test_safetensors_header_lies(hf, which, mutation):
    """Shape lies (product != bytes), wrong dtypes, bad offsets, a huge or wrong header
    length, a non-JSON header, flipped bits: refused, or (a harmless change) the same model."""
    header = json.loads(json.dumps(hf["header"]))
    names = sorted(k for k in header if k != "__metadata__")
    name = names[which % len(names)]
    kind, *args = mutation
    if kind == "shape":
        header[name]["shape"] = args[0]
    elif kind == "dtype":
        header[name]["dtype"] = args[0]
    elif kind == "offsets":
        header[name]["data_offsets"] = args[0]
    elif kind == "drop_key":
        del header[name][args[0]]
    elif kind == "value":
        header[name] = args[0]
    if kind == "length":
        blob = with_header(header, hf["body"], length=args[0])
    elif kind == "json":
        blob = struct.pack("<Q", len(args[0])) + args[0] + hf["body"]
    elif kind == "flip":
        blob = bytearray(hf["blob"])
        blob[8 + args[0] % hf["n"]] ^= 1 << args[1]
        blob = bytes(blob)
    else:
        blob = with_header(header, hf["body"])
    check(write_case(hf, blob), hf["reference"])


@pytest.mark.slow
@settings(max_examples=fuzz_examples(400))
@given(which=st.integers(0, 10**6), kind=st.sampled_from(
    ["cast", "nan", "inf", "drop", "extra", "rename", "reshape", "scalar"]),
    cast=st.sampled_from(CASTS), index=st.integers(0, 10**6))
def test_safetensors_wrong_values(hf, which, kind, cast, index):
    """Int / bool / 64- and 16-bit weights, NaN and Inf, missing, extra, renamed and
    reshaped tensors."""
    tensors = dict(hf["tensors"])
    names = sorted(tensors)
    name = names[which % len(names)]
    value = tensors[name].copy()
    names_it = None
    if kind == "cast":
        tensors[name] = value.astype(cast)
        if not np.issubdtype(cast, np.floating):
            names_it = name
    elif kind in ("nan", "inf"):
        value.reshape(-1)[index % value.size] = np.nan if kind == "nan" else -np.inf
        tensors[name] = value
        names_it = name
    elif kind == "drop":
        del tensors[name]
    elif kind == "extra":
        tensors[name + ".extra"] = value
    elif kind == "rename":
        tensors[name.replace(".", "_", 1)] = tensors.pop(name)
    elif kind == "reshape":
        tensors[name] = value.reshape(-1, 1)
    else:
        tensors[name] = np.array(index, np.float32)
    atol = 2e-3 if kind == "cast" and cast == np.float16 else 1e-6
    refused = names_it if names_it in _mapped_sources(hf) else None
    check(write_case(hf, save(tensors)), hf["reference"], atol=atol,
          must_fail=refused is not None, names=refused)


def _mapped_sources(hf) -> set[str]:
    if "mapped_sources" not in hf:
        from albert_tf.interop.converter import load_source
        hf["mapped_sources"] = {src for src, _, _, _ in load_source("hf", hf["dir"])[2].mapped}
    return hf["mapped_sources"]


# ----------------------------------------------------------------------- config.json
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 70)
                     | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(300))
@given(mutation=st.one_of(
    st.tuples(st.just("set"), st.integers(0, 100), _JSON),
    st.tuples(st.just("drop"), st.integers(0, 100)),
    st.tuples(st.just("whole"), _JSON),
    st.tuples(st.just("bytes"), st.binary(max_size=40)),
    st.tuples(st.just("cut"), st.integers(0, 10**4))))
def test_malformed_config_json(hf, mutation):
    """A config.json with wrong types, missing keys, other JSON, invalid UTF-8, truncated."""
    values = json.loads(hf["config"])
    keys = sorted(values)
    kind, *args = mutation
    if kind == "set":
        values[keys[args[0] % len(keys)]] = args[1]
        config = json.dumps(values)
    elif kind == "drop":
        del values[keys[args[0] % len(keys)]]
        config = json.dumps(values)
    elif kind == "whole":
        config = json.dumps(args[0])
    elif kind == "bytes":
        config = args[0]
    else:
        config = hf["config"][:args[0] % len(hf["config"])]
    # A config that still fits the tensors (say another dropout) converts the same weights.
    check(write_case(hf, config=config), hf["reference"])


# --------------------------------------------------------------- pytorch_model.bin
@pytest.fixture(scope="module")
def torch_bin(hf):
    torch = pytest.importorskip("torch")
    import io
    buf = io.BytesIO()
    torch.save({k: torch.from_numpy(v.copy()) for k, v in hf["tensors"].items()}, buf)
    return Fixture(blob=buf.getvalue())


@settings(max_examples=fuzz_examples(150))
@given(kind=st.sampled_from(["cut", "flip", "int"]), at=st.integers(0, 10**6),
       bit=st.integers(0, 7))
def test_corrupted_pytorch_bin(hf, torch_bin, kind, at, bit):
    """Truncated, bit-flipped (zip CRC-32) and integer-weight .bin files."""
    import torch
    torch_bin = torch_bin["blob"]
    if kind == "cut":
        blob = torch_bin[:at % len(torch_bin)]
    elif kind == "flip":
        blob = bytearray(torch_bin)
        blob[at % len(blob)] ^= 1 << bit
        blob = bytes(blob)
    else:
        import io
        names = sorted(_mapped_sources(hf))
        state = {k: torch.from_numpy(v.copy()) for k, v in hf["tensors"].items()}
        name = names[at % len(names)]
        state[name] = state[name].to(torch.int32)
        buf = io.BytesIO()
        torch.save(state, buf)
        blob = buf.getvalue()
    check(write_case(hf, blob, weights_name="pytorch_model.bin"), hf["reference"],
          must_fail=kind != "flip")


# ------------------------------------------------------------------ Google TF1 checkpoint
@pytest.fixture(scope="module")
def google(hf):
    import albert_tf
    from albert_tf.checkpoints import named_weights, write_weights
    from albert_tf.interop import name_map
    config = albert_tf.AlbertConfig(**SMALL)
    variables = named_weights(albert_tf.load_pretrainer(os.path.join(str(hf["root"]), "ours")))
    tensors = {src: name_map.invert(rule.transform, variables[rule.target].numpy(),
                                    name_map.source_shape(rule, config))
               for src, rule in name_map.GOOGLE.expand(config).items()
               if rule.target in variables}
    path = hf["root"] / "google"
    path.mkdir()
    write_weights(tensors, str(path / "model.ckpt-best"))
    config.to_json(str(path / "albert_config.json"))
    files = {f: (path / f).read_bytes() for f in sorted(os.listdir(path))}
    case = hf["root"] / "google_case"
    case.mkdir()
    return Fixture(files=files, case=str(case), reference=_converted(str(path), "google"))


@settings(max_examples=fuzz_examples(200))
@given(which=st.integers(0, 10), kind=st.sampled_from(["cut", "flip"]), at=st.integers(0, 10**6),
       bit=st.integers(0, 7))
def test_corrupted_google_checkpoint(google, which, kind, at, bit):
    names = sorted(google["files"])
    target = names[which % len(names)]
    for name, data in google["files"].items():
        if name == target:
            data = bytearray(data)
            if kind == "cut":
                data = data[:at % len(data)]
            else:
                data[at % len(data)] ^= 1 << bit
        with open(os.path.join(google["case"], name), "wb") as f:
            f.write(bytes(data))
    check(google["case"], google["reference"], fmt="google",
          must_fail=kind == "cut" and not target.endswith(".json"))


# ------------------------------------------------------------------- the command line
@settings(max_examples=fuzz_examples(100))
@given(cut=st.integers(0, 10**6), flip=st.booleans())
def test_convert_cli_exits_1_with_one_error_line(hf, tmp_path_factory, capsys, cut, flip):
    from albert_tf.bin.convert import run_conversion
    blob = bytearray(hf["blob"])
    if flip:
        blob[8 + cut % hf["n"]] ^= 0x20
    else:
        blob = blob[:cut % len(blob)]
    case = write_case(hf, bytes(blob))
    out = os.path.join(str(hf["root"]), "cli_out")
    capsys.readouterr()
    status = run_conversion("hf", "albert_tf", case, out)
    err = capsys.readouterr().err
    if status == 0:
        shutil.rmtree(out)
        return
    assert status == 1 and not os.path.exists(out)
    assert err.startswith("albert-tf-convert: error: ") and "Traceback" not in err
    assert case in err.splitlines()[0]


# --------------------------------------------------------- bugs found: regression tests
def test_regression_int32_dtype_lie_is_refused(hf):
    """Found by fuzzing: a header claiming I32 for an F32 tensor (same byte size) converted
    silently, reinterpreting the float bits as integers."""
    header = json.loads(json.dumps(hf["header"]))
    header["albert.embeddings.LayerNorm.bias"]["dtype"] = "I32"
    msg = check(write_case(hf, with_header(header, hf["body"])), hf["reference"],
                must_fail=True, names="albert.embeddings.LayerNorm.bias")
    assert "dtype int32; weights must be floating point" in msg


def test_regression_integer_and_bool_weights_are_refused(hf):
    """Found by fuzzing: int64 / uint8 / bool tensors were cast to float32 silently."""
    for cast in (np.int64, np.uint8, np.bool_):
        tensors = dict(hf["tensors"])
        name = "albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"
        tensors[name] = tensors[name].astype(cast)
        check(write_case(hf, save(tensors)), hf["reference"], must_fail=True, names=name)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_regression_non_finite_weights_are_refused(hf, bad):
    """Found by fuzzing: NaN/Inf weights converted into a model that outputs NaN."""
    tensors = dict(hf["tensors"])
    name = "albert.embeddings.word_embeddings.weight"
    tensors[name] = tensors[name].copy()
    tensors[name][3, 1] = bad
    msg = check(write_case(hf, save(tensors)), hf["reference"], must_fail=True, names=name)
    assert "1 NaN/Inf value(s)" in msg


def test_wider_and_narrower_floats_still_convert(hf):
    """float64 and float16 weights are floating point: converted (to float32)."""
    for cast, atol in ((np.float64, 1e-7), (np.float16, 2e-3)):
        tensors = {k: v.astype(cast) for k, v in hf["tensors"].items()}
        assert check(write_case(hf, save(tensors)), hf["reference"], atol=atol) is None


@pytest.mark.parametrize("values, expected", [
    ({"vocab_size": None}, r"required key\(s\) \['vocab_size'\] missing"),
    ({"layer_norm_eps": "x"}, "layer_norm_eps: expected a number, got 'x'"),
    ({"hidden_dropout_prob": [0.1]}, r"hidden_dropout_prob: expected a number, got \[0.1\]"),
    ({"hidden_act": ["gelu"]}, r"hidden_act: expected an activation name, got \['gelu'\]"),
])
def test_regression_malformed_config_values(hf, values, expected):
    """Found by fuzzing: a missing key raised KeyError, a non-number float field raised
    ValueError/TypeError, a list hidden_act raised TypeError (raw, without the file)."""
    from albert_tf.interop import ConversionError
    from albert_tf.interop.converter import load_source
    config = json.loads(hf["config"])
    for key, value in values.items():
        if value is None:
            del config[key]
        else:
            config[key] = value
    case = write_case(hf, config=json.dumps(config))
    with pytest.raises(ConversionError, match=expected) as err:
        load_source("hf", case)
    assert os.path.join(case, "config.json") in str(err.value)


def test_regression_config_json_invalid_utf8(hf):
    """Found by fuzzing: a config.json that is not UTF-8 raised UnicodeDecodeError."""
    from albert_tf.interop import ConversionError
    from albert_tf.interop.converter import load_source
    case = write_case(hf, config=b'{"model_type": "albert\xff"}')
    with pytest.raises(ConversionError, match="config.json: cannot read the config"):
        load_source("hf", case)
