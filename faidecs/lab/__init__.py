"""The semantic-options lab (``faidecs lab``)."""

from faidecs.lab.scenario import LabScenario, run
from faidecs.lab.search import Finding, explore, lab, render_table, shrink
from faidecs.matching.guarantees import COMBINATIONS, Combination

__all__ = ["COMBINATIONS", "Combination", "Finding", "LabScenario", "explore", "lab", "render_table", "run", "shrink"]
