"""Weights from elsewhere: Google's original TF1 checkpoints, Hugging Face, keras-hub.

::

    from albert_tf import interop
    report = interop.convert_google("albert_base/", "out/albert_base")   # model.ckpt-best
    report = interop.convert_hf("hf/albert-base-v2", "out/albert_base")  # or a BERT dir
    report = interop.convert_keras_hub(backbone_or_preset_dir, "out/kh")
    report = interop.export_hf("out/albert_base", "hf_out")              # back to HF
    report = interop.export_keras_hub("out/albert_base", "kh_preset")    # a keras-hub preset
    print(report)                     # every source tensor: mapped / skipped / unknown / missing
    pretrainer = albert_tf.load_pretrainer("out/albert_base")

The name maps are data (`albert_tf.interop.name_map`); the command line is
``albert-tf-convert`` (`albert_tf.bin.convert`). Nothing here imports torch,
transformers or keras-hub until a conversion needs it.
"""

from albert_tf.interop.converter import (SOURCE_FORMATS, convert, convert_google, convert_hf,
                                         convert_keras_hub, export_hf, export_keras_hub,
                                         load_source)
from albert_tf.interop.name_map import (GOOGLE, HF_ALBERT, HF_BERT, KERAS_HUB, KERAS_HUB_BERT,
                                        NameTable, Rule)
from albert_tf.interop.conversion_report import ConversionError, MappingReport

__all__ = ["ConversionError", "GOOGLE", "HF_ALBERT", "HF_BERT", "KERAS_HUB", "KERAS_HUB_BERT",
           "MappingReport", "NameTable", "Rule", "SOURCE_FORMATS", "convert", "convert_google",
           "convert_hf", "convert_keras_hub", "export_hf", "export_keras_hub", "load_source"]
