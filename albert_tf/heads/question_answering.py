"""The span head: SQuAD question answering, an answer span of the context (its decoding:
`albert_tf.heads.span`)."""

from __future__ import annotations

from albert_tf.heads import span
from albert_tf.heads.base import Head, lazy_tf
from albert_tf.heads.registry import register
from albert_tf.heads.span import best_spans, sdk_span_logits


@register
class SpanHead(Head):
    """SQuAD span extraction over ``[CLS] question [SEP] context [SEP]``."""

    name = "span"
    head_layers = ("span",)
    text_pair = True
    task_type = "squad"
    sdk_outputs = {
        "end_logits": (f"Logits of the answer end per input position: {span.SDK_SPAN_MASK:g} "
                       "outside the context; the end of albert-tf's best span raised by "
                       f"{span.SDK_SPAN_BOOST:g}."),
        "start_logits": (f"Logits of the answer start per input position: "
                         f"{span.SDK_SPAN_MASK:g} outside the context; the start of "
                         f"albert-tf's best span raised by {span.SDK_SPAN_BOOST:g}.")}
    sdk_runners = ("Task Library BertQuestionAnswerer",)
    hf_task = "ForQuestionAnswering"                   # qa_outputs on every token, no pooler
    hf_dense = "span/dense"
    hf_linear = "qa_outputs"
    hf_note = ("logits equal on every unpadded token; ours are -1e9 at padding, Hugging "
               "Face's qa_outputs leaves padding unmasked (its question-answering pipeline "
               "masks it)")

    def training_task(self, config, **kwargs):
        from albert_tf.training.squad_task import SquadTask
        return SquadTask(config, **kwargs)

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_span_extractor
        return build_span_extractor(config, **build_kwargs)

    def text_inputs(self, info):
        return ("question", "context")

    def outputs(self, source, outputs, features, sep_id):
        spans = best_spans(outputs["start_logits"], outputs["end_logits"],
                           features["input_type_ids"], features["input_mask"],
                           features["input_word_ids"], sep_id)
        return dict(spans, start_logits=outputs["start_logits"],
                    end_logits=outputs["end_logits"])

    def serving_strings(self, module, result, features, texts):
        tf = lazy_tf()
        start, end = result["start_index"], result["end_index"]
        positions = tf.ragged.range(tf.maximum(start, 0), tf.where(start >= 0, end + 1, 0))
        ids = tf.gather(features["input_word_ids"], positions, batch_dims=1)   # [B, (n)]
        return {"answer": module.tokenizer.detokenize(ids)}

    def lite_outputs(self, source, model, features, sep_id):
        raw = model(features, training=False)   # spans are decoded by the runner
        return {k: raw[k] for k in ("start_logits", "end_logits")}

    def sdk_lite_outputs(self, source, model, features, sep_id):
        raw = self.lite_outputs(source, model, features, sep_id)
        return sdk_span_logits(raw["start_logits"], raw["end_logits"],
                               features["input_type_ids"], features["input_mask"],
                               features["input_word_ids"], sep_id)

    def sdk_problem(self, info, seq_length):
        return span.sdk_problem(info, seq_length)

    def runner_pair(self, meta):
        return True

    def decode(self, runner, outs, rows, example):
        return span.decode_answer(runner, outs[0], rows[0] if rows else None)
