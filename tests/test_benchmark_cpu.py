"""The CPU model of the benchmark: ISA-specific peaks, a measured clock, and random-weight
models of the official shapes that the exporters accept."""

import os

import numpy as np
import pytest
import sentencepiece as spm

from albert_tf.benchmark import cpu
from albert_tf.benchmark.artifacts import random_model_dir
from albert_tf.text.vocabulary import pad_sentencepiece

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")

ZEN3 = ("sse4_2", "avx", "avx2", "fma")                      # EPYC 7xx3: AVX2 + FMA only
ZEN4 = ZEN3 + ("avx512f", "avx512bw", "avx512vl", "avx512_vnni")
SAPPHIRE_RAPIDS = ZEN4 + ("avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8",
                          "amx_bf16")


def test_peaks_follow_the_instruction_set():
    zen3 = cpu.peak_model(ZEN3, "AuthenticAMD", 25)
    assert (zen3.fp32_flop_per_cycle, zen3.int8_ops_per_cycle) == (32, 64)
    assert "vpmaddubsw" in zen3.int8_vector_instruction and "no VNNI" in zen3.isa + \
        zen3.int8_vector_instruction
    zen4 = cpu.peak_model(ZEN4, "AuthenticAMD", 25)           # 512-bit ops on 256-bit pipes
    assert (zen4.fp32_flop_per_cycle, zen4.int8_ops_per_cycle) == (32, 128)
    zen5 = cpu.peak_model(ZEN4, "AuthenticAMD", 26)           # full-width AVX-512
    assert (zen5.fp32_flop_per_cycle, zen5.int8_ops_per_cycle) == (64, 256)
    spr = cpu.peak_model(SAPPHIRE_RAPIDS, "GenuineIntel", 6)
    assert spr.fp32_flop_per_cycle == 64 and spr.int8_vector_ops_per_cycle == 256
    assert spr.int8_amx_ops_per_cycle == 2048 and spr.int8_ops_per_cycle == 2048
    assert "AMX-INT8" in spr.isa and "AMX" not in zen4.isa
    client = cpu.peak_model(ZEN3 + ("avx_vnni",), "GenuineIntel", 6)   # AVX-VNNI, no AVX-512
    assert (client.fp32_flop_per_cycle, client.int8_ops_per_cycle) == (32, 128)


def test_this_machine_is_described_with_a_plausible_measured_clock():
    info = cpu.cpu_info()
    # Dependent adds once read 18 GHz on Intel cores that fold immediate adds; dependent
    # multiplies cannot be folded.
    assert 0.8 < info.clock_ghz < 6.5, info.describe()
    assert info.peak_int8_gops(2) >= info.peak_int8_vector_gops(2) > info.peak_fp32_gflops(2)
    text = info.describe()
    assert info.model_name in text and "ISA:" in text and "GHz" in text


def test_padded_vocabulary_tokenizes_as_before_and_never_emits_the_padding(tmp_path, data_dir):
    padded = pad_sentencepiece(VOCAB, 30000, str(tmp_path / "padded.model"))
    original, wide = spm.SentencePieceProcessor(VOCAB), spm.SentencePieceProcessor(padded)
    assert (original.get_piece_size(), wide.get_piece_size()) == (8000, 30000)
    with open(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"), encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    for sentence in sentences + ["<unused_0> <unused_21999>", "ÄÖÜ ß 1,000 -- x"]:
        ids = wide.encode(sentence)
        assert ids == original.encode(sentence), sentence
        assert max(ids) < 8000
    assert wide.id_to_piece(29999) == "<unused_21999>" and wide.is_unused(29999)


@pytest.mark.slow
def test_random_official_model_dir_is_exportable(tmp_path):
    """The benchmark's random-weight albert_base: 30000 embedding rows and a vocabulary
    that fits them, so the exporters' vocabulary check accepts it."""
    from albert_tf.export.common import load_source
    model_dir = random_model_dir("albert_base", str(tmp_path))
    source = load_source(model_dir)
    assert source.config.vocab_size == 30000
    assert spm.SentencePieceProcessor(source.vocab_file).get_piece_size() == 30000
    embeddings = [w for w in source.model.weights if "word_embeddings" in w.name]
    assert embeddings and embeddings[0].shape[0] == 30000
    assert np.isfinite(embeddings[0].numpy()).all()


def test_summary_names_the_cpu_cores_and_isa_without_measuring_the_clock():
    from albert_tf.benchmark.cpu import cpu_info

    info = cpu_info(measure_clock=False)
    line = info.summary()
    assert line.startswith(info.model_name)
    assert f"{info.cores} cores" in line and f"ISA: {info.peaks.isa}" in line
    assert "GHz" not in line
