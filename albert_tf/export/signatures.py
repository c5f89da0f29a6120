"""The id signatures of an export: one static ``[batch, seq]`` function per bucket.

A bucket is a sequence length; an export holds one signature per bucket, keyed
`signature_key` (``seq_<n>``), over the same weights. `bucket_lengths` is the one way a list
of requested lengths becomes the buckets (distinct, ascending); `concrete_functions` builds
the TensorFlow functions the TFLite and OpenVINO converters convert.

Importing this module imports no TensorFlow (the runners read `signature_key`);
`concrete_functions` imports it when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    from albert_tf.backend import keras
    from albert_tf.export.common import ExportSource


def signature_key(seq_length: int) -> str:
    """The signature key of the bucket of ``seq_length`` ids: ``seq_<n>``."""
    return f"seq_{seq_length}"


def bucket_lengths(lengths: Iterable[int]) -> list[int]:
    """``lengths`` as buckets: distinct ints, ascending."""
    return sorted({int(length) for length in lengths})


def _id_outputs(source: ExportSource, model: keras.Model, sdk: bool = False):
    """The outputs of the id signatures: the head's (`albert_tf.heads`); ``sdk``:
    those of its SDK-shaped export (``sdk_lite_outputs``)."""
    from albert_tf.text.vocabulary import load_tokenizer
    sep_id = load_tokenizer(source.vocab_file).sep_id
    lite_outputs = source.head.sdk_lite_outputs if sdk else source.head.lite_outputs

    def outputs(features):
        return lite_outputs(source, model, features, sep_id)

    return outputs


def concrete_functions(source: ExportSource, model: keras.Model, seq_lengths: Sequence[int],
                       batch_size: int | None, with_tokenizer: bool = False,
                       keep_outputs: Sequence[str] | None = None):
    """(holder module, concrete functions) to convert.

    Signature keys are the function names (`signature_key` per bucket), except that the
    TFLite converter names a model's only signature ``serving_default``. ``keep_outputs``:
    only these outputs (the SDK-shaped export: ``head.sdk_outputs``). ``with_tokenizer``:
    instead ``serving_default`` (strings in) and ``tokenize`` around the vocabulary's
    TFLite tokenizer, at ``seq_lengths[0]``.
    """
    from albert_tf.backend import tf
    from albert_tf.export.common import ExportError
    from albert_tf.networks import INPUT_NAMES
    holder = tf.Module()    # keeps the model's variables reachable for the converter
    holder.model = model
    all_outputs = _id_outputs(source, model, sdk=bool(keep_outputs))

    def outputs(features):
        result = all_outputs(features)
        return {k: result[k] for k in keep_outputs} if keep_outputs else result
    functions = []
    if with_tokenizer:
        if not source.head.lite_tokenizer:
            raise ExportError(f"--with_tokenizer: not for {source.task_info.head} models; "
                              "export ids signatures (the runner tokenizes).")
        from albert_tf.export.tokenizers import lite_tokenizer
        info = source.task_info
        holder.tokenizer = lite_tokenizer(source.vocab_file, info.do_lower_case,
                                          max_seq_length=seq_lengths[0])
        text_specs = [tf.TensorSpec([batch_size], tf.string, name=n) for n in source.text_inputs]

        def serving_default(*texts):
            features = holder.tokenizer(*texts)
            return outputs(features)

        def tokenize(*texts):
            return holder.tokenizer(*texts)

        for fn in (serving_default, tokenize):
            functions.append(tf.function(fn, autograph=False).get_concrete_function(*text_specs))
        return holder, functions
    for seq in seq_lengths:
        specs = [tf.TensorSpec([batch_size, seq], tf.int32, name=n) for n in INPUT_NAMES]

        def bucket(input_word_ids, input_mask, input_type_ids):
            return outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                            "input_type_ids": input_type_ids})

        bucket.__name__ = signature_key(seq)
        functions.append(tf.function(bucket, autograph=False).get_concrete_function(*specs))
    return holder, functions
