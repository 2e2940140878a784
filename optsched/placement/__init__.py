"""Liquid's placement: contracts, checker, cost (TPDS'22; research/seeds.md §2)."""
