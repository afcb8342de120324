"""The semantic-options lab (``faidecs lab``)."""

from faidecs.lab.scenario import Scenario, run
from faidecs.lab.search import COMBINATIONS, Finding, explore, lab, render_table, shrink

__all__ = ["COMBINATIONS", "Finding", "Scenario", "explore", "lab", "render_table", "run", "shrink"]
