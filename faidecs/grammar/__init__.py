"""The faidecs language: parse, check and normalise programs.

The grammar lives in ``faidecs.lark``; :func:`compile_program` is the one entry point the rest of
faidecs uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set

from faidecs.errors import Diagnostic, ProgramError
from faidecs.gcpause import paused_gc
from faidecs.grammar import ast
from faidecs.grammar.checker import Checker
from faidecs.grammar.model import (
    Conjunction,
    Disposal,
    EventType,
    Kind,
    Matching,
    Predicate,
    Program,
    Slot,
    Subscription,
)
from faidecs.grammar.normaliser import normalise
from faidecs.grammar.parser import parse

__all__ = [
    "Conjunction",
    "Disposal",
    "EventType",
    "Kind",
    "Matching",
    "Predicate",
    "Program",
    "Slot",
    "Subscription",
    "compile_program",
    "parse",
]


def compile_program(
    text: str,
    filename: str = "<program>",
    *,
    known_types: Mapping[str, EventType] | None = None,
    taken_names: Iterable[str] = (),
) -> Program:
    """Parse, check and normalise ``text``.

    ``known_types`` and ``taken_names`` let a running engine add subscriptions that use its
    types and must not reuse its subscription names. Raises :class:`ProgramError` carrying every
    problem found, each with its position.
    """
    # Every object built here lives as long as the program: without the pause, the collector's
    # passes over them made checking 10,000 subscriptions (or one of 10,000 operands) superlinear.
    # A set or a mapping (the engine passes its table of subscriptions) is used as it is: copying
    # it for each subscription added one at a time made adding n of them quadratic.
    taken = taken_names if isinstance(taken_names, (Set, Mapping)) else set(taken_names)
    with paused_gc():
        return _compile(text, filename, known_types, taken)


def _compile(
    text: str, filename: str, known_types: Mapping[str, EventType] | None, taken: Set[str] | Mapping[str, object]
) -> Program:
    syntax = parse(text, filename)
    checker = Checker(known_types)
    checker.declare_types(d for d in syntax.declarations if isinstance(d, ast.TypeDecl))
    names: dict[str, ast.SubscriptionDecl] = {}
    subscriptions: list[Subscription] = []
    diagnostics: list[Diagnostic] = checker.diagnostics
    for decl in syntax.declarations:
        if not isinstance(decl, ast.SubscriptionDecl):
            continue
        if decl.name in names:
            first = names[decl.name].name_span
            checker.error(
                f"duplicate subscription name {decl.name!r} (first declared at line {first.line})",
                decl.name_span,
            )
        elif decl.name in taken:
            checker.error(f"subscription {decl.name!r} already exists", decl.name_span)
        names.setdefault(decl.name, decl)
        checked = checker.check_subscription(decl)
        if checked is None:
            continue
        sub, problems = normalise(checked)
        diagnostics.extend(problems)
        if sub is not None and checked.partition_by is not None and checked.partition_span is not None:
            before = len(diagnostics)
            checker.check_partition(sub, checked.partition_by, checked.partition_span)
            if len(diagnostics) > before:
                continue
        if sub is not None and checked.window is not None and checked.window_span is not None:
            before = len(diagnostics)
            checker.check_window(sub, checked.window, checked.window_span)
            if len(diagnostics) > before:
                continue
        if sub is not None:
            subscriptions.append(sub)
    if diagnostics:
        ordered = sorted(diagnostics, key=lambda d: (d.span.start, d.message))
        raise ProgramError(ordered, text, filename)
    return Program(checker.types, tuple(subscriptions))
