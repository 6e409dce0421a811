"""The layers import downwards only (docs/design.md, "Layout"): the domain speaks no wire
protocol and knows no database or event loop's runtime; the store knows no front end;
no front end touches the store; the client speaks the protocol and nothing else of the
server's. Read from the source files' import statements, all of them (also those inside
functions and under ``TYPE_CHECKING``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each layer, where its modules are, and the packages of ours it may import.
LAYERS: dict[str, tuple[Path, frozenset[str]]] = {
    "domain": (ROOT / "ajedrez/domain", frozenset({"domain"})),
    "store": (ROOT / "ajedrez/store", frozenset({"domain", "store"})),
    "service": (ROOT / "ajedrez/service", frozenset({"domain", "store", "service"})),
    "espol": (ROOT / "ajedrez/espol", frozenset({"domain", "service", "espol"})),
    "hashproto": (ROOT / "ajedrez/hashproto", frozenset({"domain", "service", "hashproto"})),
    "binproto": (ROOT / "ajedrez/binproto", frozenset({"domain", "service", "binproto"})),
    "client": (ROOT / "ajedrez/client", frozenset({"domain", "espol", "client"})),
    "server": (
        ROOT / "ajedrez/server",
        frozenset(
            {"domain", "store", "service", "espol", "hashproto", "binproto", "server", "migrations"}
        ),
    ),
}
# Modules at the package's top (``ajedrez/__init__.py``, ``__main__.py``) and their kin.
TOP = {"ajedrez", "ajedrez.__main__"}
# Modules at the top that belong to a layer: the ``ajedrez`` command's entry point sits
# outside the client package so that it runs before that package's imports.
TOP_OF_LAYER = {"client_command": "client"}
# The standard library and third-party packages a layer must not import.
FORBIDDEN_THIRD_PARTY = {
    "domain": {"sqlalchemy", "asyncio", "psycopg", "uvloop", "prometheus_client"},
    "espol": {"sqlalchemy", "psycopg"},
    "hashproto": {"sqlalchemy", "psycopg"},
    "binproto": {"sqlalchemy", "psycopg"},
    "client": {"sqlalchemy", "psycopg"},
}


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, as a dotted name (a relative import resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            assert node.level == 0, f"{path}: relative import of {node.module}"
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def layer_of(name: str) -> str | None:
    """The layer of one of our modules (``ajedrez.X...``), or None for anything else."""
    parts = name.split(".")
    if parts[0] != "ajedrez" or len(parts) < 2 or parts[1].startswith("__"):
        return None  # not ours, or the package's top (its version, ``python -m``)
    return TOP_OF_LAYER.get(parts[1], parts[1])


def modules(layer: str) -> list[Path]:
    folder, _allowed = LAYERS[layer]
    found = sorted(folder.rglob("*.py"))
    found += [ROOT / f"ajedrez/{name}.py" for name, of in TOP_OF_LAYER.items() if of == layer]
    assert found, f"no modules in {folder}"
    return found


def violations(paths: list[Path], allowed: frozenset[str]) -> list[str]:
    wrong = []
    for path in paths:
        for name in sorted(imported(path)):
            below = layer_of(name)
            if name not in TOP and below is not None and below not in allowed:
                wrong.append(f"{path.name} imports {name}")
    return wrong


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    _folder, allowed = LAYERS[layer]
    wrong = violations(modules(layer), allowed)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN_THIRD_PARTY))
def test_what_a_layer_may_not_use(layer: str) -> None:
    wrong = []
    for path in modules(layer):
        for name in sorted(imported(path)):
            if name.split(".")[0] in FORBIDDEN_THIRD_PARTY[layer]:
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_a_wrong_import_is_found_wherever_it_hides(tmp_path: Path) -> None:
    """The check sees an import of the store inside a function, or of ESPOL's session
    under TYPE_CHECKING, in a module of the domain."""
    module = tmp_path / "probe.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ajedrez.espol.session import Session\n"
        "def f():\n"
        "    import ajedrez.store.db\n"
    )
    _folder, allowed = LAYERS["domain"]
    assert violations([module], allowed) == [
        "probe.py imports ajedrez.espol.session",
        "probe.py imports ajedrez.espol.session.Session",
        "probe.py imports ajedrez.store.db",
    ]
