"""Tests of the store used directly: statements, migrations, pool, writers, recovery."""
