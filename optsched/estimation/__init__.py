"""Liquid's resource-requirement estimation (TPDS'22 §4)."""
