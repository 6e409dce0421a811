"""The commands of a login that lasts (docs/client.md, "Logging in once"): login makes a
token with the password and keeps it (``tokens.py``), logout revokes it and forgets it,
tokens lists the account's tokens. Every other online command then logs in with the
kept token (``App.session``)."""

from __future__ import annotations

import socket
from contextlib import suppress

from ajedrez.client.app import EXIT_OK, EXIT_USAGE, App, CliError
from ajedrez.client.clocks import when
from ajedrez.client.errors import NoToken, TokensFull, WrongToken
from ajedrez.client.tokens import FileStore, Token
from ajedrez.domain import text

LABEL_MAX = 64  # FICN's etiqueta


def default_label() -> str:
    """This machine's name, as FICN takes it (a comment's characters, no ':')."""
    name = "".join(
        "-" if c == ":" or text.unstorable(c) else c for c in socket.gethostname()
    ).strip()
    return name[:LABEL_MAX] or "ajedrez"


def cmd_login(app: App) -> int:
    user, server = app.user, app.settings.server
    label = app.args.label or default_label()
    if len(label) > LABEL_MAX:
        raise CliError(f"--label: at most {LABEL_MAX} characters", EXIT_USAGE)
    old = app.stored_token()
    with app.session(token=False) as client:
        try:
            token_id, secret = client.ficn(label)
        except TokensFull as e:
            raise CliError(
                f"{user} has as many login tokens as {server} allows ({e.code} {e.name}): "
                "`ajedrez tokens` lists them, `ajedrez logout --all` revokes them"
            ) from None
        where = _keep(app, Token(token_id, secret))
        if old is not None and old.id != token_id:
            with suppress(NoToken):  # the one this machine had: replaced, not left behind
                client.ficr(old.id)
    app.say(
        f"Logged in as {user} at {server} as '{label}' (token {token_id}, kept in {where}). "
        "Commands need no password until `ajedrez logout`."
    )
    return EXIT_OK


def _keep(app: App, token: Token) -> str:
    """Keep ``token``; where it went. A keyring that will not take it gives way to the
    file, said to the user."""
    store = app.token_store
    try:
        store.put(app.token_key, token)
        return store.where
    except Exception as e:  # the keyring's errors are its backend's own classes
        if isinstance(store, FileStore):
            raise CliError(f"cannot keep the login token in {store.where}: {e}") from None
        fallback = FileStore(app.settings.config_path.parent / "tokens.json")
        app.warn(f"the system keyring did not take the token ({e}); using {fallback.where}")
        fallback.put(app.token_key, token)
        app._tokens = fallback
        return fallback.where


def cmd_logout(app: App) -> int:
    user, server = app.user, app.settings.server
    if app.args.all:
        with app.session() as client:
            count = client.ficr(None)
        app.forget_token()
        app.say(f"Revoked all {count} login token(s) of {user} at {server}, on every machine.")
        return EXIT_OK
    token = app.stored_token()
    if token is None:
        app.say(f"No login token kept here for {user} at {server}: nothing to do.")
        return EXIT_OK
    client = app.connect()
    try:
        try:
            client.token_login(user, token.secret)
        except WrongToken:
            revoked = False  # revoked elsewhere, lapsed, or the account closed: dead already
        else:
            with suppress(NoToken):
                client.ficr(token.id)
            revoked = True
    finally:
        client.quit()
    app.forget_token()
    if revoked:
        app.say(f"Logged out: token {token.id} of {user} at {server} revoked and forgotten.")
    else:
        app.say(f"Logged out: {server} no longer took token {token.id} of {user}; forgotten here.")
    return EXIT_OK


def cmd_tokens(app: App) -> int:
    if app.args.revoke is not None:
        with app.session() as client:
            try:
                client.ficr(app.args.revoke)
            except NoToken as e:
                raise CliError(f"you have no token {app.args.revoke} ({e.code} {e.name})") from None
        mine = app.stored_token()
        if mine is not None and mine.id == app.args.revoke:
            app.forget_token()
        app.say(f"Token {app.args.revoke} revoked.")
        return EXIT_OK
    with app.session() as client:
        tokens = client.ficl()
    mine = app.stored_token()
    if not tokens:
        app.say("No login tokens. `ajedrez login` makes one for this machine.")
        return EXIT_OK
    app.say(f"{'':1} {'ID':>5}  {'LABEL':<24} {'MADE':<16}  {'LAST USED':<16}  LAPSES")
    for t in tokens:
        here = "*" if mine is not None and mine.id == t.id else " "
        app.say(
            f"{here} {t.id:>5}  {t.label:<24} {when(t.created_at * 1000):<16}  "
            f"{when(t.last_used_at * 1000):<16}  {when(t.expires_at * 1000)}"
        )
    app.say("(* this machine's)")
    return EXIT_OK
