"""TFLite model metadata, written and read with the flatbuffers runtime from its schema.

The mobile SDKs (MediaPipe Tasks, the TFLite Task Library) read a model's metadata from a
``ModelMetadata`` flatbuffer (TFLite's ``metadata_schema.fbs``, file identifier ``M001``)
held in the model's buffer named ``TFLITE_METADATA``, and the files it names (vocabulary,
labels) from an uncompressed zip appended to the model file. `populate` writes both,
`read` and `packed_files` read them back.

Metadata is a dict shaped like the schema's JSON (what ``flatc --json`` and tflite-support's
``MetadataDisplayer`` print): the schema's field names, enum and union-type values by name,
fields at their default left out; e.g. ``{"name": "m", "subgraph_metadata":
[{"input_process_units": [{"options_type": "BertTokenizerOptions", "options":
{"vocab_file": [{"name": "vocab.txt", "type": "VOCABULARY"}]}}]}]}``. `SCHEMA` holds the
tables of a text model's metadata; the others (images, audio, score calibration, tensor
groups, custom metadata) are neither written nor read.

No package writes this schema beside TensorFlow: tflite-support 0.4.4 (its metadata
writers) pins ``protobuf<4`` and links libusb; MediaPipe 1.2.3's writers import a native
module its wheel lacks, and MediaPipe (every release with numpy 2) requires ``absl-py~=2.3``
where tensorflow-model-optimization 0.8.1 requires ``absl-py~=1.2``.
"""

from __future__ import annotations

import io
import zipfile
from typing import Mapping

import flatbuffers
from flatbuffers import encode, number_types, packer, util
from flatbuffers.table import Table

METADATA_NAME = "TFLITE_METADATA"      # the model's Metadata entry the SDKs look up
METADATA_IDENTIFIER = b"M001"
MODEL_IDENTIFIER = b"TFL3"
# The tables of metadata_schema.fbs that text models use: fields as "name:type" in the
# schema's order (a field's slot); a union is its "<name>_type" field then "<name>:union".
SCHEMA = {
    "ModelMetadata": ("name:string", "description:string", "version:string",
                      "subgraph_metadata:[SubGraphMetadata]", "author:string",
                      "license:string", "associated_files:[AssociatedFile]",
                      "min_parser_version:string"),
    "SubGraphMetadata": ("name:string", "description:string",
                         "input_tensor_metadata:[TensorMetadata]",
                         "output_tensor_metadata:[TensorMetadata]",
                         "associated_files:[AssociatedFile]",
                         "input_process_units:[ProcessUnit]",
                         "output_process_units:[ProcessUnit]"),
    "TensorMetadata": ("name:string", "description:string", "dimension_names:[string]",
                       "content:Content", "process_units:[ProcessUnit]", "stats:Stats",
                       "associated_files:[AssociatedFile]"),
    "Content": ("content_properties_type:ContentProperties", "content_properties:union"),
    "FeatureProperties": (),
    "Stats": ("max:[float]", "min:[float]"),
    "ProcessUnit": ("options_type:ProcessUnitOptions", "options:union"),
    "BertTokenizerOptions": ("vocab_file:[AssociatedFile]",),
    "SentencePieceTokenizerOptions": ("sentencePiece_model:[AssociatedFile]",
                                      "vocab_file:[AssociatedFile]"),
    "AssociatedFile": ("name:string", "description:string", "type:AssociatedFileType",
                       "locale:string", "version:string"),
}
# Enums: their values' names in value order, and their scalar type.
ENUMS = {
    "AssociatedFileType": (("UNKNOWN", "DESCRIPTIONS", "TENSOR_AXIS_LABELS",
                            "TENSOR_VALUE_LABELS", "TENSOR_AXIS_SCORE_CALIBRATION",
                            "VOCABULARY", "SCANN_INDEX_FILE"), number_types.Int8Flags),
    "ContentProperties": (("NONE", "FeatureProperties", "ImageProperties",
                           "BoundingBoxProperties", "AudioProperties"),
                          number_types.Uint8Flags),
    "ProcessUnitOptions": (("NONE", "NormalizationOptions", "ScoreCalibrationOptions",
                            "ScoreThresholdingOptions", "BertTokenizerOptions",
                            "SentencePieceTokenizerOptions", "RegexTokenizerOptions"),
                           number_types.Uint8Flags),
}
_FIELDS = {table: tuple(tuple(f.split(":")) for f in fields) for table, fields in SCHEMA.items()}
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)    # a fixed date: the same export gives the same bytes


def pack_metadata(metadata: Mapping) -> bytes:
    """The ``M001`` flatbuffer of ``metadata`` (a ``ModelMetadata`` dict, as is)."""
    builder = flatbuffers.Builder(1024)
    builder.Finish(_pack(builder, "ModelMetadata", metadata), METADATA_IDENTIFIER)
    return bytes(builder.Output())


def _pack(builder: flatbuffers.Builder, table: str, value: Mapping) -> int:
    if table not in _FIELDS:
        raise ValueError(f"TFLite metadata: albert-tf does not write {table} tables.")
    fields = _FIELDS[table]
    unknown = set(value) - {name for name, _ in fields}
    if unknown:
        raise ValueError(f"TFLite metadata: {table} has no field {sorted(unknown)}.")
    children = {name: _pack_child(builder, kind, value[name], value.get(f"{name}_type"))
                for name, kind in fields if name in value and kind not in ENUMS}
    builder.StartObject(len(fields))    # (children first: a flatbuffer is built bottom-up)
    for slot, (name, kind) in enumerate(fields):
        if name in children:
            builder.PrependUOffsetTRelativeSlot(slot, children[name], 0)
        elif name in value:
            names, flags = ENUMS[kind]
            if value[name] not in names:
                raise ValueError(f"TFLite metadata: {table}.{name} is one of {names}, not "
                                 f"{value[name]!r}.")
            builder.PrependSlot(flags, slot, names.index(value[name]), 0)
    return builder.EndObject()


def _pack_child(builder: flatbuffers.Builder, kind: str, value, union_type: str | None) -> int:
    if kind == "string":
        return builder.CreateString(value)
    if kind in ("union", *_FIELDS):
        return _pack(builder, union_type if kind == "union" else kind, value)
    element = kind[1:-1]
    if element == "float":
        builder.StartVector(4, len(value), 4)
        for x in reversed(value):
            builder.PrependFloat32(x)
        return builder.EndVector()
    items = [builder.CreateString(v) if element == "string" else _pack(builder, element, v)
             for v in value]
    builder.StartVector(4, len(items), 4)
    for item in reversed(items):
        builder.PrependUOffsetTRelative(item)
    return builder.EndVector()


def unpack_metadata(buffer: bytes) -> dict:
    """The ``ModelMetadata`` dict of an ``M001`` flatbuffer (fields outside `SCHEMA` left
    out)."""
    if not util.BufferHasIdentifier(buffer, 0, METADATA_IDENTIFIER):
        raise ValueError("TFLite metadata: the buffer has no M001 identifier.")
    root = encode.Get(packer.uoffset, buffer, 0)
    return _unpack(Table(buffer, root), "ModelMetadata")


def _unpack(tab: Table, table: str) -> dict:
    out: dict = {}
    for slot, (name, kind) in enumerate(_FIELDS[table]):
        off = tab.Offset(4 + 2 * slot)
        if not off:
            continue
        if kind in ENUMS:
            names, flags = ENUMS[kind]
            number = tab.Get(flags, tab.Pos + off)
            out[name] = names[number] if 0 <= number < len(names) else number
        elif kind == "string":
            out[name] = tab.String(tab.Pos + off).decode("utf-8")
        elif kind in ("union", *_FIELDS):
            member = out.get(f"{name}_type") if kind == "union" else kind
            if member in _FIELDS:
                out[name] = _unpack(Table(tab.Bytes, tab.Indirect(tab.Pos + off)), member)
        else:
            element, start = kind[1:-1], tab.Vector(off)
            at = [start + 4 * i for i in range(tab.VectorLen(off))]
            if element == "float":
                out[name] = [tab.Get(number_types.Float32Flags, x) for x in at]
            elif element == "string":
                out[name] = [tab.String(x).decode("utf-8") for x in at]
            else:
                out[name] = [_unpack(Table(tab.Bytes, tab.Indirect(x)), element) for x in at]
    return out


def associated_file_names(metadata: Mapping) -> list[str]:
    """The names of the files that ``metadata`` names: on the model, subgraphs, tensors and
    the tokenizers of process units; in that order."""
    def files(table: Mapping) -> list[str]:
        units = [*table.get("input_process_units", ()), *table.get("output_process_units", ()),
                 *table.get("process_units", ())]
        options = [u.get("options", {}) for u in units]
        return [f["name"] for f in table.get("associated_files", ())] + [
            f["name"] for o in options for key in ("sentencePiece_model", "vocab_file")
            for f in o.get(key, ())]

    graphs = metadata.get("subgraph_metadata", ())
    return files(metadata) + [name for g in graphs for table in (
        g, *g.get("input_tensor_metadata", ()), *g.get("output_tensor_metadata", ()))
        for name in files(table)]


def min_parser_version(metadata: Mapping) -> str:
    """The oldest metadata parser that reads all of ``metadata`` (its
    ``min_parser_version``): the schema version that added the newest member it uses, as
    tflite-support's populator computes it, among the members of `SCHEMA`: 1.1.0 for process
    units on a subgraph and for tokenizer options, 1.0.1 for a ``VOCABULARY`` file on the
    model, a subgraph or a tensor, else 1.0.0."""
    graphs = metadata.get("subgraph_metadata", ())
    tensors = [t for g in graphs for key in ("input_tensor_metadata", "output_tensor_metadata")
               for t in g.get(key, ())]
    tokenizer = any(u.get("options_type") in ("BertTokenizerOptions",
                                              "SentencePieceTokenizerOptions")
                    for t in tensors for u in t.get("process_units", ()))
    if tokenizer or any("input_process_units" in g or "output_process_units" in g
                        for g in graphs):
        return "1.1.0"
    files = [f for table in (metadata, *graphs, *tensors)
             for f in table.get("associated_files", ())]
    return "1.0.1" if any(f.get("type") == "VOCABULARY" for f in files) else "1.0.0"


def populate(model: bytes, metadata: Mapping, files: Mapping[str, bytes]) -> bytes:
    """``model`` (a ``.tflite`` flatbuffer) with ``metadata`` (its ``min_parser_version``
    set) in its ``TFLITE_METADATA`` buffer, replacing metadata already there, and ``files``
    ({name: content}: exactly those that the metadata names) appended as an uncompressed zip
    (files packed before are dropped). ``metadata`` describes the model's first subgraph,
    as the SDKs read it: one subgraph metadata, a tensor metadata per input and output."""
    from ai_edge_litert import schema_py_generated as schema

    if not schema.Model.ModelBufferHasIdentifier(model, 0):
        raise ValueError("TFLite metadata: not a TFLite model (no TFL3 identifier).")
    graph = schema.Model.GetRootAs(model, 0).Subgraphs(0)
    want = [(graph.InputsLength(), graph.OutputsLength())]
    got = [(len(g.get("input_tensor_metadata", ())), len(g.get("output_tensor_metadata", ())))
           for g in metadata.get("subgraph_metadata", ())]
    if got != want:
        raise ValueError(f"TFLite metadata: (inputs, outputs) described per subgraph {got}, "
                         f"the model has {want}.")
    named = associated_file_names(metadata)
    if sorted(set(named)) != sorted(files):
        raise ValueError(f"TFLite metadata: it names the files {sorted(set(named))}, given "
                         f"{sorted(files)}.")
    buffer = schema.BufferT()
    buffer.data = pack_metadata(dict(metadata, min_parser_version=min_parser_version(metadata)))
    graph = schema.ModelT.InitFromObj(schema.Model.GetRootAs(model, 0))
    graph.buffers = graph.buffers or []
    graph.metadata = graph.metadata or []
    entry = next((m for m in graph.metadata if m.name.decode() == METADATA_NAME), None)
    if entry is None:
        entry = schema.MetadataT()
        entry.name, entry.buffer = METADATA_NAME, len(graph.buffers)
        graph.metadata.append(entry)
        graph.buffers.append(buffer)
    else:
        graph.buffers[entry.buffer] = buffer
    builder = flatbuffers.Builder(len(model) + 4096)
    builder.Finish(graph.Pack(builder), MODEL_IDENTIFIER)
    out = io.BytesIO(builder.Output())
    with zipfile.ZipFile(out, "a") as archive:    # offsets count from the model's start
        for name, content in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=_ZIP_DATE), content)
    return out.getvalue()


def read(model: bytes) -> dict | None:
    """The ``ModelMetadata`` dict in ``model``'s ``TFLITE_METADATA`` buffer, or None."""
    from ai_edge_litert import schema_py_generated as schema

    if not schema.Model.ModelBufferHasIdentifier(model, 0):
        raise ValueError("TFLite metadata: not a TFLite model (no TFL3 identifier).")
    graph = schema.Model.GetRootAs(model, 0)
    for i in range(graph.MetadataLength()):
        entry = graph.Metadata(i)
        if entry.Name() == METADATA_NAME.encode():
            return unpack_metadata(graph.Buffers(entry.Buffer()).DataAsNumpy().tobytes())
    return None


def packed_files(model: bytes) -> dict[str, bytes]:
    """The files appended to ``model`` as a zip ({name: content}; empty if none)."""
    try:
        with zipfile.ZipFile(io.BytesIO(model)) as archive:
            return {name: archive.read(name) for name in archive.namelist()}
    except zipfile.BadZipFile:
        return {}
