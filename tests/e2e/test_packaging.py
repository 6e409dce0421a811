"""The installed distribution: every package of the tree, all under the ``ajedrez`` name."""

from __future__ import annotations

import tomllib
from typing import Any

from tests.support.common import ROOT

# Where each installed package lives in the repository (pyproject.toml's package-dir).
TOP_DIRS = {"ajedrez": "ajedrez", "ajedrez.admin": "admin", "ajedrez.migrations": "migrations"}


def _setuptools() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        found: dict[str, Any] = tomllib.load(f)["tool"]["setuptools"]
    return found


def test_every_package_in_the_tree_is_installed() -> None:
    in_tree = set()
    for name, top in TOP_DIRS.items():
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / top).parts
            in_tree.add(".".join((name, *parts)))
    assert set(_setuptools()["packages"]) == in_tree


def test_no_generic_top_level_name_is_installed() -> None:
    setup = _setuptools()
    assert {p.split(".")[0] for p in setup["packages"]} == {"ajedrez"}
    assert setup["package-dir"] == {k: v for k, v in TOP_DIRS.items() if k != "ajedrez"}
