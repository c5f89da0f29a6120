"""albert-tf-convert: weights from Google / Hugging Face / keras-hub into an albert-tf model
directory, and albert-tf model directories back to Hugging Face or to a keras-hub preset.

    albert-tf-convert --to=hf --input=runs/sst2/best --output_dir=hf/sst2_classifier
        # a finetuned directory: AlbertForSequenceClassification & co. with its labels and a
        # tokenizer.json giving our ids (AutoModelFor... / AutoTokenizer.from_pretrained)
    albert-tf-convert --from=hf --input=hf/sst2_classifier --output_dir=models/sst2_from_hf
        # the vocabulary comes along: spiece.model -> vocab.model, vocab.txt (BERT), and
        # tokenizer_config.json's do_lower_case
    albert-tf-convert --to=keras_hub --input=runs/sst2/best --output_dir=keras_hub/sst2
        # AlbertBackbone (or BertBackbone: E == H, nothing shared) + AlbertTokenizer
        # (vocab.model) or BertTokenizer (vocab.txt) + preprocessor; a finetuned classifier
        # is an AlbertTextClassifier / BertTextClassifier task preset; back to ours:
    albert-tf-convert --from=keras_hub --input=keras_hub/sst2 --output_dir=models/sst2_from_kh
    albert-tf-convert --from=hf --input=hf/albert-base-v2 \\
        --output_dir=models/albert_base     # [not run: the network, hf download first]
    albert-tf-convert --from=google --input=albert_base_v2/ \\
        --output_dir=models/albert_base_google   # [not run: Google's release, downloaded]
        # model.ckpt-best + albert_config.json (+ 30k-clean.model), or a TF-Hub TF1 module;
        # a BERT release: bert_model.ckpt + bert_config.json (+ vocab.txt)

Published weights: ``hf download albert/albert-base-v2 config.json model.safetensors
spiece.model --local-dir hf/albert-base-v2`` (README.md), or Google's albert_base_v2.tar.gz.
Prints the mapping report: every source tensor mapped, skipped (and why) or unknown,
and every weight the source lacked, then where it wrote. Exits 1 with a one-line reason on
bad input; the output directory is then left as it was.
"""

from __future__ import annotations

import os

from absl import app, flags

from albert_tf import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_enum("from", None, ["google", "hf", "keras_hub"],
                      "Source format (required unless --to=hf or --to=keras_hub).")
    flags.DEFINE_enum("to", "albert_tf", ["albert_tf", "hf", "keras_hub"],
                      "Target: an albert-tf model directory, a Hugging Face directory or a "
                      "keras-hub preset directory (for these two --input is an albert-tf model "
                      "directory).")
    flags.DEFINE_string("input", None, "Checkpoint prefix or directory, HF directory, keras-hub "
                        "preset directory, or (with --to=hf/keras_hub) an albert-tf model "
                        "directory.")
    flags.DEFINE_string("output_dir", None, "Directory to write (atomically).")
    flags.DEFINE_string("config", None, "--from=google only: albert_config.json (or "
                        "bert_config.json), when it is not beside the checkpoint.")
    flags.DEFINE_bool("allow_unmapped", False, "Skip source tensors that are in no row of the "
                      "name map instead of failing.")
    flags.DEFINE_bool("overwrite", False, "Replace an earlier albert-tf output at --output_dir "
                      "(never a directory albert-tf did not write).")
    flags.DEFINE_bool("do_lower_case", None, "--to=keras_hub only: whether the tokenizer "
                      "lower-cases (default: task.json's, else a vocab.txt's casing, else true).")


def check_paths(source_format: str | None, target: str, input_path: str, output_dir: str,
                overwrite: bool, config_path: str | None = None) -> str | None:
    """What the conversion would refuse first, found without TensorFlow, as one line (else
    None): ``--output_dir`` where albert-tf may not write (`albert_tf.outputs.check_output`,
    the converters' first check), then an ``--input`` that is no source of the ``--from``
    format (`albert_tf.user_inputs.convert_source_problem`: missing, an albert-tf model
    directory, an export, a source of another format). A combination of flags the
    converters refuse is left to them."""
    from albert_tf import outputs, user_inputs
    to_model_dir = target == "albert_tf" and source_format is not None
    if not to_model_dir and not (target in ("hf", "keras_hub")
                                 and source_format in (None, "albert_tf")):
        return None
    try:
        kind = {"hf": outputs.HF_DIRECTORY, "keras_hub": outputs.KERAS_HUB_PRESET}.get(
            target, outputs.CONVERTED_MODEL)
        outputs.check_output(output_dir, kind=kind, inputs=[("--input", input_path)],
                             overwrite=overwrite, flag="--output_dir")
    except outputs.OutputError as e:
        return " ".join(str(e).split())
    if to_model_dir and (source_format != "hf" or config_path is None):  # (else: --config's)
        # what the input is, when that says it is no source of this format: an albert-tf
        # model directory (nothing to convert), an export, a source of another --from
        return user_inputs.convert_source_problem(input_path, source_format)
    return None


def _nothing_written(problem, output_dir: str) -> str:
    """``problem`` saying that nothing was written to ``output_dir``, once."""
    problem = str(problem)
    return problem if "nothing was" in problem else \
        f"{problem} (nothing was written to {output_dir})"


def run_conversion(source_format: str | None, target: str, input_path: str | None,
                   output_dir: str | None, config_path: str | None = None,
                   allow_unmapped: bool = False, overwrite: bool = False,
                   do_lower_case: bool | None = None) -> int:
    """Runs one conversion, prints the report; returns the exit status."""
    from albert_tf import user_inputs
    if input_path and output_dir and target in ("hf", "keras_hub") \
            and source_format in (None, "albert_tf"):     # (else: the flags' own error)
        try:      # a run directory, an export, a missing path: one line, before TensorFlow
            same = {"hf": "hf", "keras_hub": "keras_hub"}[target]
            if os.path.isdir(input_path) and user_inputs.artifact_kind(input_path) == same:
                raise user_inputs.InputError(
                    f"--input={input_path} is {user_inputs.describe(same)} already: --to="
                    f"{target} reads an albert-tf model directory (to get one from it: "
                    f"{user_inputs.convert_command(same, input_path)}).")
            user_inputs.model_dir(input_path, "--input", purpose="to convert", weights=False)
        except user_inputs.InputError as e:
            cli.error(_nothing_written(e, output_dir), __name__)
            return 1
    if not input_path or not output_dir:
        cli.error("--input and --output_dir are required.", __name__)
        return 2
    problem = check_paths(source_format, target, input_path, output_dir, overwrite,
                          config_path)
    if problem:               # the converters' first checks, before TensorFlow loads
        cli.error(_nothing_written(problem, output_dir), __name__)
        return 1
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.config import ConfigError
    from albert_tf.interop import ConversionError, convert, export_hf, export_keras_hub
    from albert_tf.outputs import OutputError
    try:
        if target in ("hf", "keras_hub"):
            if source_format not in (None, "albert_tf"):
                raise ConversionError(f"--to={target} reads an albert-tf model directory; drop "
                                      "--from (convert other formats to albert-tf first).")
            if target == "hf":
                report = export_hf(input_path, output_dir, overwrite=overwrite)
            else:
                report = export_keras_hub(input_path, output_dir, overwrite=overwrite,
                                          do_lower_case=do_lower_case)
        else:
            if source_format is None:
                raise ConversionError("--from is required: google, hf or keras_hub.")
            report = convert(source_format, input_path, output_dir, config_path=config_path,
                             allow_unmapped=allow_unmapped, overwrite=overwrite)
    except (CheckpointError, ConfigError, FileNotFoundError, OutputError) as e:
        partial = getattr(e, "report", None)
        if partial is not None:
            print(partial)
        cli.error(_nothing_written(e, output_dir), __name__)
        return 1
    print(report)
    print(f"wrote {output_dir}")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    return run_conversion(FLAGS["from"].value, FLAGS.to, FLAGS.input, FLAGS.output_dir,
                          FLAGS.config, FLAGS.allow_unmapped, FLAGS.overwrite,
                          FLAGS.do_lower_case)


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
