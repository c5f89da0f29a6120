"""albert-tflite-metadata: write (or show) the metadata a mobile app needs next to a ``.tflite``.

    albert-tflite-metadata --model=edge/sst2_int8 --show     # print its metadata.json
    albert-tflite-metadata --model=converted/model.tflite --model_dir=runs/sst2/best \\
        --quantization=int8    # [not run: a .tflite converted elsewhere, not in the tour]
        # writes metadata.json, the vocabulary and labels.txt beside the .tflite

``albert-tf-export --format=tflite`` and ``albert-tf-compress`` already write these files;
this tool is for models converted elsewhere, from an albert-tf model directory. It reads the
signatures and op types from the flatbuffer and the task, labels and vocabulary from the
model directory (``--show`` reads the metadata of a TFLite, ONNX or OpenVINO export).

Before writing, the .tflite is checked against --model_dir (a longest sequence within the
model's positions, one score per label of its task, and the task, labels and quantization
of its embedded mobile-SDK metadata when it has some): a mismatch is one line. The sequence
lengths recorded are the .tflite's own signatures'. A metadata.json, labels.txt or
vocabulary already beside the .tflite is replaced only when albert-tf wrote it (an
albert-tf-export directory, or this tool's earlier output) or with --overwrite.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Iterable

from albert_tf import cli
from albert_tf.export.metadata import check_beside, check_model, read_metadata, write_metadata
from albert_tf.text.vocabulary import VocabularyError, model_vocabulary


def _read_json(model_dir: str, name: str) -> dict:
    """``model_dir``'s JSON file ``name`` (task.json, config.json) as a dict; an
    `albert_tf.user_inputs.InputError` when it is not one."""
    from albert_tf import user_inputs
    path = os.path.join(model_dir, name)
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError) as e:
        raise user_inputs.InputError(f"--model_dir={model_dir}: its {name} cannot be read "
                                     f"({user_inputs.one_line(e)}); copy the model directory "
                                     "again.") from None
    if not isinstance(value, dict):
        raise user_inputs.InputError(f"--model_dir={model_dir}: its {name} is not a JSON "
                                     "object; copy the model directory again.")
    return value


def _show(model: str) -> dict:
    """The metadata.json of a TFLite, ONNX or OpenVINO export (a one-line error otherwise)."""
    from albert_tf import user_inputs
    from albert_tf.export import formats as export_formats
    formats = {f.name: f.metadata_format for f in export_formats.every_format()
               if f.metadata_format}
    kind = user_inputs.artifact_kind(model)
    if kind not in formats:
        user_inputs.edge_export(model)    # raises: says what ``model`` is instead
    return read_metadata(model, formats[kind])


@cli.guarded
def main(argv: Iterable[str] | None = None) -> int:
    from albert_tf import user_inputs
    parser = user_inputs.ArgumentParser(doc=__doc__)
    parser.add_argument("--model", required=True, help=".tflite path (or export dir with --show)")
    parser.add_argument("--model_dir", help="the albert-tf model directory it was exported from")
    parser.add_argument("--vocab_file", help="default: the model directory's vocab.model "
                        "(SentencePiece) or vocab.txt (WordPiece); it must be the vocabulary "
                        "the model was trained with")
    from albert_tf.export import quantization
    parser.add_argument("--quantization", choices=quantization.names(), default=None,
                        help="the recipe the .tflite was converted with, recorded in the "
                        "metadata (default: what the .tflite's embedded metadata says, else "
                        "'unknown')")
    parser.add_argument("--overwrite", action="store_true", help="replace a metadata.json, "
                        "labels.txt or vocabulary beside the .tflite that albert-tf did not "
                        "write (an albert-tf export's own are replaced without it)")
    parser.add_argument("--show", action="store_true", help="print metadata.json and exit")
    cli.add_verbose_argument(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    cli.quiet_logs([] if not args.verbose else ["--verbose"])
    if args.show:
        try:
            print(json.dumps(_show(args.model), indent=2))
        except ValueError as e:      # not an export, a metadata.json of another version
            parser.error(str(e))
        return 0
    if not args.model_dir:
        parser.error("--model_dir is required to write metadata")
    try:
        if os.path.isdir(args.model):
            raise user_inputs.InputError(f"--model={args.model} is a directory; pass the .tflite "
                                         "file to describe (--show reads an export directory).")
        if not os.path.isfile(args.model):
            raise user_inputs.InputError(f"--model={args.model}: no such file; pass the .tflite "
                                         "file to describe.")
        user_inputs.model_dir(args.model_dir, "--model_dir", finetuned=True, weights=False,
                              purpose="to describe")
        if args.vocab_file and not os.path.isdir(args.vocab_file):
            user_inputs.input_file(args.vocab_file, "--vocab_file", "vocabulary")
        task_info = _read_json(args.model_dir, "task.json")
        config = _read_json(args.model_dir, "config.json")
    except user_inputs.InputError as e:
        parser.error(str(e))
    try:
        vocab = model_vocabulary(args.model_dir, args.vocab_file)
    except VocabularyError as e:
        none = not args.vocab_file and "has no vocabulary" in str(e)
        parser.error(f"{e} Or pass --vocab_file." if none else str(e))
    # Before any work: the .tflite is the model of --model_dir, and nothing of the user's
    # beside it is replaced (MetadataError: one line).
    found = check_model(args.model, task_info, config, args.quantization,
                        dir_flag=f"--model_dir={args.model_dir}")
    check_beside(args.model, task_info, vocab, overwrite=args.overwrite)
    task_info = dict(task_info, max_seq_length=found["max_seq_length"])
    directory = os.path.dirname(os.path.abspath(args.model))
    meta = write_metadata(directory, os.path.basename(args.model), task_info, vocab,
                          found["quantization"])
    print(f"wrote {os.path.join(directory, 'metadata.json')} "
          f"(signatures: {', '.join(meta['signatures'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
