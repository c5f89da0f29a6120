"""Input files read as they are (issue #44, item 2): what ``albert-tflite-run --input_file``
reads from a file (`albert_tflite.runner.read_inputs`: one text per line, TSV/CSV by
``--text_column`` / ``--text_b_column`` or a known header), the JSON lines it writes, the
blank texts every runner API and the SavedModel's signatures refuse, and the evaluator's
refusal of a model trained on another task (``--allow_task_mismatch``).

The one-line refusals of the console scripts are rows of tests/test_command_failures.py
("The edge tools: input files read as they are"); here is what must give right answers.
The file reading needs no model (the gate); the runners run the classifier shared with
tests/test_export_saved_model.py (`tests/serving_models.py`) and its ONNX and OpenVINO
exports, built once here (slow tier).
"""

from __future__ import annotations

import json
import os

import pytest

from albert_tf.user_inputs import InputError
from albert_tflite import runner as cli

SENTENCES = ["a gorgeous , witty film", "dull and lifeless", "it 's a wonderful life"]


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# --------------------------------------------------------------- reading files (no model)
def test_headerless_label_sentence_file_reads_the_sentence_column(data_dir):
    """SentEval's MR_dev.tsv (``label<TAB>sentence``, no header): refused as it is, and with
    --text_column=1 one text per row, the sentence (its labels were classified before)."""
    path = os.path.join(data_dir, "extra", "MR_dev.tsv")
    with pytest.raises(InputError, match="line 1 has 2 tab-separated columns and no known "
                       "header .*--text_column=1"):
        cli.read_inputs(path)
    texts, second = cli.read_inputs(path, text_column=1)
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    assert second is None and len(texts) == len(rows) == 2133
    assert texts == [sentence for _, sentence in rows]
    assert {label for label, _ in rows} == {"0", "1"} and not set(texts) & {"0", "1"}


def test_plain_text_is_one_text_per_line(tmp_path):
    path = write(tmp_path, "texts.txt", "\n".join(SENTENCES) + "\n\n")
    assert cli.read_inputs(path) == (SENTENCES, None)
    assert cli.read_inputs(path, "text") == (SENTENCES, None)


def test_a_tab_in_plain_text_is_refused_or_kept_whole(tmp_path):
    path = write(tmp_path, "texts.txt", "a gorgeous film\ntab\tinside\n")
    with pytest.raises(InputError, match="line 2 has 2 tab-separated columns where line 1 "
                       "has 1: pass --input_format=text"):
        cli.read_inputs(path)
    assert cli.read_inputs(path, "text") == (["a gorgeous film", "tab\tinside"], None)


def test_glue_pair_file_gives_pairs(data_dir):
    """RTE's dev.tsv (index, sentence1, sentence2, label): its pairs, as the task reader's."""
    from albert_tf.data.task_data import load_task
    texts, second = cli.read_inputs(os.path.join(data_dir, "glue", "RTE", "dev.tsv"))
    dev = load_task("rte", os.path.join(data_dir, "glue")).dev
    assert len(texts) == len(second) == len(dev) > 100
    assert [(a.strip(), b.strip()) for a, b in zip(texts, second)] == \
        [(ex.text_a, ex.text_b) for ex in dev]


def test_csv_with_a_header_reads_quoted_commas_and_line_breaks(tmp_path):
    path = write(tmp_path, "reviews.csv", 'label,sentence\n1,"a gorgeous, witty film"\n'
                 '0,"dull,\nand ""lifeless"""\n')
    assert cli.read_inputs(path) == (["a gorgeous, witty film", 'dull,\nand "lifeless"'], None)
    with pytest.raises(InputError, match="line 2 has 3 tab-separated columns"):
        cli.read_inputs(write(tmp_path, "tabs.csv", "sentence\tlabel\na\tb\tc\n"), "tsv")


def test_columns_by_name_and_by_index(tmp_path):
    unknown = write(tmp_path, "unknown.tsv", "sentiment\treview\tsummary\n1\tgood film\tgood\n"
                    "0\tflat film\tflat\n")
    with pytest.raises(InputError, match="no known header"):
        cli.read_inputs(unknown)
    assert cli.read_inputs(unknown, text_column="Review") == (["good film", "flat film"], None)
    assert cli.read_inputs(unknown, text_column="review", text_b_column=2) == (
        ["good film", "flat film"], ["good", "flat"])
    headerless = write(tmp_path, "pairs.tsv", "1\tgood film\tgood\n0\tflat film\tflat\n")
    assert cli.read_inputs(headerless, text_column=1, text_b_column=2) == (
        ["good film", "flat film"], ["good", "flat"])
    known = write(tmp_path, "known.tsv", "label\tsentence\n1\tgood film\n")
    with pytest.raises(InputError, match=r"line 1 is a header \(label, sentence\).*"
                       "--text_column=sentence"):
        cli.read_inputs(known, text_column=1)


def test_multiple_choice_header_gives_the_choices(tmp_path):
    path = write(tmp_path, "choices.tsv", "context\tchoice_0\tchoice_1\tchoice_2\tlabel\n"
                 "He opened the\tdoor\tsky\tsong\t0\n")
    assert cli.read_inputs(path) == (["He opened the"], [["door", "sky", "song"]])


@pytest.mark.parametrize("name, text, flags, words", [
    ("two.tsv", "sentence\ttext\na\tb\n", {}, "has sentence and text: pass --text_column"),
    ("ragged.tsv", "sentence\tlabel\ngood\t1\ndull\tflat\t0\n", {},
     "line 3 has 3 tab-separated columns where line 1 has 2: fix the line (a tab inside a "
     "text?)"),
    ("hole.tsv", "sentence1\tsentence2\na\t \n", {}, "line 2 has an empty text (sentence2)"),
    ("gap.txt", "a\n\nb\n", {}, "line 2 is empty"),
    ("header.tsv", "sentence\tlabel\n", {}, "has a header (sentence, label) but no texts"),
    ("commas.csv", "good, witty\n", {}, "line 1 has 2 comma-separated columns"),
    ("quote.csv", 'sentence\n"open\n', {}, "malformed CSV"),
    ("latin1.txt", "caf\xe9\n".encode("latin-1"), {}, "is not UTF-8 text"),
    ("mr.tsv", "1\tgood\n", {"text_column": 2}, "--text_column=2 but line 1 has 2 column"),
    ("mr.tsv", "1\tgood\n", {"text_column": 1, "fmt": "text"}, "takes each whole line"),
    ("mr.tsv", "1\tgood\n", {"text_b_column": 1}, "--text_b_column needs --text_column"),
])
def test_ambiguous_or_broken_files_are_refused(tmp_path, name, text, flags, words):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(InputError) as error:
        cli.read_inputs(str(path), **flags)
    assert words in str(error.value) and str(error.value).startswith("--") and \
        "\n" not in str(error.value)


def test_column_flags_are_names_or_indices():
    assert cli.column_flag("1", "--text_column") == 1
    assert cli.column_flag(" review ", "--text_column") == "review"
    assert cli.column_flag(None, "--text_column") is None
    with pytest.raises(InputError, match="--text_b_column is empty"):
        cli.column_flag(" ", "--text_b_column")
    assert cli.input_format("a.CSV") == "csv" and cli.input_format("a.txt") == "tsv"
    assert cli.input_format("a.csv", "text") == "text"


class _EchoRunner:
    """Answers each example with its index: what the CLI writes, without a model."""

    def predict(self, texts_a, texts_b=None):
        return [{"label_id": i} for i in range(len(texts_a))]


def test_json_lines_carry_the_second_texts_and_choices(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "open_runner", lambda *args: _EchoRunner())
    pairs = write(tmp_path, "pairs.tsv", "sentence1\tsentence2\tlabel\nA man sings.\tA man "
                  "performs.\t1\nIt rains.\tIt is dry.\t0\n")
    assert cli.main(["--model=unused", f"--input_file={pairs}"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [
        {"text": "A man sings.", "text_b": "A man performs.", "label_id": 0},
        {"text": "It rains.", "text_b": "It is dry.", "label_id": 1}]
    assert cli.main(["--model=unused", "--text=He opened the", "--choice=door",
                     "--choice=sky"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "text": "He opened the", "choices": ["door", "sky"], "label_id": 0}


def test_blank_texts_are_named_by_index():
    from albert_tf.runtime.runner import is_blank, refuse_blank
    assert [is_blank(t) for t in ("", " \t\u3000\u2028", b" \n", None, "a", b"\xff",
                                  "\u200b")] == [True, True, True, True, False, False, False]
    refuse_blank(["a"], [["b", "c"]])
    for texts_a, texts_b, where in ((["a", ""], None, "texts_a[1] is empty"),
                                    (["a", "b"], ["c", "\u00a0"], "texts_b[1] is only whitespace"),
                                    (["a"], [["b", " "]], "texts_b[0][1] is only whitespace")):
        with pytest.raises(ValueError, match=r"^" + where.replace("[", r"\[").replace(
                "]", r"\]") + ": a blank text has no answer"):
            refuse_blank(texts_a, texts_b)


def test_a_plain_string_is_not_a_list_of_texts():
    """Issue #44 (fresh pass): ``predict("great")`` answered five times, once per character
    (``"a gorgeous film"``: "texts_a[1] is only whitespace"); a string in place of the list
    of texts, first or second, is a TypeError saying to pass a list."""
    from albert_tf.runtime.runner import refuse_plain_strings
    refuse_plain_strings(["great"], None)
    refuse_plain_strings(("a", "b"), [["c", "d"], ["e", "f"]])
    for texts_a, texts_b, name in (("great", None, "texts_a"), (b"great", None, "texts_a"),
                                   (["great"], "fine", "texts_b")):
        with pytest.raises(TypeError, match=rf"^{name} is one string .*not a list of texts: "
                           r"pass \["):
            refuse_plain_strings(texts_a, texts_b)


def test_a_kernel_litert_lacks_is_one_line_naming_the_export():
    """Issue #44 (fresh pass): an int16x8 export (made before they were refused) failed at
    its first call with a 19-28-line ``RuntimeError: SquaredDifference only supports
    FLOAT32 and INT32 now, got 7`` in albert-tflite-run, -evaluate and -benchmark; LiteRT's
    failure at invoke is one `ExportError` naming the export and its quantization."""
    from albert_tf.export.errors import ExportError
    from albert_tf.runtime.tflite import _invoking, invoke_errors

    def kernel(**inputs):
        raise RuntimeError("SquaredDifference only supports FLOAT32 and INT32 now, got 7.Node "
                           "number 11 (SQUARED_DIFFERENCE) failed to invoke.\n")
    call = _invoking(kernel, "edge/i16/model.tflite", {"quantization": "int16x8"})
    with pytest.raises(ExportError, match=r"^edge/i16/model.tflite \(quantization int16x8\): "
                       r"LiteRT cannot run it \(SquaredDifference only supports FLOAT32 .*\); "
                       "export it again with albert-tf-export") as raised:
        call(input_word_ids=None)
    assert "\n" not in str(raised.value)
    with invoke_errors("x.tflite"):      # anything else passes through
        pass
    with pytest.raises(KeyError):
        with invoke_errors("x.tflite"):
            raise KeyError("input_mask")


def test_the_recorded_task_must_be_the_scored_one(tmp_path):
    """`check_task` reads the export's metadata.json: another task is refused naming both
    and --allow_task_mismatch; the same task under another spelling, or none, is scored."""
    from albert_tf.runtime.evaluate import check_task
    export = tmp_path / "export"
    export.mkdir()
    (export / "metadata.json").write_text(json.dumps({"task": "sst2"}))
    with pytest.raises(InputError, match=r"trained on task 'sst2' .*not --task=cola.*"
                       "--allow_task_mismatch"):
        check_task(str(export), "cola")
    check_task(str(export), "SST-2")
    check_task(str(export), "cola", allow_mismatch=True)
    (export / "metadata.json").write_text(json.dumps({"task": None}))
    check_task(str(export), "cola")


# --------------------------------------------------------------- with the models (slow)
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The shared classifier (task sst2, labels negative/positive): its model directory,
    SavedModel and TFLite export (`tests/serving_models.py`)."""
    from serving_models import served_head
    return served_head(tmp_path_factory, "classification")


@pytest.fixture(scope="module")
def server_exports(served, tmp_path_factory):
    """Its ONNX and OpenVINO exports (built here, once)."""
    from albert_tf.export.common import load_source
    from albert_tf.export.onnx import export_onnx
    from albert_tf.export.openvino import export_openvino
    root = tmp_path_factory.mktemp("runner_inputs")
    source = load_source(served["model_dir"])
    return {"onnx": export_onnx(served["model_dir"], str(root / "onnx"), source=source),
            "openvino": export_openvino(served["model_dir"], str(root / "openvino"),
                                        source=source)}


@pytest.mark.slow
def test_cli_on_a_label_sentence_file_answers_each_sentence(served, tmp_path, capsys):
    from albert_tflite.runner import TFLiteRunner
    path = write(tmp_path, "mr.tsv", "".join(f"{i % 2}\t{s}\n" for i, s in enumerate(SENTENCES)))
    out = str(tmp_path / "out.jsonl")
    assert cli.main([f"--model={served['tflite']}", f"--input_file={path}", "--text_column=1",
                     f"--output_file={out}"]) == 0
    with open(out, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    expected = TFLiteRunner(served["tflite"]).predict(SENTENCES)
    assert [line.pop("text") for line in lines] == SENTENCES
    assert lines == json.loads(json.dumps(expected))


@pytest.mark.slow
def test_every_runner_refuses_a_blank_text(served, server_exports):
    from albert_tf.runtime.onnx import OnnxClassifier
    from albert_tf.runtime.openvino import OpenVinoClassifier
    from albert_tflite.runner import TFLiteRunner
    runners = [TFLiteRunner(served["tflite"]), OnnxClassifier(server_exports["onnx"]),
               OpenVinoClassifier(server_exports["openvino"])]
    for runner in runners:
        assert len(runner.predict(SENTENCES)) == 3
        for texts, words in ((SENTENCES + [""], "texts_a[3] is empty"),
                             ([SENTENCES[0], " \t\u3000"], "texts_a[1] is only whitespace")):
            with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
                runner.predict(texts)


@pytest.mark.slow
def test_every_runner_refuses_a_plain_string(served, server_exports):
    from albert_tf.runtime.onnx import OnnxClassifier
    from albert_tf.runtime.openvino import OpenVinoClassifier
    from albert_tf.runtime.runner import open_runner
    from albert_tflite.runner import TFLiteRunner
    runners = [TFLiteRunner(served["tflite"]), OnnxClassifier(server_exports["onnx"]),
               OpenVinoClassifier(server_exports["openvino"]), open_runner(served["tflite"])]
    for runner in runners:
        assert len(runner.predict(["a gorgeous film"])) == 1
        for texts in ("great", "a gorgeous film"):
            with pytest.raises(TypeError, match="texts_a is one string"):
                runner.predict(texts)


@pytest.mark.slow
def test_a_swapped_vocabulary_is_refused_when_the_export_loads(served, server_exports,
                                                                tmp_path):
    """Issue #44 (fresh pass): an export whose vocab.model was replaced by another
    vocabulary answered without an error (other ids, other answers); metadata.json records
    the vocabulary's sha256 and size, and every runner compares them when it loads. An
    export written before they were recorded loads as before."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    from albert_tf.export.metadata import MetadataError
    from albert_tf.runtime.onnx import OnnxClassifier
    from albert_tf.runtime.openvino import OpenVinoClassifier
    from albert_tflite.runner import TFLiteRunner
    from session_builds import writable_copy
    for kind, export, runner in (("tflite", served["tflite"], TFLiteRunner),
                                 ("onnx", server_exports["onnx"], OnnxClassifier),
                                 ("openvino", server_exports["openvino"], OpenVinoClassifier)):
        copy = writable_copy(export, str(tmp_path / kind))
        with open(os.path.join(copy, "metadata.json"), encoding="utf-8") as f:
            meta = json.load(f)
        vocab = os.path.join(copy, meta["tokenizer"]["vocab_file"])
        assert meta["tokenizer"]["vocab_bytes"] == os.path.getsize(vocab)
        proto = model_pb2.ModelProto()
        with open(vocab, "rb") as f:
            proto.ParseFromString(f.read())
        proto.pieces[10].score -= 1.0          # another vocabulary, still a valid one
        with open(vocab, "wb") as f:
            f.write(proto.SerializeToString())
        with pytest.raises(MetadataError, match=r"vocab.model is not the vocabulary this "
                           r"export was made with \(\d+ bytes; metadata.json records \d+ "
                           r"bytes, sha256 [0-9a-f]{12}\.\.\.\)"):
            runner(copy)
        for key in ("vocab_sha256", "vocab_bytes"):      # an export from before: not checked
            del meta["tokenizer"][key]
        with open(os.path.join(copy, "metadata.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f)
        assert len(runner(copy).predict(["a gorgeous film"])) == 1


@pytest.mark.slow
def test_saved_model_signatures_refuse_a_blank_text(served):
    """``serving_default`` and ``tokenize`` (raw strings in): an empty or whitespace-only
    string is an InvalidArgumentError (TF Serving: HTTP 400) naming its index; whitespace
    is Python's (`str.isspace`, the runners' `is_blank`), character for character."""
    import sys

    import tensorflow_text  # noqa: F401  (its ops)
    from albert_tf.backend import tf
    from albert_tf.runtime.runner import is_blank
    from albert_tf.export.saved_model import BLANK_TEXT, refuse_blank
    signatures = tf.saved_model.load(served["path"]).signatures
    answered = signatures["serving_default"](text=tf.constant(SENTENCES + ["\u200b", "\xff"]))
    assert answered["probabilities"].shape == (5, 2)
    for name in ("serving_default", "tokenize"):
        for batch, index in (([SENTENCES[0], ""], 1), (["\u2003\n "], 0)):
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=rf"text\[{index}\] is empty or only whitespace"):
                signatures[name](text=tf.constant(batch))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"choices\[1\]\[0\] is empty"):
        refuse_blank([tf.constant(["he opened the"] * 2), tf.constant([["door", "sky"],
                                                                      ["\t", "sky"]])],
                     ["context", "choices"])                 # multiple choice: [B, C]
    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000]
    graph = tf.strings.regex_full_match([c.encode() for c in chars], BLANK_TEXT).numpy()
    assert [c for c, blank in zip(chars, graph) if bool(blank) != is_blank(c)] == []


@pytest.mark.slow
def test_evaluate_another_task_only_when_allowed(served, data_dir, tmp_path, capsys):
    """A copy of the sst2 export answering CoLA's labels (0, 1) is scored on cola only with
    --allow_task_mismatch; the export itself (negative, positive) not even then."""
    from albert_tf.runtime.evaluate import evaluate, main
    from session_builds import writable_copy
    export = writable_copy(served["tflite"], str(tmp_path / "export"))
    with open(os.path.join(export, "metadata.json"), encoding="utf-8") as f:
        meta = json.load(f)
    with open(os.path.join(export, "metadata.json"), "w", encoding="utf-8") as f:
        json.dump(dict(meta, labels=["0", "1"]), f)
    with pytest.raises(InputError, match="--allow_task_mismatch"):
        evaluate(export, "cola", data_dir, limit=20)
    result = evaluate(export, "cola", data_dir, limit=20, allow_task_mismatch=True)
    assert result["examples"] == 20 and 0 <= result["accuracy"] <= 1 and "matthews" in result
    assert main([f"--model={export}", "--task=cola", f"--data_dir={data_dir}", "--limit=20",
                 "--allow_task_mismatch"]) == 0
    assert f"{export} (none): accuracy " in capsys.readouterr().out
    with pytest.raises(InputError, match="answers the labels negative, positive; task cola's "
                       "are 0, 1"):
        evaluate(served["tflite"], "cola", data_dir, limit=20, allow_task_mismatch=True)


def test_the_export_kinds_follow_the_format_registry(monkeypatch):
    """Every --format is an export kind with a description, and the albert-tflite tools take
    exactly the formats with a raw-text runner; a format added to the registry joins both
    without another list to edit."""
    import dataclasses

    from albert_tf import user_inputs
    from albert_tf.export import formats
    names = formats.names()
    assert set(names) | {"serving"} == set(user_inputs.export_kinds())
    assert all(user_inputs.describe(n) for n in user_inputs.export_kinds())
    assert not set(names) & set(user_inputs.KINDS), "a format's description is its title"
    assert user_inputs.describe("openvino") == \
        "an OpenVINO IR (albert-tf-export --format=openvino)"
    assert set(user_inputs.edge_formats()) == {"tflite", "onnx", "openvino"}
    extra = dataclasses.replace(formats.get("onnx"), name="onnx_copy")
    registered = formats.every_format()
    monkeypatch.setattr(formats, "every_format", lambda: (*registered, extra))
    assert "onnx_copy" in user_inputs.export_kinds()
    assert "onnx_copy" in user_inputs.edge_formats()
    assert user_inputs.describe("onnx_copy") == \
        "an ONNX export (albert-tf-export --format=onnx_copy)"
