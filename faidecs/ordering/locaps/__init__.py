"""LoCaPS (seed 003, Pedrosa and Rodrigues, "Localized Causal Publish-Subscribe"): a new
subscriber starts receiving, with gapless FIFO or gapless causal delivery, as soon as its
subscription is known along one path to each publisher, using markers in the publishers' streams
and subscriptions that already cover it. See ``docs/ordering.md, "LoCaPS"``."""

from faidecs.ordering.locaps.cut import MultiPrefixCut
from faidecs.ordering.locaps.layer import LocapsLayer
from faidecs.ordering.locaps.topology import BrokerGraph, augment, binary_tree, random_tree

__all__ = ["BrokerGraph", "LocapsLayer", "MultiPrefixCut", "augment", "binary_tree", "random_tree"]
