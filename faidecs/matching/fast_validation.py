"""The fast path of event validation: plain type checks, generated once per event type.

Validating an event through pydantic builds a model and runs an adapter, which costs more than
matching the event. Nearly every event is plainly valid, and for those a few exact type checks
decide the same thing. What this module builds only ever answers "valid, with these values" or
"not sure": it accepts a subset of what pydantic accepts, with identical values, and rejects
nothing itself, so that every error (and its text) still comes from the pydantic path.

What pydantic's strict mode accepts, per kind, and what the checks here take (anything else goes
to pydantic):

- ``int``: an ``int`` or a subclass (an ``IntEnum`` too, returned as a plain ``int``), never a
  ``bool``; the field bounds it to 64 bits. Here: ``type(v) is int`` within the bounds.
- ``float``: a ``float`` (returned as is: ``-0.0`` stays ``-0.0``), or anything with
  ``__float__`` other than a ``bool``: an ``int`` becomes ``float(v)`` (correctly rounded;
  ``OverflowError`` past the float range is a validation error), and so do float subclasses,
  ``Decimal`` and ``Fraction``. Here: ``type(v) is float`` and finite, or ``type(v) is int`` and
  ``float(v)`` does not overflow.
- ``str``: a ``str`` or a subclass (a ``str`` enum too, returned as a plain ``str``). Here:
  ``type(v) is str`` without a lone surrogate.
- ``bool``: ``True`` or ``False`` only (not ``0``/``1``). Here: ``type(v) is bool``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from math import inf
from typing import Any

from faidecs.grammar.model import EventType, Kind

#: Takes the ``attrs`` of an event (a plain ``dict``) and returns its values in declaration order
#: when they are plainly valid, or ``None`` when pydantic has to look.
AttrsChecker = Callable[[dict[Any, Any]], tuple[Any, ...] | None]


def encodes(text: str) -> bool:
    """Whether ``text`` has no lone surrogate, i.e. can be written as UTF-8 (and as JSON)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@lru_cache(maxsize=1024)
def attrs_checker(event_type: EventType, int_min: int, int_max: int) -> AttrsChecker:
    """The fast checker of ``event_type``'s attributes, integers bounded to ``[int_min, int_max]``.

    Generated code, because it runs about twice as fast as a loop over the attributes: no loop, no
    call per attribute, constants inlined. Only positions, kinds and the integer bounds go into
    the source; the attribute names are bound through a closure, so no name can change the code.
    """
    n = len(event_type.attributes)
    names = [f"n{i}" for i in range(n)]
    values = [f"v{i}" for i in range(n)]
    keys = [f"k{i}" for i in range(n)]
    body = [f"if len(attrs) != {n}: return None"]
    if n:
        # Exact str keys, checked first: a key of another type could compare equal to a name
        # (pydantic reads a key by its own text), or run code of its own in the lookups below.
        body.append(f"[{', '.join(keys)}] = attrs")
        body.append(f"if {' or '.join(f'type({k}) is not str' for k in keys)}: return None")
        # A missing name raises KeyError; with the length equal, no key can be extra.
        body.append("try:")
        body += [f"    {v} = attrs[{name}]" for v, name in zip(values, names)]
        body.append("except KeyError: return None")
    for v, attribute in zip(values, event_type.attributes):
        kind = attribute.kind
        if kind is Kind.INT:
            body.append(f"if type({v}) is not int or not {int_min} <= {v} <= {int_max}: return None")
        elif kind is Kind.FLOAT:
            # NaN fails both comparisons; pydantic takes non-finite floats and the event is then
            # rejected after it, so they go the slow way.
            body.append(f"if type({v}) is float:\n    if not -inf < {v} < inf: return None")
            # pydantic converts an int with float(), rounding and overflow alike.
            body.append(f"elif type({v}) is int:\n    try: {v} = float({v})\n    except OverflowError: return None")
            body.append("else: return None")
        elif kind is Kind.STR:
            body.append(f"if type({v}) is not str or not ({v}.isascii() or encodes({v})): return None")
        else:
            assert kind is Kind.BOOL, kind
            body.append(f"if type({v}) is not bool: return None")
    body.append(f"return ({''.join(v + ', ' for v in values)})")
    source = f"def make({', '.join(names)}):\n    def check(attrs):\n"
    source += "".join(f"        {line}\n" for part in body for line in part.split("\n"))
    source += "    return check\n"
    namespace: dict[str, Any] = {"inf": inf, "encodes": encodes}
    exec(compile(source, f"<fast checker of {event_type.name}>", "exec"), namespace)  # noqa: S102
    check: AttrsChecker = namespace["make"](*(a.name for a in event_type.attributes))
    return check
