"""Sequencing atoms (Lumezanu, Spring, Bhattacharjee, Middleware 2006) as an ordering layer."""

from faidecs.ordering.atoms.graph import (
    SequencingGraph,
    check_c1,
    check_c2,
    check_c3,
    compact_line_graph,
    graph_from_paths,
    line_graph,
    skip_graph,
)
from faidecs.ordering.atoms.layer import AtomsLayer, JoinPoint
from faidecs.ordering.atoms.overlap import AtomId, double_overlaps

__all__ = [
    "AtomId",
    "AtomsLayer",
    "JoinPoint",
    "SequencingGraph",
    "check_c1",
    "check_c2",
    "check_c3",
    "compact_line_graph",
    "double_overlaps",
    "graph_from_paths",
    "line_graph",
    "skip_graph",
]
