#!/bin/sh
# The finetuned starting point of every compression experiment: albert_small (H=256,
# 4 heads, I=1024, L=4, all layers shared) on SST-2, trained with albert-tf-finetune.
set -e
cd "$(dirname "$0")/.."
OUT="${ALBERT_TF_COMPRESSION_OUT:-/tmp/albert_tf_compression}"
nice -n 10 .venv/bin/python -m albert_tf.bin.finetune --task=sst2 \
    --config_file=compress_sst2_start_albert_small --model_dir="$OUT/start"
