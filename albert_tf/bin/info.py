"""albert-tf-info: parameter counts and shapes of the official model configs.

    albert-tf-info                       # every config in official_configs/models
    albert-tf-info --models=albert_base,bert_base --sharing=none
    albert-tf-info --configs             # the shipped model configs and experiments

The counts (encoder + pooler) are computed from the configs
(`albert_tf.parameter_count`), not by building the models: no TensorFlow is imported.
--models also takes config files and albert-tf model directories (their config.json).
--configs lists the shipped configs by the names every command takes (--models,
--model_config, --config_file, --experiment), each with one line: a model's shape, an
experiment's first sentence.
"""

from __future__ import annotations


from absl import app, flags

from albert_tf import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_list("models", None, "Config names or paths, or albert-tf model directories "
                      "(their config.json) (default: all official configs).")
    flags.DEFINE_string("sharing", None, "Override the sharing mode (all, attention, ffn, none).")
    flags.DEFINE_boolean("configs", False, "List the shipped configs instead: model configs "
                         "and experiment files, one line each.")


def official_names() -> list[str]:
    from albert_tf import resources
    return resources.model_config_names()


def describe(names: list[str], sharing: str | None) -> list[str]:
    from albert_tf.config import load_config
    from albert_tf.parameter_count import encoder_parameter_count, float32_mib
    rows = ["| model | V | E | H | L | G x K | heads | I | sharing | parameters | float32 MiB |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        config = load_config(_config_path(name))
        if sharing:
            config = config.replace(sharing=sharing)
        params = encoder_parameter_count(config)
        rows.append(f"| {name} | {config.vocab_size} | {config.embedding_size} | "
                    f"{config.hidden_size} | {config.num_hidden_layers} | "
                    f"{config.num_hidden_groups} x {config.inner_group_num} | "
                    f"{config.num_attention_heads} | {config.intermediate_size} | "
                    f"{config.sharing} | {params:,} | {float32_mib(params):,.1f} |")
    return rows


def _config_path(name: str) -> str:
    """``name`` as `albert_tf.config.load_config` takes it: a config name or file, or an
    albert-tf model directory's ``config.json`` (any other directory: an
    `albert_tf.user_inputs.InputError` saying what it is and what to pass)."""
    import os

    from albert_tf import user_inputs
    if not os.path.isdir(name):
        return name
    user_inputs.model_dir(name, "--models", weights=False, purpose="to describe")
    return os.path.join(name, user_inputs.CONFIG_FILE)


def first_sentence(path: str, width: int = 100) -> str:
    """The first sentence of a YAML file's leading comment block (up to an indented
    example line), cut to ``width`` characters; "" when the file starts with none."""
    import re
    words = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#") or line.startswith("#  "):
                break
            words += line[1:].split()
    sentence = re.split(r"(?<!\be\.g)(?<!\bal)\.(?:\s|$)", " ".join(words))[0].rstrip(".")
    return sentence if len(sentence) <= width else sentence[:width - 3].rsplit(" ", 1)[0] + "..."


def list_configs() -> list[str]:
    """``--configs``: every shipped model config (its shape) and experiment (its first
    sentence), by name."""
    from albert_tf import resources
    from albert_tf.config import load_config
    from albert_tf.parameter_count import encoder_parameter_count
    models, experiments = resources.model_config_names(), resources.experiment_names()
    width = max(map(len, models + experiments))
    lines = ["model configs (--models, --model_config; model.config in experiments):"]
    for name in models:
        c = load_config(name)
        lines.append(f"  {name:{width}}  L={c.num_hidden_layers} H={c.hidden_size} "
                     f"E={c.embedding_size} heads={c.num_attention_heads} "
                     f"I={c.intermediate_size} V={c.vocab_size}, sharing {c.sharing}: "
                     f"{encoder_parameter_count(c):,} parameters")
    lines.append("experiments (--config_file of finetune, pretrain and compress; "
                 "albert-tf-run --experiment: run_*):")
    for name in experiments:
        lines.append(f"  {name:{width}}  "
                     + first_sentence(resources.experiment_path(name)))
    return lines


def main(argv: list[str]) -> None:
    del argv
    if FLAGS.configs:
        print("\n".join(list_configs()))
        return
    from albert_tf.config import ConfigError
    from albert_tf.user_inputs import InputError
    try:
        rows = describe(FLAGS.models or official_names(), FLAGS.sharing)
    except (FileNotFoundError, ConfigError, InputError) as e:   # an unknown name, a bad
        raise app.UsageError(str(e)) from None                  # config file, a directory
    print("\n".join(rows))


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
