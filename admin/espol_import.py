"""(being written)"""

from __future__ import annotations

import argparse

from ajedrez.store.db import Database


def import_espol(db: Database, args: argparse.Namespace) -> None:
    raise NotImplementedError
