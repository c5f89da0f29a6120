#!/usr/bin/env bash
# The wheel as a new user gets it: install it into a fresh virtualenv (exact versions from
# constraints.txt), then, from an empty directory far from the checkout, run what the
# README's tour runs: the config table, the Python API, a short SST-2 finetune, a TFLite
# export and the edge runner on a sentence.
#
#   bash tools/wheel_smoke.sh dist/albert_tf-*.whl      (make wheel-smoke)
#
# Reads the task data from $ALBERT_TF_DATA_DIR (make sets it to ../shared/data).
set -euo pipefail

wheel="$(realpath "$1")"
repo="$(cd "$(dirname "$0")/.." && pwd)"
: "${ALBERT_TF_DATA_DIR:?set ALBERT_TF_DATA_DIR to the task data (make sets ../shared/data)}"
data="$(realpath "$ALBERT_TF_DATA_DIR")"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
step() { printf '[wheel-smoke %s] %s\n' "$(date +%T)" "$*"; }

step "fresh venv, pip install $(basename "$wheel")"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip
"$work/venv/bin/python" -m pip install -q -c "$repo/constraints.txt" "$wheel"
# tflite-support's metadata writers, as the README installs them (no protobuf<4 pin).
"$work/venv/bin/python" -m pip install -q -c "$repo/constraints.txt" --no-deps tflite-support
bin="$work/venv/bin"

mkdir "$work/empty" && cd "$work/empty"
# Nothing of the checkout may leak in: no PYTHONPATH, no data default.
unset PYTHONPATH ALBERT_TF_DATA_DIR

step "albert-tf-info"
"$bin/albert-tf-info" --models=albert_base,bert_base,albert_mini | tee info.txt
grep -q "| albert_base | 30000 | 128 | 768 |" info.txt

step "Python API and the edge tools import from the installed wheel"
"$bin/python" - <<'EOF'
import albert_tf, albert_tflite.runner
config = albert_tf.load_config("albert_base")
assert (config.hidden_size, config.embedding_size) == (768, 128), config
assert "site-packages" in albert_tf.__file__ and "site-packages" in albert_tflite.runner.__file__
print("albert_tf", albert_tf.__version__, "from", albert_tf.__file__)
EOF

step "no data directory: one line naming --data_dir and ALBERT_TF_DATA_DIR"
if "$bin/albert-tf-finetune" --task=sst2 --config_file=finetune_sst2_albert_mini \
    --model_dir=ft --num_train_steps=20 >nodata.txt 2>&1; then
  echo "finetune without data succeeded?"; exit 1
fi
tail -3 nodata.txt
grep -q -- "--data_dir" nodata.txt
grep -q "ALBERT_TF_DATA_DIR" nodata.txt

step "albert-tf-finetune: 20 steps of SST-2 on albert_mini"
"$bin/albert-tf-finetune" --task=sst2 --data_dir="$data" --config_file=finetune_sst2_albert_mini \
  --model_dir=ft --num_train_steps=20 --validation_interval=20 --max_seq_length=32
test -f ft/final/config.json

step "albert-tf-export --format=tflite, then albert-tflite-run on a sentence"
"$bin/albert-tf-export" --model_dir=ft/final --format=tflite --quantization=dynamic \
  --seq_lengths=32 --output=edge 2> export.err
cat export.err
# Quiet by default: no TensorFlow/absl INFO or WARNING lines ("I1201 ...", "W0000 ...").
if grep -E "^[IW][0-9]{4} " export.err; then
  echo "albert-tf-export printed TensorFlow log lines without --verbose" >&2
  exit 1
fi
# The mobile SDKs' metadata is embedded (one [1, 32] signature of a classifier).
"$bin/python" -c "
import json
sdk = json.load(open('edge/metadata.json'))['sdk']
assert sdk and 'MediaPipe TextClassifier' in sdk['runners'], sdk
print('SDK metadata for', ', '.join(sdk['runners']))"
"$bin/albert-tflite-run" --model=edge --text="a gorgeous, witty film" | tee pred.jsonl
"$bin/python" -c "
import json
row = json.loads(open('pred.jsonl').readline())
assert row['text'] == 'a gorgeous, witty film' and row['label'] in ('0', '1'), row
print('label', row['label'])"
step "ok"
