"""albert-tf-info: parameter counts and shapes of the official model configs.

    albert-tf-info                       # every config in official_configs/models
    albert-tf-info --models=albert_base,bert_base --sharing=none

The counts (encoder + pooler) are computed from the configs
(`albert_tf.parameter_count`), not by building the models: no TensorFlow is imported.
"""

from __future__ import annotations


from absl import app, flags

from albert_tf import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_list("models", None, "Config names or paths (default: all official configs).")
    flags.DEFINE_string("sharing", None, "Override the sharing mode (all, attention, ffn, none).")


def official_names() -> list[str]:
    from albert_tf import resources
    return resources.model_config_names()


def describe(names: list[str], sharing: str | None) -> list[str]:
    from albert_tf.config import load_config
    from albert_tf.parameter_count import encoder_parameter_count, float32_mib
    rows = ["| model | V | E | H | L | G x K | heads | I | sharing | parameters | float32 MiB |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        config = load_config(name)
        if sharing:
            config = config.replace(sharing=sharing)
        params = encoder_parameter_count(config)
        rows.append(f"| {name} | {config.vocab_size} | {config.embedding_size} | "
                    f"{config.hidden_size} | {config.num_hidden_layers} | "
                    f"{config.num_hidden_groups} x {config.inner_group_num} | "
                    f"{config.num_attention_heads} | {config.intermediate_size} | "
                    f"{config.sharing} | {params:,} | {float32_mib(params):,.1f} |")
    return rows


def main(argv: list[str]) -> None:
    del argv
    from albert_tf.config import ConfigError
    try:
        rows = describe(FLAGS.models or official_names(), FLAGS.sharing)
    except (FileNotFoundError, ConfigError) as e:   # an unknown name, a bad config file
        raise app.UsageError(str(e)) from None
    print("\n".join(rows))


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
