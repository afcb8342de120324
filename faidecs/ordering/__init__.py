"""Ordering layers beside the merging overlay: the multistage sequencer (seed 000) and
sequencing atoms (seed 004), on a deterministic network, feeding the same subscriber engines."""
