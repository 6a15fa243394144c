"""The benchmarks: each a module run from the repository root as
``.venv/bin/python -m benchmarks.<name> ...`` (BENCHMARKS.md has today's figures and their
commands), importing the others as ``benchmarks.<name>``; ``benchmarks.common`` holds the
helpers they share. Loading the package imports nothing (the GPU check's orchestrator runs on
the standard library alone)."""
