"""Issue #29: the mobile SDK metadata of a TFLite export is written without tflite-support
(`albert_tf.export.metadata_schema`: the schema with the flatbuffers runtime) and is what
tflite-support 0.4.4's metadata writers write for the same model: classification with a
SentencePiece and a WordPiece vocabulary, span and embedding heads. The reference runs in
the SDK environment (`tests/tflite_support_writer.py`), and its displayer reads both files.
"""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from tests.mobile_sdks import sdk_python

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
LABELS = ("negative", "positive")
SEQ = 16
SPAN_SEQ = 384          # BertQuestionAnswerer's one length
CASES = ("classification", "classification_wordpiece", "span", "embedding")


@pytest.fixture(scope="module")
def wordpiece_vocab(data_dir, tmp_path_factory) -> str:
    from albert_tf.text.wordpiece_training import train_wordpiece
    path = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
    train_wordpiece([os.path.join(data_dir, "corpus", "imdb-unsup.txt")], path,
                    vocab_size=3000, max_lines=3000)
    return path


def _model_dir(root, case: str, vocab: str) -> str:
    """A one-layer ALBERT model directory for ``case``."""
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf.checkpoints import TaskInfo
    keras.utils.set_random_seed(7)
    vocab_size = 8000 if vocab == VOCAB else 3000
    config = albert_tf.load_config("albert_tiny").replace(
        vocab_size=vocab_size, num_hidden_layers=1, max_position_embeddings=SPAN_SEQ)
    if case == "span":
        model = albert_tf.build_span_extractor(config)
        info = TaskInfo("squad", "span", None, SPAN_SEQ, text_pair=True)
    else:
        model = albert_tf.build_classifier(config, len(LABELS))
        info = TaskInfo("sst2", "classification", LABELS, SEQ)
    path = str(root / case)
    albert_tf.save_model_dir(model, path, task_info=info, vocab_file=vocab)
    return path


@pytest.fixture(scope="module", params=CASES)
def case(request, wordpiece_vocab, tmp_path_factory) -> dict:
    """The SDK-shaped conversion of the case's model (``raw``), our embedding of its metadata
    (``ours``), and what the reference writer needs."""
    from albert_tf.export import sdk_metadata
    from albert_tf.export.common import load_source
    from albert_tf.export.common import with_export_head
    from albert_tf.export.tflite import convert
    name = request.param
    vocab = wordpiece_vocab if name.endswith("wordpiece") else VOCAB
    root = tmp_path_factory.mktemp(name)
    source = load_source(_model_dir(root, name, vocab))
    if name == "embedding":
        source = with_export_head(source, "embedding")
    raw = convert(source, keep_outputs=source.head.sdk_outputs)
    embedded = sdk_metadata.sdk_vocabulary(vocab, True)
    ours = sdk_metadata.embed(raw, source.head, embedded, source.labels, "task", "none")
    return {"name": name, "root": root, "raw": raw, "ours": ours, "vocab": embedded,
            "tokenizer": "wordpiece" if vocab.endswith(".txt") else "sentencepiece",
            "labels": source.labels}


def _reference(python: str, spec: dict, path) -> dict:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    proc = subprocess.run([python, os.path.join(ROOT, "tests", "tflite_support_writer.py"),
                           str(path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def _input_tensors(model: bytes) -> dict[str, str]:
    """Signature input name -> tensor name."""
    from ai_edge_litert.interpreter import Interpreter
    details = Interpreter(model_content=model).get_signature_runner().get_input_details()
    return {name: d["name"] for name, d in details.items()}


@pytest.mark.slow
def test_the_metadata_is_tflite_supports(case):
    """tflite-support's writers, given the same model, vocabulary, labels and our texts
    (names, descriptions), write the same metadata and pack the same files; its displayer
    reads our file as our reader does."""
    from albert_tf.export import metadata_schema
    from albert_tf.export.sdk_metadata import read_embedded
    python = sdk_python()
    root = case["root"]
    vocab_name = "vocab.txt" if case["tokenizer"] == "wordpiece" else "sentencepiece.model"
    (root / vocab_name).write_bytes(case["vocab"])
    (root / "labels.txt").write_text("".join(f"{x}\n" for x in case["labels"] or ()))
    (root / "raw.tflite").write_bytes(case["raw"])
    (root / "ours.tflite").write_bytes(case["ours"])
    ours = read_embedded(case["ours"])
    inputs = _input_tensors(case["raw"])
    job = {"model": str(root / "raw.tflite"), "out": str(root / "theirs.tflite"),
           "tokenizer": case["tokenizer"], "vocab": str(root / vocab_name),
           "labels": str(root / "labels.txt") if case["labels"] else None,
           "ids": inputs["input_word_ids"], "mask": inputs["input_mask"],
           "segment_ids": inputs["input_type_ids"],
           "general": {key: ours[key] for key in ("name", "description", "version",
                                                  "author")} | {"licenses": ours["license"]},
           "outputs": [[t["name"], t["description"]]
                       for t in ours["subgraph_metadata"][0]["output_tensor_metadata"]]}
    shown = _reference(python, {"write": [job], "display": [str(root / "ours.tflite"),
                                                            job["out"]]}, root / "spec.json")
    theirs, mine = shown[job["out"]], shown[str(root / "ours.tflite")]
    assert mine["metadata"] == theirs["metadata"]
    assert mine["metadata"]["min_parser_version"] == "1.1.0"
    files = {name: content.hex()
             for name, content in metadata_schema.packed_files(case["ours"]).items()}
    assert mine["files"] == theirs["files"] == files
    assert sorted(files) == sorted(["labels.txt"] * bool(case["labels"]) + [vocab_name])
    assert dict(mine["metadata"], associated_files=sorted(files)) == ours


@pytest.mark.slow
def test_the_model_computes_as_the_converted_one(case):
    from ai_edge_litert.interpreter import Interpreter
    runners = [Interpreter(model_content=m).get_signature_runner()
               for m in (case["raw"], case["ours"])]
    seq = SPAN_SEQ if case["name"] == "span" else SEQ
    ids = np.random.default_rng(0).integers(5, 2000, (1, seq)).astype(np.int32)
    feed = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": np.zeros_like(ids)}
    want, got = (runner(**feed) for runner in runners)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


@pytest.mark.slow
def test_populate_replaces_metadata_and_files_and_reads_back(case):
    from albert_tf.export import metadata_schema
    if case["name"] != "embedding":
        pytest.skip("one case is enough for the populator's own behaviour")
    assert metadata_schema.read(case["raw"]) is None
    assert metadata_schema.packed_files(case["raw"]) == {}
    metadata = {"name": "again", "subgraph_metadata": [{
        "input_tensor_metadata": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "output_tensor_metadata": [{"name": "embedding", "associated_files": [
            {"name": "notes.txt", "type": "DESCRIPTIONS"}]}]}]}
    again = metadata_schema.populate(case["ours"], metadata, {"notes.txt": b"n"})
    assert metadata_schema.read(again) == dict(metadata, min_parser_version="1.0.0")
    assert metadata_schema.packed_files(again) == {"notes.txt": b"n"}
    from ai_edge_litert import schema_py_generated as schema
    model = schema.Model.GetRootAs(again, 0)
    names = [model.Metadata(i).Name() for i in range(model.MetadataLength())]
    assert names.count(b"TFLITE_METADATA") == 1
    assert metadata_schema.populate(case["raw"], metadata, {"notes.txt": b"n"}) == again
    with pytest.raises(ValueError, match=r"names the files \['notes.txt'\], given \[\]"):
        metadata_schema.populate(case["raw"], metadata, {})
    with pytest.raises(ValueError, match=r"per subgraph \[\(3, 0\)\], the model has "
                       r"\[\(3, 1\)\]"):
        metadata_schema.populate(case["raw"], {"subgraph_metadata": [
            {"input_tensor_metadata": [{}, {}, {}]}]}, {})
    with pytest.raises(ValueError, match="not a TFLite model"):
        metadata_schema.read(b"PK\x03\x04 not a model")


def test_pack_and_unpack_follow_the_schema():
    from albert_tf.export import metadata_schema as tm
    metadata = {"name": "m", "version": "2", "min_parser_version": "1.1.0",
                "associated_files": [{"name": "a.txt", "type": "VOCABULARY", "locale": "en"}],
                "subgraph_metadata": [{"input_tensor_metadata": [
                    {"name": "t", "dimension_names": ["batch", "seq"],
                     "stats": {"max": [255.0, 1.5], "min": [-0.25]},
                     "content": {"content_properties_type": "FeatureProperties",
                                 "content_properties": {}},
                     "process_units": [{"options_type": "SentencePieceTokenizerOptions",
                                        "options": {"sentencePiece_model": [{"name": "s"}],
                                                    "vocab_file": [{"name": "v"}]}}]}]}]}
    assert tm.unpack_metadata(tm.pack_metadata(metadata)) == metadata
    # A value at the schema's default is not stored (the displayer leaves it out too).
    assert tm.unpack_metadata(tm.pack_metadata({"associated_files": [
        {"name": "x", "type": "UNKNOWN"}]})) == {"associated_files": [{"name": "x"}]}
    with pytest.raises(ValueError, match=r"AssociatedFile has no field \['size'\]"):
        tm.pack_metadata({"associated_files": [{"name": "x", "size": 3}]})
    with pytest.raises(ValueError, match="AssociatedFile.type is one of .* not 'LABELS'"):
        tm.pack_metadata({"associated_files": [{"name": "x", "type": "LABELS"}]})
    with pytest.raises(ValueError, match="does not write ImageProperties"):
        tm.pack_metadata({"subgraph_metadata": [{"input_tensor_metadata": [{"content": {
            "content_properties_type": "ImageProperties", "content_properties": {}}}]}]})
    with pytest.raises(ValueError, match="no M001 identifier"):
        tm.unpack_metadata(b"\x00" * 16)


@pytest.mark.parametrize("metadata, version", [
    ({"name": "plain"}, "1.0.0"),
    ({"subgraph_metadata": [{"output_tensor_metadata": [
        {"associated_files": [{"name": "v", "type": "VOCABULARY"}]}]}]}, "1.0.1"),
    ({"subgraph_metadata": [{"input_tensor_metadata": [{"process_units": [
        {"options_type": "BertTokenizerOptions", "options": {}}]}]}]}, "1.1.0"),
    ({"subgraph_metadata": [{"input_process_units": []}]}, "1.1.0"),
])
def test_min_parser_version_is_the_newest_schema_member_used(metadata, version):
    """The versions of metadata_schema.fbs's change log (1.0.1: VOCABULARY files; 1.1.0:
    subgraph process units and the BERT tokenizers)."""
    from albert_tf.export.metadata_schema import min_parser_version
    assert min_parser_version(metadata) == version
