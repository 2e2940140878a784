"""Exact models and certified lower bounds."""
