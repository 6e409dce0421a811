"""(being written)"""

from __future__ import annotations

import argparse

from ajedrez.store.db import Database


def db_check(db: Database, args: argparse.Namespace) -> None:
    raise NotImplementedError
