"""Data: pretraining data creation and readers, GLUE/TSV/SQuAD finetuning inputs, tf.data pipelines."""
