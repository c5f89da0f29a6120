"""tflite-support 0.4.4's metadata writers and displayer: the reference that
``tests/test_sdk_metadata_writer.py`` holds `albert_tf.export.metadata_schema` to.

    <SDK python> tests/tflite_support_writer.py spec.json

It runs in the SDK environment (``.venv-sdk``, where tflite-support is installed) and imports
neither TensorFlow nor albert_tf. ``spec``: ``{"write": [job, ...], "display": [path, ...]}``;
a job writes the BERT metadata of ``model`` to ``out`` with tflite-support's writers, as
its documentation shows for BertNLClassifier (``labels`` given) and as its generic
``MetadataWriter`` takes other heads (``outputs``: ``[[name, description], ...]``). Prints
JSON ``{path: {"metadata": the displayer's JSON, "files": {name: hex content}}}`` for the
``display`` models.
"""

from __future__ import annotations

import json
import sys


def write(job: dict) -> None:
    """Writes ``job["out"]``: ``job["model"]`` with the metadata of ``job``."""
    from tensorflow_lite_support.metadata.python.metadata_writers import (
        bert_nl_classifier, metadata_info, metadata_writer, writer_utils)
    with open(job["model"], "rb") as f:
        buffer = bytearray(f.read())
    tokenizer = {"sentencepiece": metadata_info.SentencePieceTokenizerMd,
                 "wordpiece": metadata_info.BertTokenizerMd}[job["tokenizer"]](job["vocab"])
    inputs = metadata_info.BertInputTensorsMd(buffer, job["ids"], job["mask"],
                                              job["segment_ids"], tokenizer_md=tokenizer)
    general = metadata_info.GeneralMd(**job["general"])
    if job.get("labels"):
        (name, description), = job["outputs"]
        output = metadata_info.ClassificationTensorMd(
            name=name, description=description,
            label_files=[metadata_info.LabelFileMd(job["labels"])],
            tensor_type=writer_utils.get_output_tensor_types(buffer)[0])
        writer = bert_nl_classifier.MetadataWriter.create_from_metadata_info(
            buffer, general, inputs, output)
    else:
        outputs = [metadata_info.TensorMd(name=name, description=description)
                   for name, description in job["outputs"]]
        writer = metadata_writer.MetadataWriter.create_from_metadata(
            buffer, model_metadata=general.create_metadata(),
            input_metadata=inputs.create_input_tesnor_metadata(),
            output_metadata=[md.create_metadata() for md in outputs],
            associated_files=inputs.get_tokenizer_associated_files(),
            input_process_units=inputs.create_input_process_unit_metadata())
    with open(job["out"], "wb") as f:
        f.write(writer.populate())


def display(path: str) -> dict:
    """The displayer's metadata JSON and the packed files of the model at ``path``."""
    from tensorflow_lite_support.metadata.python import metadata
    displayer = metadata.MetadataDisplayer.with_model_file(path)
    return {"metadata": json.loads(displayer.get_metadata_json()),
            "files": {name: displayer.get_associated_file_buffer(name).hex()
                      for name in displayer.get_packed_associated_file_list()}}


def main(argv: list[str]) -> None:
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    for job in spec.get("write", ()):
        write(job)
    print(json.dumps({path: display(path) for path in spec.get("display", ())}))


if __name__ == "__main__":
    main(sys.argv)
