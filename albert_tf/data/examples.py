"""Small real example tasks for the multiple-choice and token-classification heads.

    python -m albert_tf.data.examples --output_dir=/tmp/examples [--data_dir=DIR]

Each is its head's (``example_task``, built by its ``example_data``; `albert_tf.heads`).
Built deterministically (fixed seeds) from the train and dev splits of the shared data only
(never ``test``), written under ``--output_dir`` (never into the data directory). Each task
folder is an albert-tf output of its own (`albert_tf.outputs.staged_output`, kind
``example data``): both are checked before anything is read, a folder holding files
albert-tf did not write is refused, and an earlier one is replaced only with ``--overwrite``:

``rte_choice/{train,dev}.tsv``  multiple choice (`albert_tf.heads.multiple_choice.rte_choice`,
                                `load_multiple_choice_task`):
    the context is an RTE ``sentence1``; the right choice is its own ``sentence2`` and the
    ``num_choices - 1`` distractors are ``sentence2`` of other rows of the same split; the
    position of the right one is random. Train: ``train_copies`` examples per RTE row, each
    with other distractors (4 x 1,244); dev: one per row (139).
``sst2_tags/{train,dev}.tsv``  token classification
    (`albert_tf.heads.token_classification.sst2_tags`, `load_token_classification_task`): every word of an SST-2 text is
    tagged ``POS`` / ``NEG`` when it is in a sentiment lexicon, else ``O``. The lexicon is
    derived from SST-2 train: its one-word phrases with their label (1: POS, 0: NEG).
    Train: ``num_train`` SST-2 train phrases of at least 6 words holding a lexicon word;
    dev: the SST-2 dev sentences (the rule is the same, so dev measures how well the model
    learned it, on unseen sentences).

Also, as functions (no folder of the command): `cloze_squad`, SQuAD v1.1-format span
questions (`squad_json`) built from the unlabeled IMDB corpus (``corpus/imdb-unsup.txt``):
a name or a number of 2-3 consecutive sentences replaced by "what", the sentences the
context (`cloze_items`); the held-out questions come from other documents and are sent as an
app may send them (`app_variants`). The mobile-SDK span study trains and compares on these
(``studies/mobile_sdks/span.py``, ``tests/test_mobile_sdk_span.py``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import re
import sys
from typing import Iterable, Iterator, Sequence

from albert_tf import outputs

PROGRAM = "python -m albert_tf.data.examples"
IMDB_CORPUS = ("corpus", "imdb-unsup.txt")   # under the data root
CLOZE_EVAL_FIRST_DOC = 30_000   # the cloze set's held-out documents of the corpus start here
# A name (one capitalized word) or a number: what a cloze question asks for.
NAME_OR_NUMBER = re.compile(r"^\W*([A-Z][a-z]+|\d[\d,.:]*\d|\d)\W*$")
ClozeItem = dict     # {"question", "context", "answer", "answer_start"} (str, str, str, int)


def _example_heads():
    """The heads with example data (``example_task``), in the order of their custom file
    formats (`albert_tf.heads.registry.custom_heads`)."""
    import albert_tf.heads.registry as heads
    return [head for head in heads.custom_heads() if head.example_task]


def __getattr__(name: str):
    """``TASKS`` (the folders written under --output_dir, from the heads), and the example
    builders that moved beside their heads (kept for existing imports)."""
    if name == "TASKS":
        return tuple(head.example_task for head in _example_heads())
    moved = {"rte_choice": "albert_tf.heads.multiple_choice",
             "TAGS": "albert_tf.heads.token_classification",
             "sentiment_lexicon": "albert_tf.heads.token_classification",
             "sst2_tags": "albert_tf.heads.token_classification"}
    if name in moved:
        import importlib
        return getattr(importlib.import_module(moved[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_task_folder(output_dir: str, name: str, data_dir: str, overwrite: bool) -> str:
    """`albert_tf.outputs.check_output` of the task folder ``name`` under ``output_dir``."""
    return outputs.check_output(os.path.join(output_dir, name), kind=outputs.EXAMPLE_DATA,
                                inputs=[("--data_dir", data_dir)], overwrite=overwrite,
                                flag=f"--output_dir/{name}")


@contextlib.contextmanager
def staged_task_folder(output_dir: str, name: str, data_dir: str,
                       overwrite: bool) -> Iterator[str]:
    """The staging directory of the task folder ``name`` (`albert_tf.outputs.staged_output`)."""
    with outputs.staged_output(os.path.join(output_dir, name), kind=outputs.EXAMPLE_DATA,
                               inputs=[("--data_dir", data_dir)], overwrite=overwrite,
                               flag=f"--output_dir/{name}") as stage:
        yield stage


def read_rows(path: str) -> list[list[str]]:
    """The tab-separated rows of ``path`` (blank lines skipped)."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def write_tsv(path: str, header: list[str], rows: list[list[str]]) -> None:
    """Writes ``header`` and ``rows`` as a TSV (tabs inside a cell become spaces)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(c.replace("\t", " ") for c in row) + "\n")


def corpus_documents(data_dir: str, first: int, count: int) -> Iterator[str]:
    """Documents ``first .. first + count - 1`` of the unlabeled IMDB corpus under the data
    root ``data_dir`` (`IMDB_CORPUS`; `albert_tf.data.documents.iter_documents`: empty
    documents are not counted), each one string (its lines joined with spaces)."""
    from albert_tf.data.documents import iter_documents
    documents = iter_documents([os.path.join(data_dir, *IMDB_CORPUS)])
    return (" ".join(lines) for lines in itertools.islice(documents, first, first + count))


def _cloze(sentences: list[str], rng: random.Random) -> ClozeItem | None:
    """A question on 2-3 consecutive ``sentences``: one of them with a name or a number
    (not its first word: 1-2 capitalized words, or digits) replaced by "what"; the answer
    stripped of edge punctuation, as SQuAD answers are. None when the context is shorter
    than 12 or longer than 60 words or holds no such word."""
    context = " ".join(sentences)
    if not 12 <= len(context.split()) <= 60:
        return None
    candidates = []
    for target, sentence in enumerate(sentences):
        words = [m.span() for m in re.finditer(r"\S+", sentence)]
        if 4 <= len(words) <= 25:
            candidates += [(target, words, k) for k in range(1, len(words))
                           if NAME_OR_NUMBER.match(sentence[slice(*words[k])])]
    if not candidates:
        return None
    target, words, a = rng.choice(candidates)
    sentence = sentences[target]
    b = a + 1 if a + 1 < len(words) and NAME_OR_NUMBER.match(
        sentence[slice(*words[a + 1])]) and sentence[words[a][1] - 1].isalnum() else a
    raw = sentence[words[a][0]:words[b][1]]
    text = raw.strip(".,;:!?\"'()-*")
    start = words[a][0] + raw.index(text)
    question = sentence[:start] + "what" + sentence[start + len(text):]
    question = question.rstrip(" .!?") + "?"
    offset = sum(len(s) + 1 for s in sentences[:target])
    return {"question": question, "context": context, "answer": text,
            "answer_start": offset + start}


def cloze_items(documents: Iterable[str], seed: int, limit: int) -> list[ClozeItem]:
    """At most ``limit`` cloze items from ``documents``, one per context window of 2 or 3
    sentences (seeded)."""
    rng = random.Random(seed)
    items: list[ClozeItem] = []
    for doc in documents:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", doc) if s]
        i = 0
        while i < len(sentences) and len(items) < limit:
            n = rng.choice((2, 3))
            item = _cloze(sentences[i:i + n], rng)
            if item:
                items.append(item)
            i += n
        if len(items) >= limit:
            break
    return items


def squad_json(items: Sequence[ClozeItem], title: str = "imdb-cloze") -> dict:
    """SQuAD v1.1 JSON of ``items`` (question ids ``q0``, ``q1``, ... in order)."""
    paragraphs = [{"context": it["context"], "qas": [{
        "id": f"q{i}", "question": it["question"],
        "answers": [{"text": it["answer"], "answer_start": it["answer_start"]}]}]}
        for i, it in enumerate(items)]
    return {"version": "1.1", "data": [{"title": title, "paragraphs": paragraphs}]}


def app_variants(items: Sequence[ClozeItem]) -> list[ClozeItem]:
    """The items as an app may send them: every third upper-cased, every third with curly
    quotes, accents and a tab (the mobile SDKs split words on ``' '`` only)."""
    def app_text(text: str, i: int, context: bool = False) -> str:
        if i % 3 == 1:
            return text.upper()
        if i % 3 == 2:
            text = text.replace("'", "\u2019").replace("the ", "thé ").replace('"', "\u201c")
            return text.replace(". ", ".\t", 1) if context else text
        return text

    return [dict(it, question=app_text(it["question"], i),
                 context=app_text(it["context"], i, context=True),
                 answer=app_text(it["answer"], i)) for i, it in enumerate(items)]


def cloze_squad(data_dir: str, num_train: int, num_eval: int, seed: int = 0
                ) -> tuple[list[ClozeItem], list[ClozeItem]]:
    """``(train, held_out)``: cloze items from the first corpus documents, and held-out ones
    from the documents starting at `CLOZE_EVAL_FIRST_DOC`, as `app_variants`. ``data_dir``:
    the data root (None: ``$ALBERT_TF_DATA_DIR``)."""
    from albert_tf import resources
    data_dir = resources.data_dir(data_dir)
    train = cloze_items(corpus_documents(data_dir, 0, max(200, num_train // 3)), seed,
                        num_train)
    held_out = cloze_items(corpus_documents(data_dir, CLOZE_EVAL_FIRST_DOC, 50 + num_eval),
                           seed + 1, num_eval)
    return train, app_variants(held_out)


def build_examples(output_dir: str, data_dir: str | None = None,
                   overwrite: bool = False) -> dict[str, str]:
    """The example task of every head that has one (``example_task``); ``{name:
    directory}``. Every folder is checked before any is built (`albert_tf.outputs.OutputError`: a user's folder, an earlier one without
    ``overwrite``, a place inside the data directory...)."""
    from albert_tf import resources
    data_dir = resources.data_dir(data_dir)
    outputs.check_location(output_dir, inputs=[("--data_dir", data_dir)], flag="--output_dir")
    heads = _example_heads()
    for head in heads:
        check_task_folder(output_dir, head.example_task, data_dir, overwrite)
    return {head.example_task: head.example_data(data_dir, output_dir, overwrite)
            for head in heads}


def main(argv: Iterable[str] | None = None) -> int:
    from albert_tf import user_inputs
    parser = user_inputs.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n")[0])
    parser.add_argument("--output_dir", required=True, help="where the task folders go")
    parser.add_argument("--data_dir", default=None, help="default $ALBERT_TF_DATA_DIR")
    parser.add_argument("--overwrite", action="store_true", help="replace task folders an "
                        "earlier run wrote (never a folder of the user's)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        built = build_examples(args.output_dir, args.data_dir, args.overwrite)
    except (ValueError, OSError) as e:   # OutputError, DataDirError, a missing GLUE file
        parser.exit(2, f"{PROGRAM}: error: {user_inputs.one_line(e)}\n")
    for name, path in built.items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
