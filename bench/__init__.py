"""Benchmarks: run with `make bench` (python -m bench); never part of the tests."""
