"""Ajedrez: a correspondence-chess server speaking the ESPOL 2.0 protocol."""

__version__ = "0.1.0"
