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
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterable, Iterator

from albert_tf import outputs

PROGRAM = "python -m albert_tf.data.examples"


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
