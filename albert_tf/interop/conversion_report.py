"""What a conversion did with every tensor, and the error raised when it cannot finish."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints import CheckpointError


@dataclasses.dataclass
class MappingReport:
    """Every source tensor is either mapped, skipped (with the reason) or unknown; every
    target weight the source lacks is listed as missing with what was done about it.

    Attributes:
      source: the input (file or directory and its format).
      mapped: ``(source name, target name, transform, shape)``.
      skipped: ``(source name, reason)``.
      unknown: source names in no row of the name map (an error unless allowed).
      missing: ``(target name, what was done)``, e.g. a head freshly initialized.
      notes: config translation and other remarks.
      assets: files copied next to the weights (SentencePiece model, vocabulary).
    """

    source: str
    mapped: list[tuple[str, str, str, tuple[int, ...]]] = dataclasses.field(default_factory=list)
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    unknown: list[str] = dataclasses.field(default_factory=list)
    missing: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    assets: list[str] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        return (f"{len(self.mapped)} mapped, {len(self.skipped)} skipped, "
                f"{len(self.unknown)} unknown, {len(self.missing)} missing")

    def lines(self) -> list[str]:
        out = [f"source: {self.source}"]
        out += [f"note     {n}" for n in self.notes]
        for src, dst, transform, shape in self.mapped:
            how = "" if transform == "identity" else f" ({transform})"
            out.append(f"mapped   {src} {list(shape)} -> {dst}{how}")
        out += [f"skipped  {src}: {reason}" for src, reason in self.skipped]
        out += [f"unknown  {src}: not in the name map for this config" for src in self.unknown]
        out += [f"missing  {dst}: {what}" for dst, what in self.missing]
        out += [f"asset    {a}" for a in self.assets]
        out.append(f"summary: {self.summary()}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


class ConversionError(CheckpointError):
    """A conversion cannot proceed; the message names the tensor, key or file.

    ``report`` holds the mapping report as far as it got (or None).
    """

    def __init__(self, message: str, report: MappingReport | None = None):
        super().__init__(message)
        self.report = report
