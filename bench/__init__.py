"""Benchmark harness and scenarios (see bench/README.md). Never a test."""
