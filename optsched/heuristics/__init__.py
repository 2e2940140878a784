"""Offline heuristics: the baseline list scheduler and (later) published algorithms."""
