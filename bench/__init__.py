"""Load benchmarks of the Ajedrez server (not part of the installed package, not run by CI)."""
