"""The end-to-end "train large, then compress" pipeline (``albert-tf-run``)."""
