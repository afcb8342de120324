"""A conjunction that answers from its first event and runs its kernel once the kernel is ready.

Until the broker (:mod:`faidecs.matching.kernel_broker`) has the conjunction's kernel, the
reference matcher runs it: it needs no compilation. When the kernel arrives, the next arrival
first moves the queues, clock and counters into a compiled state
(:meth:`~faidecs.matching.compiled_state.CompiledConjunctionState.take`), then goes on there. Both
matchers give the same relations and leave the same queues after every event, so the swap
changes nothing a subscriber can see: deliveries, order, state and snapshots are those of
either matcher run from the start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faidecs.grammar.model import Conjunction
from faidecs.matching.compiled_state import CompiledConjunctionState
from faidecs.matching.conjunction_state import ConjunctionState, Validate
from faidecs.matching.events import Event
from faidecs.matching.kernel_broker import KernelHandle
from faidecs.matching.kernel_cache import CompiledKernel
from faidecs.matching.reference import Queues


class TieredState:
    """The reference matcher's state until ``handle`` holds a kernel, then a compiled one built
    by ``build``; ``swapped`` hears of the compiled state (the engine collects its events)."""

    __slots__ = ("build", "handle", "impl", "swapped")

    def __init__(
        self,
        reference: ConjunctionState,
        handle: KernelHandle,
        build: Callable[[CompiledKernel], CompiledConjunctionState],
        swapped: Callable[[CompiledConjunctionState], None],
    ):
        self.impl: ConjunctionState | CompiledConjunctionState = reference
        self.handle: KernelHandle | None = handle
        self.build = build
        self.swapped = swapped

    def poll(self) -> bool:
        """Swap the kernel in if it is ready; True once the compiled state runs."""
        handle = self.handle
        if handle is not None and handle.kernel is not None:
            assert isinstance(self.impl, ConjunctionState)  # the handle is dropped once swapped
            compiled = self.build(handle.kernel)
            compiled.take(self.impl)
            self.impl, self.handle = compiled, None
            self.swapped(compiled)
        return self.handle is None and isinstance(self.impl, CompiledConjunctionState)

    @property
    def compiled(self) -> bool:
        return isinstance(self.impl, CompiledConjunctionState)

    def offer(self, event: Event, arrival: int, clock: int | None = None) -> tuple[Event, ...] | None:
        handle = self.handle
        if handle is not None and handle.kernel is not None:
            self.poll()
        return self.impl.offer(event, arrival, clock)

    # --- everything else is the current state's ----------------------------------------------

    @property
    def conjunction(self) -> Conjunction:
        return self.impl.conjunction

    @property
    def deliveries(self) -> int:
        return self.impl.deliveries

    @property
    def last_arrivals(self) -> tuple[int, ...]:
        return self.impl.last_arrivals

    @property
    def drops(self) -> int:
        return self.impl.drops

    @property
    def clock(self) -> int:
        return self.impl.clock

    def set_clock(self, clock: int) -> None:
        self.impl.set_clock(clock)

    @property
    def queues(self) -> Queues:
        return self.impl.queues

    def queue_lengths(self) -> dict[str, int]:
        return self.impl.queue_lengths()

    def state_json(self) -> dict[str, Any]:
        return self.impl.state_json()

    def check(self) -> None:
        self.impl.check()

    def snapshot(self) -> dict[str, Any]:
        return self.impl.snapshot()

    def restore(self, saved: Any, validate: Validate, published: int) -> None:
        self.impl.restore(saved, validate, published)
