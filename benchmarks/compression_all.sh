#!/bin/sh
# Every measured compression experiment, in order (about 2 hours on 2 shared cores), then
# the timing of all TFLite files together and the README table.
set -e
cd "$(dirname "$0")/.."
OUT="${ALBERT_TF_COMPRESSION_OUT:-/tmp/albert_tf_compression}"
mkdir -p "$OUT/logs"
[ -f "$OUT/start/best/task.json" ] || benchmarks/compression_start.sh
for step in baseline structured pruning qat qat_ranges distillation combos quantized; do
    nice -n 10 .venv/bin/python "benchmarks/compression_$step.py" > "$OUT/logs/$step.log" 2>&1
done
nice -n 10 .venv/bin/python benchmarks/compression_pruning.py --with_embeddings \
    > "$OUT/logs/pruning_emb.log" 2>&1
# Timings are not niced.
.venv/bin/python benchmarks/compression_structured_shapes.py > "$OUT/logs/shapes.log" 2>&1
.venv/bin/python benchmarks/compression_latency.py > "$OUT/logs/latency.log" 2>&1
.venv/bin/python benchmarks/compression_table.py
