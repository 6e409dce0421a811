"""The commands about the account and this machine's settings: subscribe, unsubscribe,
leave, config."""

from __future__ import annotations

from contextlib import suppress

from ajedrez.client.app import EXIT_OK, EXIT_USAGE, App, CliError
from ajedrez.client.cache import cache_path
from ajedrez.client.clocks import days_hours, when
from ajedrez.client.config import ConfigError, parse_server, save_config
from ajedrez.client.errors import LeaveRefused, NameTaken, NoSuchUser, NotBlocked, host_port
from ajedrez.client.protocol import LEAVE_END, LEAVE_START, LEAVE_STATUS, MAX_LEAVE_DAYS
from ajedrez.client.sync import sync_game


def cmd_subscribe(app: App) -> int:
    user = app.user
    password = app.password(confirm=True)
    with app.connect() as client:
        try:
            client.subs(user, password, app.args.comment or "")
        except NameTaken as e:
            raise CliError(
                f"the name '{user}' is taken or already requested at {app.settings.server} "
                f"({e.code} {e.name})"
            ) from None
        except ValueError as e:
            raise CliError(str(e), EXIT_USAGE) from None
        # SUBS answers the same whether the server keeps the request for its
        # administrator or, with open sign-up, made the account: USER tells which.
        try:
            client.user_cmd(user)
        except NoSuchUser:
            client.close()  # the server closes the connection after 814
            admitted = False
        else:
            client.quit()
            admitted = True
    if admitted:
        app.say(f"Account {user} created at {app.settings.server}: you can log in and play now.")
    else:
        app.say(
            f"Subscription request for {user} sent to {app.settings.server}. "
            "The administrator must approve it (ajedrez-admin subs approve "
            f"{user}) before you can log in."
        )
    return EXIT_OK


def cmd_unsubscribe(app: App) -> int:
    user = app.user
    if not app.args.yes:
        if not app.stdin.isatty():
            raise CliError("closing an account cannot be undone: add --yes to confirm", EXIT_USAGE)
        answer = input(f"Close the account {user} at {app.settings.server}? Type its name: ")
        if answer.strip() != user:
            raise CliError("not confirmed; nothing done")
    with app.session() as client:
        client.unsu(user, app.password())
    app.say(
        f"Account {user} closed at {app.settings.server}; its active games are lost. "
        f"The local data stays in {app.cache_file} (delete it if you like)."
    )
    return EXIT_OK


LEAVE_ACTIONS = {"start": LEAVE_START, "end": LEAVE_END, "status": LEAVE_STATUS}
# Each LICE line as the command of this client that sends it.
LEAVE_LINES = {f"LICE:{code}": f"ajedrez leave {name}" for name, code in LEAVE_ACTIONS.items()}


def cmd_leave(app: App) -> int:
    action = app.args.action
    days = app.args.days
    if days is not None and action != "start":
        raise CliError(f"--days goes with `leave start`, not `leave {action}`", EXIT_USAGE)
    if days is not None and not 1 <= days <= MAX_LEAVE_DAYS:
        raise CliError(f"--days: 1 to {MAX_LEAVE_DAYS}, not {days}", EXIT_USAGE)
    with app.open_cache(create=True) as cache, app.session() as client:
        try:
            leave = client.lice(LEAVE_ACTIONS[action], days)
        except LeaveRefused as e:
            reason = e.reason
            for line, command in LEAVE_LINES.items():
                # The server's reason names the protocol line, which old ESPOL clients
                # show as it is; here the user types commands, so name the command.
                reason = reason.replace(f"({line})", f"with `{command}`")
            raise CliError(f"leave cannot {action}: {reason} ({e.code} {e.name})") from None
        if action != "status":
            # Leave stops or restarts the clocks of every correspondence game: fetch them
            # so that `games` and `show` count down the right ones offline.
            for g in cache.games():
                if g.status_record.active and not g.removed:
                    sync_game(client, cache, g.id)
    if action == "start":
        app.say(f"On leave until {when(leave.until_ms)}: the clocks of your correspondence")
        app.say("games are stopped until then (`ajedrez leave end` to come back sooner).")
    elif action == "end":
        app.say("Leave ended: your clocks run again; the days not used are given back.")
    elif leave.until_ms:
        app.say(f"On leave until {when(leave.until_ms)}.")
    else:
        app.say("Not on leave.")
    app.say(f"Leave left this year: {days_hours(leave.left_ms)}.")
    return EXIT_OK


def cmd_move_data(app: App) -> int:
    """Move this user's local data kept for another server address (the same server
    reached another way: its TLS port, a new name) to the address in use."""
    s = app.settings
    try:
        host, port = parse_server(app.args.old_server)
    except ConfigError as e:
        raise CliError(f"the old server address: {e}", EXIT_USAGE) from None
    source = cache_path(s.data_dir, host, port, app.user)
    target = app.cache_file
    if source == target:
        raise CliError(f"{app.args.old_server} is the server in use: nothing to move", EXIT_USAGE)
    if not source.exists():
        raise CliError(f"no local data for {app.user} at {host_port(host, port)} ({source})")
    if target.exists():
        raise CliError(
            f"{app.user} has local data at {s.server} already ({target}): remove it first "
            "if the other copy is the one to keep"
        )
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        part = source.with_name(source.name + suffix)
        if part.exists():
            part.rename(target.with_name(target.name + suffix))
    with suppress(OSError):
        source.parent.rmdir()  # only if empty: another user's data may be there
    app.say(f"Moved the local data of {app.user} from {host_port(host, port)} to {s.server}.")
    return EXIT_OK


def cmd_block(app: App) -> int:
    user = app.args.target
    with app.session() as client:
        client.bloq(user)
    app.say(f"{user} is blocked: no challenges, chat, pairing or observing from them.")
    app.say(f"Your games with {user} go on. `ajedrez unblock {user}` undoes it.")
    return EXIT_OK


def cmd_unblock(app: App) -> int:
    user = app.args.target
    with app.session() as client:
        try:
            client.blor(user)
        except NotBlocked as e:
            raise CliError(f"you do not block {user} ({e.code} {e.name})") from None
    app.say(f"{user} is no longer blocked.")
    return EXIT_OK


def cmd_blocked(app: App) -> int:
    with app.session() as client:
        names = client.blol()
    app.say("\n".join(names) if names else "You block nobody.")
    return EXIT_OK


def cmd_config(app: App) -> int:
    s = app.settings
    if app.args.save:
        values: dict[str, object] = {}
        if app.args.server:
            values["server"] = s.server
        if app.args.user:
            values["user"] = app.args.user
        if app.args.data_dir:
            values["data_dir"] = str(s.data_dir)
        if app.args.tls or app.args.tls_ca:
            values["tls"] = True
        if app.args.tls_ca:
            values["tls_ca"] = str(s.tls_ca)
        if not values:
            raise CliError("nothing to save: give --server, --user or --data-dir", EXIT_USAGE)
        save_config(s.config_path, values)
        app.say(f"Saved to {s.config_path}.")
    app.say(f"config file: {s.config_path}{'' if s.config_path.exists() else ' (none)'}")
    app.say(f"server:      {s.server}")
    app.say(f"user:        {s.user or '(not set)'}")
    app.say(f"data dir:    {s.data_dir}")
    app.say(f"tls:         {'yes' if s.tls else 'no'}{f' (CA {s.tls_ca})' if s.tls_ca else ''}")
    if s.user:
        app.say(f"local data:  {app.cache_file}")
    return EXIT_OK
