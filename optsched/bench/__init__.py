"""Benchmark machinery: instance grids and manifests, the resumable runner, reports.

See benchmarks/PROTOCOL.md for the protocol these implement.
"""
