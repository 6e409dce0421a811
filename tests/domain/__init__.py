"""Tests of the game rules, PGN/FEN export and passwords, with no server."""
