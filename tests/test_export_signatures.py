"""The one spelling of an export's buckets and signature keys (`albert_tf.export.signatures`),
importable without TensorFlow by the runners that read them."""

from __future__ import annotations

import subprocess
import sys

from albert_tf.export.signatures import bucket_lengths, signature_key


def test_bucket_lengths_are_distinct_ascending_ints():
    assert bucket_lengths([128, "16", 64, 16, 128]) == [16, 64, 128]
    assert bucket_lengths((32,)) == [32]


def test_signature_key_names_the_bucket():
    assert signature_key(64) == "seq_64"
    assert [signature_key(s) for s in bucket_lengths([128, 16])] == ["seq_16", "seq_128"]


def test_importing_the_runner_side_imports_no_tensorflow():
    code = ("import sys, albert_tf.export.signatures, albert_tf.runtime.openvino; "
            "print('tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    assert out.strip() == "False"
