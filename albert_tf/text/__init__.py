"""Text processing: ALBERT preprocessing, SentencePiece vocabularies, Python and in-graph
tokenizers, and packing into ``[CLS] a [SEP] b [SEP]`` model inputs."""
