"""What every command of ``ajedrez`` shares: the exit statuses, the error that ends a
command with one line for the user, and :class:`App`, which resolves the settings and opens
the local data and the connection to the server."""

from __future__ import annotations

import argparse
import getpass
import ssl
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ajedrez.client.cache import Cache, cache_path
from ajedrez.client.config import ConfigError, Settings, resolve
from ajedrez.client.errors import (
    ConnectionLost,
    NoSuchUser,
    ProtocolFailure,
    Unreachable,
    WrongPassword,
    WrongToken,
)
from ajedrez.client.output import ago
from ajedrez.client.protocol import Client, game_id
from ajedrez.client.sync import sync_all
from ajedrez.client.tokens import Token, TokenStore, token_key, token_store
from ajedrez.espol.codes import Reply

EXIT_OK = 0
EXIT_FAILED = 1  # refused: by the server or by a local check (illegal move, not your turn)
EXIT_USAGE = 2  # bad options or configuration
EXIT_UNREACHABLE = 3  # no server, or the connection broke
EXIT_AUTH = 4  # wrong password, unknown or unapproved user
EXIT_SERVER = 5  # the server could not do it now (4xx/5xx): try again later
EXIT_NOT_ESPOL = 6  # the other end is not an ESPOL server (wrong host or port)


class CliError(Exception):
    """One line for the user, and the exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class App:
    args: argparse.Namespace
    env: Mapping[str, str]
    out: TextIO
    err: TextIO
    stdin: TextIO
    _settings: Settings | None = None
    _password: str | None = None
    _tokens: TokenStore | None = None
    # The local data's file and directory this run made, and whether it ever logged in:
    # made and never logged in, they hold nothing from the server (see discard_unused).
    _made: list[Path] = field(default_factory=list)
    _logged_in: bool = False

    # -- settings, cache, connection ---------------------------------------------------

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            try:
                self._settings = resolve(
                    server=self.args.server,
                    user=self.args.user,
                    data_dir=self.args.data_dir,
                    config=self.args.config,
                    timeout=self.args.timeout,
                    env=self.env,
                    tls=self.args.tls,
                    tls_ca=self.args.tls_ca,
                )
            except ConfigError as e:
                raise CliError(str(e), EXIT_USAGE) from None
        return self._settings

    @property
    def user(self) -> str:
        user = self.settings.user
        if not user:
            raise CliError(
                'no user: give --user NAME, set AJEDREZ_USER, or put user = "NAME" in '
                f"{self.settings.config_path}",
                EXIT_USAGE,
            )
        return user

    @property
    def cache_file(self) -> Path:
        s = self.settings
        return cache_path(s.data_dir, s.host, s.port, self.user)

    def open_cache(self, *, create: bool) -> Cache:
        path = self.cache_file
        if not create and not path.exists():
            raise CliError(
                f"no local data for {self.user} at {self.settings.server} yet: "
                "run `ajedrez sync` first"
            )
        made = [p for p in (path.parent, path) if not p.exists()]
        if path in made:
            self._hint_other_copies(path)
        try:
            cache = Cache(path)
        except OSError as e:
            raise CliError(f"cannot open the local data {path}: {e}") from None
        self._made += made
        return cache

    def _hint_other_copies(self, path: Path) -> None:
        """Local data of this user for another port of the same host: most likely the
        same server reached another way (its TLS port), whose copy stays behind."""
        s = self.settings
        prefix = path.parent.name.rsplit("_", 1)[0] + "_"
        others = sorted(
            d.name.rsplit("_", 1)[1]
            for d in s.data_dir.glob(f"{prefix}*")
            if d != path.parent and (d / path.name).exists() and d.name.rsplit("_", 1)[1].isdigit()
        )
        for port in others:
            self.warn(
                f"note: {self.user} has local data for {s.host} at port {port}; if that is "
                f"this server reached another way, `ajedrez move-data {s.host}:{port}` moves "
                "it here"
            )

    def discard_unused(self) -> None:
        """Remove the local data this run made if it never logged in: a wrong password or
        address would otherwise leave an empty file (and directory) that names a server
        or user that does not exist."""
        if self._logged_in or not self._made:
            return
        for made in reversed(self._made):  # the file, then its directory
            try:
                if made.is_dir():
                    made.rmdir()  # only if empty: another user's data may be there now
                else:
                    for extra in ("-wal", "-shm", "-journal"):
                        made.with_name(made.name + extra).unlink(missing_ok=True)
                    made.unlink(missing_ok=True)
            except OSError:
                pass
        self._made.clear()

    def say(self, text: str = "") -> None:
        print(text, file=self.out)

    def warn(self, text: str) -> None:
        print(f"ajedrez: {text}", file=self.err)

    def trace(self) -> Callable[[str], None] | None:
        if not self.args.verbose:
            return None
        return lambda line: print(f"ajedrez: {line}", file=self.err)

    def password(self, *, confirm: bool = False) -> str:
        if self._password is not None:
            return self._password
        if self.args.password_stdin:
            line = self.stdin.readline()
            password = line.rstrip("\r\n")
            if not password:
                raise CliError("--password-stdin: no password on standard input", EXIT_USAGE)
        elif self.env.get("AJEDREZ_PASSWORD"):
            password = self.env["AJEDREZ_PASSWORD"]
        elif self.stdin.isatty():
            prompt = f"Password for {self.user} at {self.settings.server}: "
            password = getpass.getpass(prompt)
            if confirm and getpass.getpass("Again: ") != password:
                raise CliError("the two passwords differ", EXIT_USAGE)
        else:
            raise CliError(
                "no password: set AJEDREZ_PASSWORD, pass --password-stdin, "
                "or run in a terminal to be asked",
                EXIT_USAGE,
            )
        self._password = password
        return password

    def credentials(self) -> None:
        """Before a command that logs in again and again (watch, observe): the password
        asked now, once, unless a login token is kept (then it is asked only if the
        server refuses the token)."""
        if self.stored_token() is None:
            self.password()

    def connect(self) -> Client:
        s = self.settings
        tls = None
        if s.tls:
            try:
                tls = ssl.create_default_context(cafile=str(s.tls_ca) if s.tls_ca else None)
            except (OSError, ssl.SSLError) as e:
                raise CliError(f"cannot use the CA file {s.tls_ca}: {e}", EXIT_USAGE) from None
        return Client(s.host, s.port, timeout=s.timeout, trace=self.trace(), tls=tls)

    @property
    def token_store(self) -> TokenStore:
        """Where this machine keeps its login tokens (``tokens.py``)."""
        if self._tokens is None:
            self._tokens = token_store(self.settings.config_path.parent, self.env)
        return self._tokens

    @property
    def token_key(self) -> str:
        s = self.settings
        return token_key(s.host, s.port, self.user)

    def stored_token(self) -> Token | None:
        """The token kept for this user and server, if any. A keyring that fails (locked,
        its daemon gone) is as if it kept none: the password still works."""
        try:
            return self.token_store.get(self.token_key)
        except Exception as e:  # the keyring's errors are its backend's own classes
            self.warn(f"cannot read the login token from {self.token_store.where}: {e}")
            return None

    def forget_token(self) -> bool:
        try:
            return self.token_store.forget(self.token_key)
        except Exception as e:
            raise CliError(
                f"cannot remove the login token from {self.token_store.where}: {e}"
            ) from None

    def _token_login(self, client: Client, user: str) -> bool:
        """Log in with the kept token: True when the server took it. A token it refuses
        is forgotten (revoked, lapsed, or its account closed: it never works again); an
        older server without FICH leaves it be. Either way the caller falls back to the
        password, on a new connection (a refused FICH closes this one)."""
        token = self.stored_token()
        if token is None:
            return False
        server = self.settings.server
        try:
            client.token_login(user, token.secret)
        except WrongToken as e:
            self.forget_token()
            self.warn(
                f"the login token kept for {user} at {server} was refused ({e.code} {e.name}: "
                "revoked, lapsed, or the password was reset); logging in with the password "
                "(`ajedrez login` makes a new token)"
            )
            return False
        except ProtocolFailure as e:
            # An older server without FICH (800), or an entry it cannot read (801, 802);
            # any other refusal (810: too many sessions) the password would get too.
            if e.code not in (Reply.F_CMDINV, Reply.F_NFIELDS, Reply.F_PARAM):
                raise
            self.warn(
                f"{server} did not take the login token ({e.code} {e.name}); logging in "
                "with the password"
            )
            return False
        except ValueError:  # a damaged entry: not even sendable
            return False
        return True

    def _password_login(self, client: Client, user: str) -> None:
        try:
            client.login(user, self.password())
        except WrongPassword as e:
            raise CliError(
                f"wrong password for {user} at {self.settings.server} ({e.code} {e.name})",
                EXIT_AUTH,
            ) from None
        except NoSuchUser as e:
            raise CliError(
                f"no active user '{user}' at {self.settings.server}: check --user; a new "
                "subscription works only once the administrator approves it "
                f"({e.code} {e.name})",
                EXIT_AUTH,
            ) from None
        except ValueError as e:
            raise CliError(str(e), EXIT_USAGE) from None

    @contextmanager
    def session(self, *, token: bool = True) -> Iterator[Client]:
        """A logged-in connection, closed with QUIT at the end: with the token this
        machine keeps (``ajedrez login``) when there is one and ``token``, else, or when
        the server refuses it, with the password."""
        user = self.user
        client = self.connect()
        try:
            if not (token and self._token_login(client, user)):
                if token and client.closed:
                    client = self.connect()
                self._password_login(client, user)
            self._logged_in = True
            yield client
        finally:
            client.quit()

    def resolve_game(self, cache: Cache | None, text: str) -> str:
        """A game id from ``P0000012``, ``12``, or an opponent's name (their latest game)."""
        try:
            return game_id(text)
        except ValueError:
            pass
        games = [g for g in (cache.games() if cache else []) if g.opponent == text]
        if not games:
            raise CliError(
                f"no game with '{text}' in the local data: give a game id (P0000001), "
                "or run `ajedrez sync`"
            )
        games.sort(key=lambda g: (g.status == 0, g.id))
        return games[-1].id

    def age_line(self, synced_at: int | None, *, stream: TextIO | None = None) -> None:
        when = ago(synced_at)
        text = (
            f"(data from sync {when}; `ajedrez sync` to refresh)"
            if synced_at is not None
            else "(no sync yet: run `ajedrez sync`)"
        )
        print(text, file=stream or self.out)

    def maybe_sync(self, cache: Cache, then: Callable[[Client], None] | None = None) -> None:
        """For read commands with --sync: refresh (and ``then`` on the same connection), or
        go on with the cached data offline."""
        if not getattr(self.args, "sync", False):
            return
        try:
            with self.session() as client:
                sync_all(client, cache)
                if then is not None:
                    then(client)
        except (Unreachable, ConnectionLost) as e:
            self.warn(f"{e}; showing the cached data")
