"""Peer artifacts on the same weights: Hugging Face PyTorch and ONNX Runtime models.

Our model directory is exported to a Hugging Face directory (`albert_tf.interop`),
which PyTorch loads directly; ONNX files are exported from that PyTorch model and
quantized with ONNX Runtime's dynamic int8 quantizer.
"""

from __future__ import annotations

import os


def export_onnx(hf_dir: str, path: str, opset: int = 17) -> str:
    """Exports the HF encoder to ONNX with dynamic batch and sequence axes."""
    import torch
    import transformers

    class Encoder(torch.nn.Module):
        """Keyword call with exactly our three inputs: tracing the HF model with
        positional inputs collides with some forward signatures (transformers 5
        BertModel: "multiple values for argument 'use_cache'")."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids, return_dict=True)
            return out.last_hidden_state, out.pooler_output

    model = Encoder(transformers.AutoModel.from_pretrained(hf_dir).eval()).eval()
    ids = torch.ones((1, 16), dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "seq"} for name in names}
    axes["last_hidden_state"] = {0: "batch", 1: "seq"}
    axes["pooler_output"] = {0: "batch"}
    tmp = path + ".tmp.onnx"
    with torch.inference_mode():
        torch.onnx.export(model, (ids, ids, torch.zeros_like(ids)), tmp, input_names=names,
                          output_names=["last_hidden_state", "pooler_output"],
                          dynamic_axes=axes, opset_version=opset, dynamo=False)
    os.replace(tmp, path)
    return path


def quantize_onnx_dynamic(path: str, output: str) -> str:
    """ONNX Runtime dynamic-range int8 (weights int8, activations quantized per call)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    tmp = output + ".tmp.onnx"
    quantize_dynamic(path, tmp, weight_type=QuantType.QInt8)
    os.replace(tmp, output)
    return output
