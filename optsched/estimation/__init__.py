"""Liquid's resource-requirement estimation (TPDS'22 §4; research/seeds.md §2.2)."""
