"""The scale estimate β over the last q delay differences (Algorithm 1, lines 32–34).

A receiver cannot measure delays without synchronised clocks, but it can measure the difference
between two messages' delays: [arrival(m) − arrival(base)] − [departure(m) − departure(base)], each
subtraction on one clock. The 2-Laplace has E|Y| = 1.5b, so β = 2Σ|x|/(3n) is the method-of-moments
estimate (also the paper's approximate maximum-likelihood root, Appendix A.3). The window is a plain
ring buffer of q samples, no smoothing: conditions older than q messages are forgotten.

>>> e = DelayEstimator(q=25)
>>> for x in (-6, 3, 9, -12, 0, 6): _ = e.update(x)
>>> e.beta
4.0
"""

from __future__ import annotations

from collections import deque


class DelayEstimator:
    """The last ``q`` delay differences and β. ``update`` costs O(q) (q is 25)."""

    __slots__ = ("_samples", "literal", "q")

    def __init__(self, q: int = 25, *, literal: bool = False) -> None:
        if q < 1:
            raise ValueError("the ring buffer needs at least one sample")
        self.q = q
        #: divide by q as line 34 prints (erratum E5: β is |Q|/q too small while the buffer fills)
        #: rather than by the number of samples held
        self.literal = literal
        self._samples: deque[float] = deque(maxlen=q)

    def update(self, x: float) -> float:
        """Add one sample (the oldest drops out once q are held); returns the new β."""
        self._samples.append(x)
        return self.beta

    @property
    def beta(self) -> float:
        if not self._samples:
            return 0.0
        divisor = self.q if self.literal else len(self._samples)
        return 2.0 * sum(abs(x) for x in self._samples) / (3.0 * divisor)

    @property
    def samples(self) -> tuple[float, ...]:
        return tuple(self._samples)
