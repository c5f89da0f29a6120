"""Knowledge distillation: a finetuned teacher into a smaller student, trained with ``fit``.

Loss per batch (Hinton et al.; hidden/attention terms as TinyBERT)::

    alpha * T^2 * KL(softmax(t / T) || softmax(s / T))        soft targets
  + (1 - alpha) * CE(labels, s)                              hard labels
  + hidden_weight * mean_l MSE(h_s[l], h_t[map[l]])          same H only
  + attention_weight * mean_l KL(A_t[map[l]] || A_s[l])      same head count only

Teacher and student are any of our task models (ALBERT with any sharing, BERT):
hidden states are the outputs of each transformer layer, read from the functional
graph (`layer_outputs`); attention distributions are recomputed from each attention
block's input with the block's own query/key layers (`AttentionProbs`), so nothing in
the model changes. Shapes are checked when the `Distiller` is built, before training.
"""

from __future__ import annotations

import numpy as np

from albert_tf.backend import keras, tf
from albert_tf.compression.compression_config import CompressionConfigError, DistillationConfig
from albert_tf.config import AlbertConfig
from albert_tf.layers import FeedForwardBlock, SelfAttentionBlock
from albert_tf.networks.encoder import sublayer_name


# ------------------------------------------------------------------------------- probes
def _model_nodes(model: keras.Model, cls) -> list:
    """The nodes of ``model``'s graph whose layer is a ``cls``, input side first."""
    nodes = []
    for depth in sorted(model._nodes_by_depth, reverse=True):   # noqa: SLF001
        for node in model._nodes_by_depth[depth]:                # noqa: SLF001
            if isinstance(node.layer, cls):
                nodes.append(node)
    return nodes


def layer_outputs(model: keras.Model) -> list:
    """The L hidden states ``[B, S, H]`` (outputs of every transformer layer), in order."""
    config: AlbertConfig = model.albert_config
    nodes = _model_nodes(model, FeedForwardBlock)
    per_layer = config.inner_group_num
    return [node.outputs for node in nodes][per_layer - 1::per_layer]


@keras.utils.register_keras_serializable(package="albert_tf")
class AttentionProbs(keras.layers.Layer):
    """Attention distribution ``[B, N, F, T]`` of ``block`` on its input ``[x, mask_bias]``,
    recomputed with the block's own query/key layers (no new weights)."""

    def __init__(self, block: SelfAttentionBlock, **kwargs):
        super().__init__(**kwargs)
        self._block = [block]            # a list: not tracked, the weights stay the block's

    def call(self, inputs):
        block = self._block[0]
        x, mask_bias = inputs
        seq = tf.shape(x)[1]
        q = block._split_heads(block.query(x), seq)                 # noqa: SLF001
        k = block._split_heads(block.key(x), seq)                   # noqa: SLF001
        scores = tf.matmul(q, k, transpose_b=True) / float(np.sqrt(block.head_size))
        return tf.nn.softmax(tf.cast(scores, tf.float32) + tf.cast(mask_bias, tf.float32), -1)


def attention_maps(model: keras.Model) -> list:
    """The attention distribution of each attention call (one per layer and inner layer)."""
    maps = []
    for i, node in enumerate(_model_nodes(model, SelfAttentionBlock)):
        x, mask_bias = node.call_args[0]
        maps.append(AttentionProbs(node.layer, name=f"attention_probs_{i}")([x, mask_bias]))
    return maps


def probe(model: keras.Model, hidden: bool, attention: bool, key: str = "logits") -> keras.Model:
    """A model over ``model``'s own layers returning ``logits`` and, if asked, ``hidden``
    (list of L) and ``attention`` (list of L) tensors."""
    outputs = {"logits": model.output[key] if isinstance(model.output, dict) else model.output}
    if hidden:
        outputs["hidden"] = layer_outputs(model)
    if attention:
        maps = attention_maps(model)
        per_layer = model.albert_config.inner_group_num
        outputs["attention"] = maps[per_layer - 1::per_layer]
    return keras.Model(model.inputs, outputs, name=f"{model.name}_probe")


def uniform_layer_map(student_layers: int, teacher_layers: int) -> list[int]:
    """Teacher layer (1-based) for each student layer: evenly spaced, last to last."""
    return [int(round((i + 1) * teacher_layers / student_layers))
            for i in range(student_layers)]


def check_compatible(student: AlbertConfig, teacher: AlbertConfig,
                     cfg: DistillationConfig) -> list[int]:
    """The layer map; a `CompressionConfigError` when the requested matching is impossible."""
    layer_map = list(cfg.layer_map) or uniform_layer_map(student.num_hidden_layers,
                                                         teacher.num_hidden_layers)
    if cfg.hidden_weight or cfg.attention_weight:
        if len(layer_map) != student.num_hidden_layers:
            raise CompressionConfigError(
                f"distillation.layer_map: {len(layer_map)} entries for a student of "
                f"{student.num_hidden_layers} layers.")
        bad = [t for t in layer_map if not 1 <= t <= teacher.num_hidden_layers]
        if bad:
            raise CompressionConfigError(f"distillation.layer_map: teacher layers {bad} are not "
                                         f"in 1..{teacher.num_hidden_layers}.")
    if cfg.hidden_weight and student.hidden_size != teacher.hidden_size:
        raise CompressionConfigError(
            f"distillation.hidden_weight: hidden-state matching needs the same hidden size; "
            f"student H={student.hidden_size}, teacher H={teacher.hidden_size}. Set it to 0.")
    if cfg.attention_weight and student.num_attention_heads != teacher.num_attention_heads:
        raise CompressionConfigError(
            f"distillation.attention_weight: attention matching needs the same number of "
            f"heads; student {student.num_attention_heads}, teacher "
            f"{teacher.num_attention_heads}. Set it to 0.")
    return layer_map


# ------------------------------------------------------------------------------- losses
def soft_target_loss(student_logits, teacher_logits, temperature: float):
    """``T^2 * KL(softmax(t/T) || softmax(s/T))``, mean over the batch."""
    t = tf.nn.log_softmax(tf.cast(teacher_logits, tf.float32) / temperature, -1)
    s = tf.nn.log_softmax(tf.cast(student_logits, tf.float32) / temperature, -1)
    kl = tf.reduce_sum(tf.exp(t) * (t - s), -1)
    return temperature ** 2 * tf.reduce_mean(kl)


def attention_loss(student_probs, teacher_probs, input_mask):
    """KL(A_t || A_s) per query row, averaged over heads and real query positions."""
    eps = 1e-8
    kl = tf.reduce_sum(teacher_probs * (tf.math.log(teacher_probs + eps)
                                        - tf.math.log(student_probs + eps)), -1)   # [B, N, F]
    mask = tf.cast(input_mask, tf.float32)[:, tf.newaxis, :]
    return tf.reduce_sum(kl * mask) / tf.maximum(
        tf.reduce_sum(mask) * tf.cast(tf.shape(kl)[1], tf.float32), 1.0)


class Distiller(keras.Model):
    """Trains ``student`` from ``teacher`` (frozen) with ``fit``; ``call`` is the student's.

    Compile with an optimizer only (``distiller.compile(optimizer=...)``); the dataset
    yields ``(features, labels)``. Metrics: ``loss``, ``soft``, ``hard`` (and
    ``hidden`` / ``attention``), ``acc`` (student accuracy on the batch).
    """

    def __init__(self, student: keras.Model, teacher: keras.Model, cfg: DistillationConfig,
                 **kwargs):
        super().__init__(**kwargs)
        self.cfg = cfg
        self.layer_map = check_compatible(student.albert_config, teacher.albert_config, cfg)
        hidden, attention = bool(cfg.hidden_weight), bool(cfg.attention_weight)
        self.student = student
        self.teacher = teacher
        teacher.trainable = False
        self.student_probe = probe(student, hidden, attention)
        self.teacher_probe = probe(teacher, hidden, attention)
        names = ["loss", "soft", "hard"] + (["hidden"] if hidden else []) + \
            (["attention"] if attention else [])
        self._trackers = {n: keras.metrics.Mean(name=n) for n in names}
        self._accuracy = keras.metrics.SparseCategoricalAccuracy(name="acc")

    @property
    def metrics(self):
        return list(self._trackers.values()) + [self._accuracy]

    def call(self, inputs, training=None):
        return self.student(inputs, training=training)

    def _distillation_terms(self, features, labels, training: bool):
        cfg = self.cfg
        t = self.teacher_probe(features, training=False)
        s = self.student_probe(features, training=training)
        terms = {"soft": soft_target_loss(s["logits"], t["logits"], cfg.temperature),
                 "hard": tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                     labels, tf.cast(s["logits"], tf.float32), from_logits=True))}
        loss = cfg.alpha * terms["soft"] + (1.0 - cfg.alpha) * terms["hard"]
        if cfg.hidden_weight:
            pairs = [(s["hidden"][i], t["hidden"][j - 1]) for i, j in enumerate(self.layer_map)]
            terms["hidden"] = tf.add_n([tf.reduce_mean(tf.square(
                tf.cast(a, tf.float32) - tf.cast(b, tf.float32))) for a, b in pairs]) / len(pairs)
            loss += cfg.hidden_weight * terms["hidden"]
        if cfg.attention_weight:
            pairs = [(s["attention"][i], t["attention"][j - 1])
                     for i, j in enumerate(self.layer_map)]
            terms["attention"] = tf.add_n([attention_loss(a, b, features["input_mask"])
                                           for a, b in pairs]) / len(pairs)
            loss += cfg.attention_weight * terms["attention"]
        terms["loss"] = loss
        return terms, s["logits"]

    def train_step(self, data):
        features, labels = data
        with tf.GradientTape() as tape:
            terms, logits = self._distillation_terms(features, labels, training=True)
        variables = self.student.trainable_variables
        grads = tape.gradient(terms["loss"], variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        for name, value in terms.items():
            self._trackers[name].update_state(value)
        self._accuracy.update_state(labels, logits)
        return {m.name: m.result() for m in self.metrics}

    def test_step(self, data):
        features, labels = data
        terms, logits = self._distillation_terms(features, labels, training=False)
        for name, value in terms.items():
            self._trackers[name].update_state(value)
        self._accuracy.update_state(labels, logits)
        return {m.name: m.result() for m in self.metrics}


# ------------------------------------------------------------------------ student init
def init_student_from_teacher(student: keras.Model, teacher: keras.Model,
                              layer_map: list[int] | None = None) -> dict[str, list[str]]:
    """Copies the teacher's weights into the student where shapes agree: embeddings,
    projection, pooler, head, and for student layer i the teacher layer ``layer_map[i]``
    (1-based; uniform by default). Returns ``{"copied": [...], "skipped": [...]}``."""
    s_cfg, t_cfg = student.albert_config, teacher.albert_config
    layer_map = layer_map or uniform_layer_map(s_cfg.num_hidden_layers, t_cfg.num_hidden_layers)
    t_weights = {w.name.rsplit(":", 1)[0]: w for w in teacher.weights}
    s_weights = {w.name.rsplit(":", 1)[0]: w for w in student.weights}
    source_of: dict[str, str] = {}
    for name in s_weights:
        source_of[name] = name
    for i in range(s_cfg.num_hidden_layers):
        for kind in ("attention", "ffn"):
            s_owner = sublayer_name(s_cfg, i, kind)
            t_owner = sublayer_name(t_cfg, layer_map[i] - 1, kind)
            for name in s_weights:
                if name.startswith(s_owner + "/"):
                    source_of[name] = t_owner + name[len(s_owner):]
    copied, skipped = [], []
    for name, variable in s_weights.items():
        src = t_weights.get(source_of[name])
        if src is not None and src.shape == variable.shape:
            variable.assign(src)
            copied.append(name)
        else:
            skipped.append(name)
    return {"copied": sorted(copied), "skipped": sorted(skipped)}
