"""The semantic-options lab (``faidecs lab``)."""

from faidecs.lab.scenario import LabScenario, run
from faidecs.lab.search import COMBINATIONS, Finding, explore, lab, render_table, shrink

__all__ = ["COMBINATIONS", "Finding", "LabScenario", "explore", "lab", "render_table", "run", "shrink"]
