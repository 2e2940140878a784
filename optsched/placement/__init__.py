"""Liquid's placement: contracts, checker, cost (TPDS'22)."""
