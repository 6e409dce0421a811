"""(being written)"""

from __future__ import annotations

import argparse

from sqlalchemy.engine import URL

from ajedrez.store.db import Database


def db_backup(db: Database, args: argparse.Namespace) -> None:
    raise NotImplementedError


def db_restore(url: URL, args: argparse.Namespace) -> None:
    raise NotImplementedError
