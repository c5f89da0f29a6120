"""CPU inference benchmark: ALBERT vs BERT, our artifacts vs PyTorch and ONNX Runtime."""
