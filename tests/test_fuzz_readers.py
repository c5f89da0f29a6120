"""Property-based fuzzing (hypothesis) of the task readers: TSV/CSV (`read_examples`,
`load_tsv_task`), GLUE directories (`load_task`) and SQuAD JSON (`read_squad_examples`).

The property, for every generated file: either a correct parse (for a well-formed file,
exactly what was written) or `TaskDataError` / `SquadError` whose message names the file;
never another exception, never silently wrong data. Files get ragged rows, missing or
extra columns, byte-order marks, CRLF / CR line ends, quotes, embedded delimiters and
newlines, invalid UTF-8, empty files and huge fields.

Examples per entry point in the CI profile ("ci" in conftest.py; `make fuzz`: 20x):
well-formed TSV/CSV round trip 1,000; arbitrary TSV/CSV bytes 1,000; `load_tsv_task`
300; GLUE directories (well-formed 300 + arbitrary 700); SQuAD well-formed 500 +
arbitrary JSON structure 700 + arbitrary bytes 300.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from albert_tf.data.squad import SquadError, read_squad_examples
from albert_tf.data.task_data import Example, TaskDataError, load_task, load_tsv_task, read_examples
from fuzzing import fuzz_examples

_TMP = tempfile.TemporaryDirectory(prefix="fuzz_readers_")


def _write(name: str, data: bytes) -> str:
    path = os.path.join(_TMP.name, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


# ---------------------------------------------------------------------------- strategies
# Field text: anything but the TSV structure characters (tab, and what Python's text
# reader ends a line on: \n and \r). Includes quotes, commas, BOMs, NUL, U+2028, emoji.
FIELD_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\t\n\r")
FIELD = st.one_of(
    st.text(FIELD_CHARS, max_size=20),
    st.text(st.sampled_from(' ",\'`\ufeff\x00\u2028\u00e9a1'), max_size=10),
    st.builds(lambda c, n: c * n, st.sampled_from("ab\""), st.integers(1000, 200_000)),
)
LABELS = ["0", "1", "entailment", "not_entailment"]
NEWLINE = st.sampled_from(["\n", "\r\n"])
BOM = st.sampled_from([b"", b"\xef\xbb\xbf"])


def _expected(rows, pair):
    """What reading the written rows must give (fields are stripped; a TSV line that is
    only whitespace is a blank line, skipped)."""
    return [Example(a.strip(), b.strip() if pair else None, label) for a, b, label in rows]


@pytest.mark.slow
@settings(max_examples=fuzz_examples(500))
@given(st.lists(st.tuples(FIELD, FIELD, st.sampled_from(LABELS)), max_size=8), st.booleans(),
       NEWLINE, BOM, st.booleans(), st.booleans())
@example([("x", "y", "0")], True, "\r\n", b"\xef\xbb\xbf", True, True)
def test_tsv_round_trip(rows, pair, newline, bom, final_newline, header):
    names = ["sentence1", "sentence2", "label"] if pair else ["sentence", "label"]
    lines = (["\t".join(names)] if header else []) + [
        "\t".join([a, b, label] if pair else [a, label]) for a, b, label in rows]
    text = newline.join(lines) + (newline if final_newline and lines else "")
    path = _write("rt/train.tsv", bom + text.encode("utf-8"))
    if not bom and not header and rows and rows[0][0].startswith("\ufeff"):
        # a file that starts with U+FEFF starts with a byte-order mark (not text)
        rows = [(rows[0][0][1:],) + rows[0][1:]] + rows[1:]
    cols = (names[:-1] if header else list(range(len(names) - 1)))
    label_col = names[-1] if header else len(names) - 1
    skipped = {}
    got = read_examples(path, cols, label_col, header, label_list=LABELS, skipped=skipped)
    assert got == _expected(rows, pair)
    assert skipped == {"train.tsv": 0}


@pytest.mark.slow
@settings(max_examples=fuzz_examples(500))
@given(st.lists(st.tuples(st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
                          st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
                          st.sampled_from(LABELS)), max_size=8),
       st.sampled_from(["\n", "\r\n", "\r"]), BOM, st.sampled_from([",", ";", "|"]),
       st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC]))
@example([('say "hi", ok', "line\nbreak\r\nand\rcr", "0")], "\r\n", b"\xef\xbb\xbf", ",",
         csv.QUOTE_MINIMAL)
def test_csv_round_trip(rows, line_end, bom, delimiter, quoting):
    """CSV as Python's csv module (Excel dialect) writes it: quotes, embedded delimiters and
    newlines round-trip exactly (stripped of outer whitespace)."""
    # csv.writer quotes only the line-end characters of its own lineterminator: a lone
    # "\r" in a field of a "\n"-terminated file is written bare (a broken file), so
    # fields hold only the line-end characters the writer knows to quote.
    other = "".join(c for c in "\r\n" if c not in line_end)
    rows = [tuple(f.translate({ord(c): " " for c in other}) for f in row) for row in rows]
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, delimiter=delimiter, lineterminator=line_end, quoting=quoting)
    writer.writerow(["sentence1", "sentence2", "label"])
    writer.writerows(rows)
    path = _write("rt/train.csv", bom + buf.getvalue().encode("utf-8"))
    skipped = {}
    got = read_examples(path, ["sentence1", "sentence2"], "label", True, delimiter=delimiter,
                        label_list=LABELS, skipped=skipped)
    assert got == [Example(a.strip(), b.strip(), label) for a, b, label in rows]
    assert skipped == {"train.csv": 0}


# Arbitrary files: structure characters are frequent, so rows are ragged, columns missing,
# quotes unbalanced; plus invalid UTF-8 and BOMs.
RAW_PIECES = st.sampled_from([b"\t", b"\n", b"\r\n", b"\r", b",", b'"', b"'", b"0", b"1",
                              b"label", b"sentence", b"sentence1", b"sentence2", b"a b",
                              b" ", b"\xef\xbb\xbf", b"\xff", b"\xc3", b"\xc3\xa9", b"\x00",
                              b"entailment", b"nan", b"-1.5", b"inf", b"1e3", b"\xe2\x80\xa8"])
RAW = st.one_of(st.binary(max_size=60), st.lists(RAW_PIECES, max_size=40).map(b"".join))


def _check_against_source(got, path, data: bytes, text_cols, label_list, regression):
    """No silently wrong data: every example's texts are (stripped) substrings of the file
    and its label is one of the allowed ones (or a finite number)."""
    source = data.decode("utf-8", errors="replace").replace('"', "")
    for ex in got:   # (CSV unquoting turns "" into ")
        assert ex.text_a.replace('"', "") in source
        assert ex.text_b is None if len(text_cols) == 1 else ex.text_b.replace('"', "") in source
        if regression:
            assert isinstance(ex.label, float) and ex.label == ex.label and abs(ex.label) < 1e400
        else:
            assert ex.label in label_list


@pytest.mark.slow
@settings(max_examples=fuzz_examples(1000))
@given(RAW, st.sampled_from(["train.tsv", "train.csv"]), st.booleans(), st.booleans(),
       st.booleans())
@example(b"\xef\xbb\xbfsentence\tlabel\na\t1\n", "train.tsv", True, False, False)
@example(b'sentence,label\n"unterminated,1\nb,0\n', "train.csv", True, False, False)
@example(b"sentence\tlabel\nx\tnan\ny\tinf\nz\t2.5\n", "train.tsv", True, True, False)
@example(b"", "train.tsv", True, False, True)
def test_read_examples_any_bytes(data, name, header, regression, pair):
    path = _write(f"raw/{name}", data)
    text_cols = (["sentence1", "sentence2"] if pair else ["sentence"]) if header else \
        ([0, 1] if pair else [0])
    label_col = "label" if header else -1
    label_list = None if regression else ["0", "1", "entailment"]
    skipped = {}
    try:
        got = read_examples(path, text_cols, label_col, header, is_regression=regression,
                            label_list=label_list, skipped=skipped)
    except TaskDataError as e:
        assert path in str(e) and "\n" not in str(e).strip()
        return
    _check_against_source(got, path, data, text_cols, label_list, regression)
    assert skipped[name] >= 0


@settings(max_examples=fuzz_examples(300))
@given(RAW, RAW, st.one_of(st.none(), RAW), st.booleans())
def test_load_tsv_task_any_bytes(train, dev, test, regression):
    paths = [_write("tsvtask/train.tsv", train), _write("tsvtask/dev.tsv", dev),
             _write("tsvtask/test.tsv", test) if test is not None else None]
    try:
        task = load_tsv_task(paths[0], paths[1], paths[2], is_regression=regression)
    except TaskDataError as e:
        assert any(p and p in str(e) for p in paths), str(e)
        return
    assert task.is_regression == regression
    labels = task.label_list
    for split, data in ((task.train, train), (task.dev, dev), (task.test, test or b"")):
        for ex in split:
            assert ex.text_a in data.decode("utf-8", errors="replace")
            if ex.label is not None and not regression:
                assert ex.label in labels


def test_bom_is_not_part_of_the_first_header_name(tmp_path):
    """Regression (fuzzing): a TSV/CSV saved with a UTF-8 byte-order mark (Excel, Notepad)
    failed with "no column 'sentence' in header ['\\ufeffsentence', 'label']"."""
    for name, sep in (("a.tsv", "\t"), ("a.csv", ",")):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + f"sentence{sep}label\r\nhi{sep}1\r\n".encode())
        assert read_examples(str(path), ["sentence"], "label", True) == [Example("hi", None, "1")]
    sst2 = tmp_path / "glue" / "SST-2"
    sst2.mkdir(parents=True)
    (sst2 / "train.tsv").write_bytes(b"\xef\xbb\xbfsentence\tlabel\nnice\t1\n")
    task = load_task("sst2", str(tmp_path))
    assert task.train == [Example("nice", None, "1")] and task.skipped == {"train.tsv": 0}


def test_unterminated_csv_quote_is_an_error_naming_the_line(tmp_path):
    """Regression (fuzzing): an unbalanced quote in a CSV silently swallowed the rest of the
    file into one field (here: one example "x\\nb,0\\n" instead of an error)."""
    path = tmp_path / "train.csv"
    path.write_text('sentence,label\n"x\nb,0\n')
    with pytest.raises(TaskDataError, match=r"train.csv:\d+: malformed CSV"):
        read_examples(str(path), ["sentence"], "label", True)


def test_non_finite_regression_labels_are_malformed_rows(tmp_path):
    """Regression (fuzzing): ``nan``/``inf`` scores were read as float labels (a NaN loss;
    NaN also means "unlabeled" to `encode_examples`): now skipped and counted."""
    path = tmp_path / "train.tsv"
    path.write_text("sentence\tlabel\na\tnan\nb\t-inf\nc\tInfinity\nd\t2.5\n")
    skipped = {}
    got = read_examples(str(path), ["sentence"], "label", True, is_regression=True,
                        skipped=skipped)
    assert got == [Example("d", None, 2.5)] and skipped == {"train.tsv": 3}


# ------------------------------------------------------------------------------- GLUE dirs

GLUE_LAYOUTS = {
    # task: (directory, header or None, build a row from (a, b, label))
    "sst2": ("SST-2", "sentence\tlabel", lambda a, b, l: [a, l]),
    "cola": ("CoLA", None, lambda a, b, l: ["src", l, "", a]),
    "rte": ("RTE", "index\tsentence1\tsentence2\tlabel", lambda a, b, l: ["7", a, b, l]),
    "stsb": ("STS-B", "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
             "sentence2\tscore", lambda a, b, l: ["0", "g", "f", "y", "o", "s", "t", a, b, l]),
}
GLUE_LABELS = {"sst2": ["0", "1"], "cola": ["0", "1"], "rte": ["entailment", "not_entailment"],
               "stsb": ["0.0", "2.5", "5", "-1e-3"]}


@st.composite
def glue_dirs(draw):
    task = draw(st.sampled_from(sorted(GLUE_LAYOUTS)))
    directory, header, make = GLUE_LAYOUTS[task]
    newline, bom = draw(NEWLINE), draw(BOM)
    splits = {}
    for split in draw(st.sampled_from([("train",), ("train", "dev"), ("train", "dev", "test")])):
        rows = draw(st.lists(st.tuples(FIELD.filter(lambda s: s.strip()), FIELD,
                                       st.sampled_from(GLUE_LABELS[task])), max_size=5))
        splits[split] = rows
    return task, directory, header, make, newline, bom, splits


@pytest.mark.slow
@settings(max_examples=fuzz_examples(300))
@given(glue_dirs())
def test_glue_directory_round_trip(case):
    task, directory, header, make, newline, bom, splits = case
    root = tempfile.mkdtemp(dir=_TMP.name)
    for split, rows in splits.items():
        lines = ([header] if header else []) + ["\t".join(make(a, b, l)) for a, b, l in rows]
        _write(os.path.join(root, directory, f"{split}.tsv"),
               bom + (newline.join(lines) + newline).encode("utf-8"))
    data = load_task(task, root)
    pair = task in ("rte", "stsb")
    for split in ("train", "dev", "test"):
        want = [Example(a.strip(), b.strip() if pair else None,
                        float(l) if task == "stsb" else l)
                for a, b, l in splits.get(split, [])]
        assert getattr(data, split) == want, split
    assert sum(data.skipped.values()) == 0


@settings(max_examples=fuzz_examples(700))
@given(st.sampled_from(sorted(GLUE_LAYOUTS) + ["mnli", "mrpc", "qqp", "qnli", "wnli"]),
       RAW, st.one_of(st.none(), RAW), st.one_of(st.none(), RAW))
def test_glue_directory_any_bytes(task, train, dev, test):
    from albert_tf.data.task_data import GLUE_TASKS, glue_task_key
    spec = GLUE_TASKS[glue_task_key(task)]
    root = tempfile.mkdtemp(dir=_TMP.name)
    paths = [_write(os.path.join(root, spec.directory, "train.tsv"), train)]
    if dev is not None:
        paths.append(_write(os.path.join(root, spec.directory, spec.dev_files[0]), dev))
    if test is not None:
        paths.append(_write(os.path.join(root, spec.directory, spec.test_files[0]), test))
    try:
        data = load_task(task, root)
    except TaskDataError as e:
        assert any(p in str(e) for p in paths), str(e)
        return
    allowed = set(spec.label_list or ())
    for split in (data.train, data.dev, data.test):
        for ex in split:
            assert isinstance(ex.text_a, str)
            if ex.label is not None:
                assert ex.label in allowed if spec.label_list else (
                    isinstance(ex.label, float) and abs(ex.label) < float("inf"))


# ----------------------------------------------------------------------------------- SQuAD

SQ_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)


@st.composite
def squad_documents(draw):
    """Well-formed SQuAD v2 data, with answers at their real positions, and the examples
    reading it must give (training)."""
    data, want = [], []
    for i in range(draw(st.integers(0, 3))):
        paragraphs = []
        for j in range(draw(st.integers(0, 3))):
            context = draw(SQ_TEXT)
            qas = []
            for k in range(draw(st.integers(0, 3))):
                qid, question = f"{i}-{j}-{k}", draw(SQ_TEXT)
                if context and draw(st.booleans()):
                    s = draw(st.integers(0, len(context) - 1))
                    e = draw(st.integers(s + 1, len(context)))
                    qas.append({"id": qid, "question": question,
                                "answers": [{"text": context[s:e], "answer_start": s}]})
                    want.append((qid, question, context, context[s:e], s, False))
                else:
                    qas.append({"id": qid, "question": question, "answers": [],
                                "is_impossible": True})
                    want.append((qid, question, context, None, None, True))
            paragraphs.append({"context": context, "qas": qas})
        data.append({"title": draw(SQ_TEXT), "paragraphs": paragraphs})
    return {"version": "v2.0", "data": data}, want


@settings(max_examples=fuzz_examples(500))
@given(squad_documents(), BOM, st.booleans())
def test_squad_round_trip(doc_want, bom, ascii_only):
    doc, want = doc_want
    path = _write("squad/train.json", bom + json.dumps(doc, ensure_ascii=ascii_only).encode())
    got = read_squad_examples(path, is_training=True)
    assert [(e.qas_id, e.question_text, e.context_text, e.answer_text, e.start_char,
             e.is_impossible) for e in got] == want


JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-5, 50), st.floats(allow_nan=False),
                        SQ_TEXT)
JSON = st.recursive(JSON_SCALAR, lambda c: st.one_of(
    st.lists(c, max_size=3),
    st.dictionaries(st.sampled_from(["data", "paragraphs", "context", "qas", "id", "question",
                                     "answers", "text", "answer_start", "is_impossible"]),
                    c, max_size=4)), max_leaves=12)


@st.composite
def squad_like(draw):
    """SQuAD-shaped JSON where any node may be replaced, dropped or of the wrong type."""
    def maybe(value):
        return draw(JSON) if draw(st.integers(0, 9)) == 0 else value

    def qa():
        d = {"id": maybe(draw(st.one_of(SQ_TEXT, st.integers()))), "question": maybe(draw(SQ_TEXT)),
             "answers": maybe([maybe({"text": maybe(draw(SQ_TEXT)),
                                      "answer_start": maybe(draw(st.integers(-3, 40)))})
                               for _ in range(draw(st.integers(0, 2)))]),
             "is_impossible": maybe(draw(st.booleans()))}
        return {k: v for k, v in d.items() if draw(st.integers(0, 12))}

    def para():
        return maybe({"context": maybe(draw(SQ_TEXT)),
                      "qas": maybe([maybe(qa()) for _ in range(draw(st.integers(0, 3)))])})

    return maybe({"data": maybe([maybe({"paragraphs": maybe([para() for _ in range(
        draw(st.integers(0, 2)))])}) for _ in range(draw(st.integers(0, 2)))])})


@pytest.mark.slow
@settings(max_examples=fuzz_examples(700))
@given(squad_like(), st.booleans())
@example({"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "1", "question": "q",
                                                               "is_impossible": "false"}]}]}]}, True)
@example({"data": [{"paragraphs": [{"qas": []}]}]}, False)
@example({"data": [["not an article"]]}, False)
def test_squad_any_structure(doc, is_training):
    path = _write("squad/any.json", json.dumps(doc).encode())
    try:
        got = read_squad_examples(path, is_training=is_training)
    except SquadError as e:
        assert path in str(e) and "\n" not in str(e)
        return
    for ex in got:
        assert isinstance(ex.qas_id, str) and isinstance(ex.question_text, str)
        assert isinstance(ex.context_text, str) and isinstance(ex.is_impossible, bool)
        assert all(isinstance(t, str) for t in ex.answers)
        if is_training and not ex.is_impossible:
            s = ex.start_char
            assert ex.answer_text and ex.context_text[s:s + len(ex.answer_text)] == ex.answer_text


@settings(max_examples=fuzz_examples(300))
@given(st.one_of(RAW, st.binary(max_size=200), st.just(b"[" * 100_000)))
def test_squad_any_bytes(data):
    path = _write("squad/raw.json", data)
    try:
        read_squad_examples(path, is_training=True)
    except SquadError as e:
        assert path in str(e)


def test_squad_structure_errors_name_the_file_and_the_place(tmp_path):
    """Regression (fuzzing): a paragraph without "context", an article that is not an
    object, or an answer without "answer_start" raised KeyError / AttributeError /
    TypeError; "is_impossible": "false" was read as True (bool of a non-empty string)."""
    path = tmp_path / "train.json"
    cases = [
        ({"data": [{"paragraphs": [{"qas": []}]}]}, r"data\[0\].paragraphs\[0\].context must be"),
        ({"data": [["x"]]}, r"data\[0\] must be a JSON object"),
        ({"data": [{"paragraphs": [{"context": "ab", "qas": [
            {"id": "1", "question": "q", "answers": [{"text": "a"}]}]}]}]},
         r"qas\[0\].answers\[0\].answer_start must be an integer"),
        ({"data": [{"paragraphs": [{"context": "ab", "qas": [
            {"id": "1", "question": "q", "is_impossible": "false"}]}]}]},
         r"is_impossible must be a boolean"),
        ({"data": [{"paragraphs": [{"context": "ab", "qas": [
            {"id": "1", "question": None}]}]}]}, r"question must be a string"),
    ]
    for doc, message in cases:
        path.write_text(json.dumps(doc))
        with pytest.raises(SquadError, match=message) as e:
            read_squad_examples(str(path), is_training=True)
        assert str(path) in str(e.value)


def test_squad_with_a_byte_order_mark_and_bad_answer_starts(tmp_path):
    """Regression (fuzzing): a BOM before the JSON was "Unexpected UTF-8 BOM"; an empty
    answer text "matched" anywhere (``context[s:s] == ""``) and made a training example
    with no answer token, dropped by `convert_examples_to_features` without a count: now
    a bad answer, skipped and counted (as a negative ``answer_start``). A deeply nested
    file raised RecursionError."""
    doc = {"data": [{"paragraphs": [{"context": "abc", "qas": [
        {"id": "1", "question": "q", "answers": [{"text": "", "answer_start": 1}]},
        {"id": "2", "question": "q", "answers": [{"text": "c", "answer_start": -1}]},
        {"id": "3", "question": "q", "answers": [{"text": "b", "answer_start": 1}]}]}]}]}
    path = tmp_path / "train.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    skipped = {}
    got = read_squad_examples(str(path), is_training=True, skipped=skipped)
    assert [e.qas_id for e in got] == ["3"] and skipped == {"bad_answers": 2}
    path.write_text("[" * 100_000)
    with pytest.raises(SquadError, match="is not SQuAD JSON"):
        read_squad_examples(str(path), is_training=True)
