"""The game and account service: the only layer between commands and storage."""

from .accounts import Accounts, Caller
from .games import Games

__all__ = ["Accounts", "Caller", "Games"]
