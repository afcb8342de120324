"""Which option combinations a comparison runs, and each one's program.

A :class:`Variant` replaces every subscription's matching and disposal options by one
combination (or keeps them, "as written"), and its covering option by plain or staged (or keeps
it). The program it runs is the user's, recompiled from its normal form with those options, so
a variant that does not apply to some subscription (staged covering under disposal NONE, say)
is refused by the language's own checker, with its diagnostic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from faidecs.comparing.result import slug
from faidecs.errors import FaidecsError
from faidecs.grammar import compile_program
from faidecs.grammar.model import Covering, Program, Subscription
from faidecs.matching.guarantees import COMBINATIONS, EVERY_COMBINATION, Combination

#: How the covering option varies: kept as written, forced plain or staged, or both in turn.
CoveringChoice = Literal["as-written", "plain", "staged", "both"]
COVERING_CHOICES: tuple[CoveringChoice, ...] = ("as-written", "plain", "staged", "both")


class OptionsError(FaidecsError):
    """An option list or pair that names no combination or no variant."""


@dataclass(frozen=True, slots=True)
class Variant:
    combination: Combination | None  # None: each subscription's own matching and disposal
    covering: Covering | None  # None: each subscription's own covering

    @property
    def name(self) -> str:
        base = "as written" if self.combination is None else self.combination.name
        if self.covering is None:
            return base
        return f"{base} {self.covering.value}"

    @property
    def slug(self) -> str:
        """The variant's folder name under ``--out``."""
        return slug(self.name)

    def options_of(self, sub: Subscription) -> Subscription:
        """``sub`` with this variant's options."""
        combination = self.combination or Combination(sub.matching, sub.disposal)
        covering = self.covering or sub.covering
        return dataclasses.replace(sub, matching=combination.matching, disposal=combination.disposal, covering=covering)

    def runs_as_written(self, sub: Subscription) -> bool:
        """Whether ``sub`` runs under this variant exactly as the user wrote it."""
        changed = self.options_of(sub)
        return (changed.matching, changed.disposal, changed.covering) == (sub.matching, sub.disposal, sub.covering)


def parse_options(text: str) -> list[Combination | None]:
    """``all`` (the papers' 16 combinations), ``every`` (also the 5 of disposal NONE),
    ``as-written``, or a comma-separated list of combinations (``FR+PI,MR+I``) and
    ``as-written``."""
    text = text.strip()
    if text == "all":
        return list(COMBINATIONS)
    if text == "every":
        return list(EVERY_COMBINATION)
    out: list[Combination | None] = []
    valid = ", ".join(c.name for c in EVERY_COMBINATION)
    for item in (part.strip() for part in text.split(",")):
        if not item:
            raise OptionsError(f"--options {text!r}: an empty item (a stray comma?)")
        if item == "as-written":
            found: Combination | None = None
        else:
            try:
                found = Combination.parse(item.upper())
            except ValueError:
                found = None
            if found is None or found not in EVERY_COMBINATION:
                raise OptionsError(
                    f"--options: {item!r} is not a combination; use all, every, as-written or some of: {valid}"
                )
        if found in out:
            raise OptionsError(f"--options: {item!r} is named twice")
        out.append(found)
    return out


def variants(options: Sequence[Combination | None], covering: CoveringChoice = "as-written") -> list[Variant]:
    if covering not in COVERING_CHOICES:
        raise OptionsError(f"covering {covering!r}: one of {', '.join(COVERING_CHOICES)}")
    table: dict[str, list[Covering | None]] = {
        "as-written": [None],
        "plain": [Covering.PLAIN],
        "staged": [Covering.STAGED],
        "both": [Covering.PLAIN, Covering.STAGED],
    }
    coverings = table[covering]
    return [Variant(c, k) for c in options for k in coverings]


def own_variant(sub: Subscription, among: Sequence[Variant]) -> Variant | None:
    """The variant among ``among`` that runs ``sub`` as written (an "as written" one first)."""
    for v in among:
        if v.combination is None and v.covering is None:
            return v
    for v in among:
        if v.runs_as_written(sub):
            return v
    return None


def rewrite(program: Program, variant: Variant, filename: str = "<program>") -> tuple[Program, str]:
    """The program ``variant`` runs, and its text. Raises :class:`~faidecs.errors.ProgramError`
    where the options do not apply to a subscription. The types are the user's own objects, so
    events validated once against them are published to every variant's engine as they are."""
    parts = [t.source or t.declaration() for t in program.types.values()]
    parts += [variant.options_of(s).to_source() for s in program.subscriptions]
    text = "\n".join(parts) + "\n"
    compiled = compile_program(text, f"{filename} ({variant.name})")
    return Program(program.types, compiled.subscriptions), text


__all__ = [
    "COVERING_CHOICES",
    "CoveringChoice",
    "OptionsError",
    "Variant",
    "own_variant",
    "parse_options",
    "rewrite",
    "variants",
]
