"""The task-head registry (`albert_tf.heads`): registration, no head ladders elsewhere, the example data
and its formats, and multiple choice / token classification through SavedModel (raw text),
TFLite and the runner (untrained albert_tiny; real text from the shared data)."""

from __future__ import annotations

import ast
import os
import re

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ = 32


def _sources():
    for base in ("albert_tf", "tflite"):
        for directory, _, files in os.walk(os.path.join(ROOT, base)):
            for name in files:
                if name.endswith(".py"):
                    yield os.path.join(directory, name)


def _head_ladder():
    """A line that compares a head (or its name) with a literal: ``head == "span"``,
    ``head.name != 'span'``, ``info.head in (...)``, ``x.name == "<a head's name>"``."""
    from albert_tf.heads import registry as heads
    names = "|".join(map(re.escape, heads.every_head()))
    return re.compile(rf"""(head|kind)(\.name)?\s*(==|!=)\s*["']"""
                      rf"""|head(\.name)?\s+(not\s+)?in\s+\("""
                      rf"""|\.name\s*(==|!=)\s*["']({names})["']""")


def _ladder_lines(lines):
    """The lines of ``lines`` that are head ladders and name a head or a task type."""
    from albert_tf.heads import registry as heads
    words = ("head", *heads.every_head(), *heads.task_types())
    ladder = _head_ladder()
    return [line.strip() for line in lines
            if ladder.search(line) and any(word in line for word in words)]


def test_ladder_check_catches_head_name_comparisons():
    assert _ladder_lines(['    if head.name == "classification":     # scores',
                          "if source.head.name != 'span':",
                          'if info.head == "span":',
                          'elif model.name == "multiple_choice":',
                          'if head in ("span", "regression"):'])
    for line in ['if layer.name == "embedding_projection":', 'if f.name == "span_lengths":',
                 'if head.sdk_label_scores:']:
        assert not _ladder_lines([line]), line


def test_no_head_ladders_outside_the_registry():
    # benchmark/end_to_end.py belongs to another part of the issue (not wired here yet).
    allowed = {os.path.join("albert_tf", "heads", "registry.py"),
               os.path.join("albert_tf", "benchmark", "end_to_end.py")}
    found = []
    for path in _sources():
        rel = os.path.relpath(path, ROOT)
        if rel in allowed:
            continue
        with open(path, encoding="utf-8") as f:
            found += [f"{rel}: {line}" for line in _ladder_lines(f)]
    assert not found, "\n".join(found)


def test_onnx_graphs_cover_exactly_the_heads_with_onnx_outputs():
    from albert_tf.heads import registry as heads
    from albert_tf.heads.base import Head
    from albert_tf.export import onnx
    assert set(onnx.HEAD_GRAPHS) == {type(heads.get(name)) for name in heads.onnx_heads()}
    for name, head in heads.every_head().items():       # a graph exactly where there are outputs
        assert (type(head).onnx_graph is not Head.onnx_graph) == bool(head.onnx_outputs), name
    assert {"classification", "regression", "pretraining"} <= set(heads.onnx_heads())
    assert "span" not in heads.onnx_heads()


def test_sdk_heads_describe_their_outputs():
    from albert_tf.heads import registry as heads
    for name in heads.sdk_heads():
        head = heads.get(name)
        assert head.sdk_runners and all(head.sdk_outputs.values()), name
        assert not head.sdk_label_scores or len(head.sdk_outputs) == 1, name
    span = heads.get("span").sdk_outputs
    assert list(span) == ["end_logits", "start_logits"]   # the order the SDK reads them
    assert "-10000 outside the context" in span["start_logits"]


def _imports(rel, module_level_only=False):
    """The modules ``rel`` imports (only those its body runs at import, when asked: not in
    functions nor ``if TYPE_CHECKING:``; class bodies run)."""
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        if module_level_only and (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or (
                isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")):
            continue
        todo += list(ast.iter_child_nodes(node))
    return names


def _head_modules():
    return [os.path.join("albert_tf", "heads", name)
            for name in sorted(os.listdir(os.path.join(ROOT, "albert_tf", "heads")))
            if name.endswith(".py")]


def test_imports_finds_module_level_and_deferred_imports(tmp_path):
    (tmp_path / "m.py").write_text("import os\nif TYPE_CHECKING:\n    import abc\n"
                                   "class A:\n    import json\n"
                                   "    def f(self):\n        import re\n"
                                   "def g():\n    from albert_tf import training\n")
    rel = os.path.relpath(str(tmp_path / "m.py"), ROOT)
    assert _imports(rel) == {"os", "abc", "json", "re", "albert_tf"}
    assert _imports(rel, module_level_only=True) == {"os", "json"}


def test_heads_import_training_and_tensorflow_only_when_asked():
    """A head module imports TensorFlow, Keras and training code (but the tasks' TF-free base,
    `albert_tf.training.task_base`) inside the functions that need them: importing the heads
    stays TF-free (the edge runner) and cycle-free."""
    assert "albert_tf.training.squad_task" not in _imports("albert_tf/training/tasks.py")
    heads = _head_modules()
    assert os.path.join("albert_tf", "heads", "classification.py") in heads
    for rel in (os.path.join("albert_tf", "task_heads.py"), *heads):   # the heads' classes
        eager = _imports(rel, module_level_only=True)       # a task's base, TF-free, only
        assert not {n for n in eager if n.startswith("albert_tf.training")} - {
            "albert_tf.training.task_base"}, rel
        assert not {n for n in eager if n.split(".")[0] in ("tensorflow", "tf_keras", "keras")
                    or n == "albert_tf.backend"}, rel


def test_no_module_class_strings_in_the_heads():
    """Head and training task are tied by a reference, never by a ``"module:Class"`` name."""
    pattern = re.compile(r"^[\w.]+:[A-Za-z_]\w*$")
    for rel in _head_modules():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        strings = [n.value for n in ast.walk(tree)
                   if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        assert not [s for s in strings if pattern.match(s)], rel


def test_registry_covers_every_head():
    from albert_tf import checkpoints
    from albert_tf.heads import registry as heads
    assert set(checkpoints.HEADS) == set(heads.HEADS)
    assert heads.for_task_type("squad").name == "span"
    assert heads.for_task_type("multiple_choice").name == "multiple_choice"
    assert heads.for_task_type("token_classification").name == "token_classification"
    with pytest.raises(ValueError, match="unknown task type"):
        heads.for_task_type("nope")
    with pytest.raises(ValueError, match="needs its labels"):
        checkpoints.TaskInfo("t", "token_classification")
    with pytest.raises(ValueError, match="unknown head"):
        checkpoints.TaskInfo("t", "nope")


def test_a_head_registers_by_decorator_and_counts_at_once():
    """``@register`` is the whole registration: the registry's lookups and `TaskInfo`
    validation see the new head; export-only heads go to `EXPORT_HEADS`; names are unique."""
    from albert_tf import checkpoints
    from albert_tf.heads import registry
    from albert_tf.heads.base import Head

    class EchoHead(Head):
        name = "test_echo"
        head_layers = ("echo",)
        task_type = "test_echo"

    class EchoView(Head):
        name = "test_echo_view"
        export_only = True

    try:
        assert registry.register(EchoHead) is EchoHead
        registry.register(EchoView)
        assert isinstance(registry.get("test_echo"), EchoHead)
        assert "test_echo" in registry.HEADS and "test_echo_view" in registry.EXPORT_HEADS
        assert registry.for_task_type("test_echo").name == "test_echo"
        assert "echo" in registry.head_layer_names()
        assert checkpoints.TaskInfo("t", "test_echo").head == "test_echo"
        assert "test_echo" in checkpoints.HEADS
        with pytest.raises(ValueError, match="registered twice"):
            registry.register(EchoHead)
        with pytest.raises(NotImplementedError, match="test_echo_view head has no training"):
            registry.get("test_echo_view").training_task(None)
    finally:
        registry.HEADS.pop("test_echo", None)
        registry.EXPORT_HEADS.pop("test_echo_view", None)
    assert "test_echo" not in registry.every_head()


def test_registry_order_and_head_layers():
    """The built-in heads, in the order messages list them, and their own layers."""
    from albert_tf import heads
    assert tuple(heads.HEADS) == ("classification", "regression", "span",
                                  "token_classification", "multiple_choice", "pretraining")
    assert tuple(heads.EXPORT_HEADS) == ("embedding",)
    assert heads.get("embedding").export_only and not heads.get("span").export_only
    assert set(heads.head_layer_names()) == {"classifier", "regressor", "token_classifier",
                                             "choice_scorer", "span", "sop", "mlm"}
    for head in heads.every_head().values():      # the interop Dense layers are head layers
        dense = {head.hf_dense, head.keras_hub_dense} - {None}    # a layer or "layer/sublayer"
        assert {name.split("/")[0] for name in dense} <= set(head.head_layers), head.name


def test_compression_export_and_converters_derive_from_the_heads():
    """Pruning's head group, QAT's head Dense layers, the decoded outputs of a foreign
    .tflite, the converters' pretraining prefixes and --head's help: from the heads."""
    from albert_tf import checkpoints
    from albert_tf.bin import export as export_bin
    from albert_tf.compression import pruning, qat
    from albert_tf.export import metadata
    from albert_tf.heads import registry as heads
    from albert_tf.interop import name_map
    assert set(pruning.HEAD_LAYER_NAMES) == set(heads.head_layer_names()) == {
        "classifier", "regressor", "token_classifier", "choice_scorer", "span", "sop", "mlm"}
    assert {"classifier", "regressor", "token_classifier", "choice_scorer"} <= set(
        qat.HEAD_DENSE_NAMES)
    assert {name: metadata.decoded_output(name) for name in heads.every_head()
            if metadata.decoded_output(name)} == {
        "classification": "probabilities", "regression": "value",
        "token_classification": "probabilities"}
    assert metadata.decoded_output("nope") is None and metadata.decoded_output(["x"]) is None
    assert name_map.HEAD_PREFIXES == ("mlm/", "sop/")
    assert checkpoints.pretrainer_prefixes() == ("embeddings/", "mlm/", "sop/")
    assert export_bin._export_heads_help() == "'embedding' (mean over the mask, L2-normalized)"
    assert heads.get("regression").distill_output is None
    assert heads.get("classification").distill_output == "logits"


def test_training_task_is_the_heads_own_class():
    """Each trained head names its task class by reference (deferred import), no strings."""
    from albert_tf import heads
    from albert_tf.heads import question_answering as squad_task
    from albert_tf.training import tasks
    expected = {"classification": tasks.ClassificationTask,
                "regression": tasks.ClassificationTask, "span": squad_task.SquadTask,
                "token_classification": tasks.TokenClassificationTask,
                "multiple_choice": tasks.MultipleChoiceTask,
                "pretraining": tasks.PretrainingTask}
    made = []

    def record(self, config, **kwargs):
        made.append((type(self), config, kwargs))

    for name, cls in expected.items():
        made.clear()
        original = cls.__init__
        cls.__init__ = record
        try:
            task = heads.get(name).training_task("cfg", x=1)
        finally:
            cls.__init__ = original
        assert type(task) is cls and made == [(cls, "cfg", {"x": 1})], name


def test_a_training_task_builds_its_model_through_its_head(monkeypatch):
    """Training builds the model its run's task.json describes, with the head's builder (the
    one export, compression and the converters use), plus the task's training options."""
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.heads import registry as heads
    from albert_tf.training.task_base import Task
    calls = []

    class SpanTask(Task):
        def __init__(self):
            self.albert_config = "config"

        def export_info(self):
            return TaskInfo("t", "span", text_pair=True), None

        def model_kwargs(self):
            return {"seq_length": 8}

    def build_model(head, config, info, **kwargs):
        calls.append((head.name, config, info.head, kwargs))
        return "model"

    monkeypatch.setattr(type(heads.get("span")), "build_model", build_model)
    assert SpanTask().head is heads.get("span")
    assert SpanTask().build_model() == "model"
    assert calls == [("span", "config", "span", {"seq_length": 8})]


def test_task_heads_is_a_deprecated_alias_of_heads():
    import importlib
    import sys

    from albert_tf import heads
    sys.modules.pop("albert_tf.task_heads", None)
    with pytest.warns(DeprecationWarning, match="albert_tf.task_heads is deprecated"):
        old = importlib.import_module("albert_tf.task_heads")
    assert old.HEADS is heads.HEADS and old.get is heads.get
    assert old.TaskHead is heads.Head
    for name in ("EXPORT_HEADS", "every_head", "sdk_heads", "onnx_heads", "for_keras_hub_task",
                 "hf_heads", "for_hf_task", "task_types", "for_task_type",
                 "ClassificationHead", "RegressionHead", "EmbeddingHead", "MultipleChoiceHead",
                 "PretrainingHead", "SpanHead", "TokenClassificationHead", "softmax",
                 "word_labels", "MAX_ANSWER_LENGTH", "SDK_SPAN_BOOST", "SDK_SPAN_MASK",
                 "SDK_SPAN_SEQ_LENGTH", "best_span", "best_spans", "sdk_span_logits"):
        assert getattr(old, name) is not None, name
    assert type(old.get("span")) is old.SpanHead


def test_word_labels_groups_pieces():
    """Pieces go to the whitespace-separated word their first character is in (training's
    words), whatever the vocabulary; a word's label is its first piece's."""
    from albert_tf.heads.decoding import word_labels
    text = "Dull lifeless , film."
    # SentencePiece: ▁dull ▁life less ▁ , ▁film . (spans include the leading space)
    spm = [(0, 4), (4, 9), (9, 13), (13, 14), (14, 15), (15, 20), (20, 21)]
    assert word_labels(text, spm, [0, 1, 2, 1, 2, 0, 2]) == (
        ["Dull", "lifeless", ",", "film."], [0, 1, 1, 0])
    # WordPiece: dull life ##less , film . (no spaces in the spans)
    wordpiece = [(0, 4), (5, 9), (9, 13), (14, 15), (16, 20), (20, 21)]
    assert word_labels(text, wordpiece, [0, 1, 2, 2, 0, 2]) == (
        ["Dull", "lifeless", ",", "film."], [0, 1, 2, 0])
    assert word_labels(text, wordpiece[:2], [0, 1]) == (["Dull", "lifeless"], [0, 1])


@pytest.fixture(scope="module")
def examples(tmp_path_factory, data_dir):
    from albert_tf.data.examples import build_examples
    return build_examples(str(tmp_path_factory.mktemp("examples")), data_dir)


def test_example_data_and_loaders(examples, data_dir):
    from albert_tf.data import task_data as data_tasks
    from albert_tf.data.examples import sentiment_lexicon
    mc_dir, tc_dir = examples["rte_choice"], examples["sst2_tags"]
    assert data_tasks.detect_task_type(os.path.join(mc_dir, "train.tsv")) == "multiple_choice"
    assert data_tasks.detect_task_type(os.path.join(tc_dir, "train.tsv")) == \
        "token_classification"
    assert data_tasks.detect_task_type(
        os.path.join(data_dir, "glue", "SST-2", "dev.tsv")) is None
    mc = data_tasks.load_multiple_choice_task(os.path.join(mc_dir, "train.tsv"),
                                              os.path.join(mc_dir, "dev.tsv"))
    assert len(mc.dev) == 139 and len(mc.train) == 4 * 1244 and mc.label_list == list("0123")
    rte = data_tasks.load_task("rte", data_dir)
    first = mc.dev[0]
    assert first.text_b[int(first.label)] == rte.dev[0].text_b   # the right second sentence
    assert len(set(first.text_b)) == 4
    tc = data_tasks.load_token_classification_task(os.path.join(tc_dir, "train.tsv"),
                                                   os.path.join(tc_dir, "dev.tsv"))
    assert tc.label_list == ["NEG", "O", "POS"] and len(tc.dev) == 872
    lexicon = sentiment_lexicon(data_dir)
    ex = tc.dev[0]
    assert list(ex.label) == [lexicon.get(w, "O") for w in ex.text_a.split()]
    # Deterministic: built twice, the same files.
    from albert_tf.data.examples import rte_choice
    again = rte_choice(data_dir, os.path.join(os.path.dirname(mc_dir), "again"))
    with open(os.path.join(mc_dir, "dev.tsv")) as a, open(os.path.join(again, "dev.tsv")) as b:
        assert a.read() == b.read()


def _model_dir(tmp_path_factory, head, label_list=None, text_pair=False):
    import albert_tf
    from albert_tf.checkpoints import TaskInfo, build_task_model
    path = str(tmp_path_factory.mktemp(head) / "model")
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    info = TaskInfo(head, head, label_list, SEQ, text_pair=text_pair)
    albert_tf.save_model_dir(build_task_model(config, info), path, task_info=info,
                             vocab_file=VOCAB)
    return path


def _serve(tmp_path_factory, model_dir):
    import tensorflow_text  # noqa: F401  (its ops)
    from albert_tf.backend import tf
    from albert_tf.export.saved_model import export_saved_model
    path = export_saved_model(model_dir, str(tmp_path_factory.mktemp("serving")))
    return tf.saved_model.load(path)


@pytest.mark.slow
def test_multiple_choice_saved_model_tflite_runner(tmp_path_factory, examples):
    from albert_tf.backend import tf
    from albert_tf.export.common import ExportError
    from albert_tf.export.tflite import export_tflite
    from albert_tf.data.task_data import load_multiple_choice_task
    from albert_tflite.runner import TFLiteRunner
    model_dir = _model_dir(tmp_path_factory, "multiple_choice", text_pair=True)
    dev = load_multiple_choice_task(os.path.join(examples["rte_choice"], "dev.tsv"),
                                    name="x").train[:3]
    contexts = [e.text_a for e in dev]
    choices = [list(e.text_b) for e in dev]
    serve = _serve(tmp_path_factory, model_dir).signatures["serving_default"]
    got = serve(context=tf.constant(contexts), choices=tf.constant(choices))
    probs = got["probabilities"].numpy()
    assert probs.shape == (3, 4) and got["choice_id"].shape == (3,)
    assert [c.decode() for c in got["choice"].numpy()] == \
        [c[i] for c, i in zip(choices, probs.argmax(-1))]
    # TFLite: one (context, choice) row per id row; the runner regroups them.
    edge = export_tflite(model_dir, str(tmp_path_factory.mktemp("edge") / "mc"),
                         seq_lengths=[16, SEQ], batch_size=2)
    runner = TFLiteRunner(edge)
    answers = runner.predict(contexts, choices)
    np.testing.assert_allclose([a["probabilities"] for a in answers], probs, atol=1e-4)
    assert [a["choice"] for a in answers] == [c.decode() for c in got["choice"].numpy()]
    with pytest.raises(ValueError, match="list of candidate texts"):
        runner.predict(contexts[:1], ["just one string"])
    with pytest.raises(ExportError, match="with_tokenizer"):
        export_tflite(model_dir, str(tmp_path_factory.mktemp("edge") / "x"),
                      with_tokenizer=True)


@pytest.mark.slow
def test_token_classification_saved_model_tflite_runner(tmp_path_factory, examples):
    from albert_tf.backend import tf
    from albert_tf.export.tflite import export_tflite
    from albert_tflite.runner import TFLiteRunner, main
    model_dir = _model_dir(tmp_path_factory, "token_classification", ("NEG", "O", "POS"))
    texts = ["a gorgeous , witty film .", "dull and lifeless"]
    got = _serve(tmp_path_factory, model_dir).signatures["serving_default"](
        text=tf.constant(texts))
    tokens = got["token"].numpy()
    assert tokens.shape == (2, SEQ) and tokens[1, 0] == b"[CLS]"
    assert got["probabilities"].shape == (2, SEQ, 3)
    labels = got["label"].numpy()
    edge = export_tflite(model_dir, str(tmp_path_factory.mktemp("edge") / "tc"),
                         seq_lengths=[SEQ], batch_size=2)
    answers = TFLiteRunner(edge).predict(texts)
    assert answers[0]["words"] == ["a", "gorgeous", ",", "witty", "film", "."]
    assert answers[1]["words"] == ["dull", "and", "lifeless"]
    # The runner's word tags are the SavedModel's tags of each word's first piece.
    starts = [i for i, t in enumerate(tokens[1]) if t.decode().startswith("\u2581")]
    assert answers[1]["labels"] == [labels[1, i].decode() for i in starts]
    with open(os.path.join(examples["sst2_tags"], "dev.tsv")) as f:
        head = [next(f) for _ in range(4)]
    inputs = tmp_path_factory.mktemp("inputs") / "dev_head.tsv"
    inputs.write_text("".join(head))
    out = inputs.parent / "out.jsonl"
    assert main([f"--model={edge}", f"--input_file={inputs}", f"--output_file={out}"]) == 0
    assert len(out.read_text().splitlines()) == 3


def test_training_tasks_keeps_the_names_of_the_tasks_moved_beside_their_heads():
    from albert_tf.heads import (classification, multiple_choice, pretraining,
                                 token_classification)
    from albert_tf.training import tasks
    assert tasks.PretrainingTask is pretraining.PretrainingTask
    assert tasks.MultipleChoiceTask is multiple_choice.MultipleChoiceTask
    assert tasks.TokenClassificationTask is token_classification.TokenClassificationTask
    assert tasks.ClassificationTask is classification.ClassificationTask
    assert tasks.load_task_data is classification.load_task_data
    assert "TokenClassificationTask" in dir(tasks)


def test_squad_task_module_is_a_deprecated_alias():
    import importlib
    import sys

    from albert_tf.heads import question_answering
    sys.modules.pop("albert_tf.training.squad_task", None)
    with pytest.warns(DeprecationWarning, match="albert_tf.training.squad_task is deprecated"):
        old = importlib.import_module("albert_tf.training.squad_task")
    assert old.SquadTask is question_answering.SquadTask
    assert old.FILE_NAMES is question_answering.FILE_NAMES


def test_task_names_and_file_headers_pick_a_heads_task_type():
    """albert-tf-finetune's task type comes from the heads: a ``--task`` name a head claims
    (SQuAD's), or a custom train file's header (the most specific head's columns first)."""
    from albert_tf.heads import registry as heads
    assert heads.for_task_name("SQuAD2").task_type == "squad"
    assert heads.for_task_name("sst2") is None and heads.for_task_name(None) is None
    assert heads.for_file_header(["tokens", "tags"]).name == "token_classification"
    assert heads.for_file_header(["context", "choice_0", "choice_1", "label"]).name == \
        "multiple_choice"
    assert heads.for_file_header(["context", "choice_0", "choice_1", "tokens", "tags"]).name \
        == "multiple_choice"
    assert heads.for_file_header(["sentence", "label"]) is None


def test_builders_live_beside_their_heads_and_keep_their_names():
    """Each task model's builder is in its head's module; the public names still resolve."""
    import albert_tf
    from albert_tf import models
    from albert_tf.checkpoints import build_task_model
    from albert_tf.heads import (classification, multiple_choice, question_answering,
                                 token_classification)
    from albert_tf.models import task_models
    homes = {"build_classifier": classification, "build_regressor": classification,
             "build_span_extractor": question_answering,
             "build_token_classifier": token_classification,
             "build_multiple_choice": multiple_choice}
    for name, module in homes.items():
        builder = getattr(module, name)
        assert getattr(albert_tf, name) is builder, name
        assert getattr(models, name) is builder and getattr(task_models, name) is builder
        assert name in dir(models) and name in models.__all__, name
    assert albert_tf.build_task_model is build_task_model


def test_custom_file_readers_live_beside_their_heads_and_keep_their_names():
    from albert_tf.data import task_data
    from albert_tf.heads import multiple_choice, registry, token_classification
    moved = {multiple_choice: ("MULTIPLE_CHOICE_SYNTAX", "load_multiple_choice_task",
                               "multiple_choice_dataset"),
             token_classification: ("TOKEN_CLASSIFICATION_SYNTAX",
                                    "load_token_classification_task", "encode_tagged",
                                    "token_classification_dataset")}
    for module, names in moved.items():
        for name in names:
            assert getattr(task_data, name) is getattr(module, name), name
            assert name in dir(task_data), name
    # the known tasks list each custom format from its head, most specific first
    assert [h.name for h in registry.custom_heads()] == ["multiple_choice",
                                                         "token_classification"]
    text = task_data.known_tasks()
    assert all(head.custom_syntax in text for head in registry.custom_heads())
    assert text.index("multiple choice:") < text.index("token classification:")


def test_example_data_is_the_heads_and_keeps_its_names():
    from albert_tf.data import examples
    from albert_tf.heads import multiple_choice, registry, token_classification
    assert examples.TASKS == ("rte_choice", "sst2_tags")
    assert [h.example_task for h in registry.every_head().values() if h.example_task] == [
        "sst2_tags", "rte_choice"]                                  # registry order
    assert examples.rte_choice is multiple_choice.rte_choice
    assert examples.sst2_tags is token_classification.sst2_tags
    assert examples.sentiment_lexicon is token_classification.sentiment_lexicon
    assert examples.TAGS == ("NEG", "O", "POS")
