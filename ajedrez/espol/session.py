"""One ESPOL session: a line in, replies out. No sockets and no SQL here.

The transport (``connection.py``) feeds lines and sends what comes back; this class
holds the login state and turns each command into calls on the service (its accounts
and limits, ``Games``) or, for STAT, SPAR and JGDA, into work for the store's queue
(``Moves``), whose result ``settled`` turns into the reply: the domain's values encoded
as ESPOL's records, a refusal as its 8xx code. Every reply is built by
:meth:`Session._reply` or :meth:`Session._records`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ajedrez.domain.accounts import Caller
from ajedrez.domain.errors import (
    Failure,
    Refusal,
    StorageError,
)
from ajedrez.domain.reads import moves_of, status_of
from ajedrez.espol.codes import Reply, refusal_code
from ajedrez.espol.commands import PRE_LOGIN, SPECS, help_text, lookup, parse_args
from ajedrez.espol.fields import format_fecha, format_partida
from ajedrez.espol.framing import LineError, encode_records, encode_reply, parse_line
from ajedrez.espol.records import (
    Challenger,
    Listed,
    MoveRecord,
    OpenChallenge,
    RankEntry,
    Removal,
    encode_clocks,
    encode_leave,
    encode_move,
    encode_status,
    encode_summary,
)
from ajedrez.service.service import Service, not_watching, watches

log = logging.getLogger("ajedrez.session")

# Failures of these commands before login end the connection (docs/protocol.md section 3).
_LOGIN_COMMANDS = frozenset({"USER", "PASS", "FICH"})


@dataclass
class Outcome:
    replies: list[bytes] = field(default_factory=list)
    close: bool = False
    later: Later | None = None  # storage work still running: see Session.settled
    stream: StreamAsk | None = None  # the connection starts streaming events (EVEN)


@dataclass(frozen=True)
class StreamAsk:
    """EVEN: stream ``user_id``'s events after ``cursor`` (None: from now on)."""

    user_id: int
    cursor: int | None
    now: int | None = None  # without a cursor: the newest event committed (Hub.now)


@dataclass(frozen=True)
class Later:
    command: str
    work: asyncio.Future[Any]  # never cancelled by the transport: see connection.py
    reply: Callable[[Any], Outcome]  # the replies once ``work`` has succeeded


class Session:
    def __init__(self, service: Service, peer: str = "-", address: str = "-") -> None:
        self.service = service
        self.accounts = service.accounts
        self.games = service.games
        self.moves = service.moves
        self.peer = peer  # "host:port", for logs
        self.address = address  # the client's host alone, for the login throttle
        self.pending_user: str | None = None
        self.caller: Caller | None = None
        self._counted = False  # the running command was counted by the event limit
        self._handlers: dict[str, Callable[..., Outcome]] = {
            name: getattr(self, f"do_{name}") for name in SPECS
        }

    @property
    def logged_in(self) -> bool:
        return self.caller is not None

    # -- entry points ------------------------------------------------------------------

    def handle_line(self, raw: bytes) -> Outcome:
        spec = None
        try:
            line = parse_line(raw)
            spec = lookup(line.code)
            if spec is None:
                raise LineError(Reply.F_CMDINV, f"unknown command '{line.code}'; try HELP")
            if spec.name not in PRE_LOGIN and not self.logged_in:
                return self._reply(
                    Reply.F_NOLOGIN, f"{spec.name} needs a login (USER, then PASS)", close=True
                )
            args = parse_args(spec, line)
        except LineError as e:
            # Before login only a well-formed SUBS, HELP or QUIT may fail and go on.
            closing = not self.logged_in and (spec is None or spec.name in _LOGIN_COMMANDS)
            return self._reply(e.code, e.reason, close=closing)
        try:
            return self._run(spec.name, args)
        except Exception as e:
            return self._failed(spec.name, e)

    def settled(self, later: Later, work: asyncio.Future[Any]) -> Outcome:
        """The final outcome of a command whose storage work (``later.work``) is done."""
        try:
            if work.cancelled():
                raise StorageError(f"{later.command} was cancelled")
            return later.reply(work.result())
        except Exception as e:
            return self._failed(later.command, e)

    def _failed(self, command: str, e: Exception) -> Outcome:
        """The reply to a command that raised ``e``; call it from the ``except`` block."""
        if isinstance(e, Failure):
            closing = not self.logged_in and command in _LOGIN_COMMANDS
            return self._reply(refusal_code(e.kind), e.reason, close=closing)
        if isinstance(e, StorageError):
            log.error("storage error in %s from %s: %s", command, self.who(), e)
            return self._reply(Reply.E_STORAGE, "the database is unavailable; try again later")
        log.exception("internal error in %s from %s", command, self.who())
        return self._reply(Reply.E_INTERNAL, "internal server error; the command failed")

    def _run(self, name: str, args: list[Any]) -> Outcome:
        """Run a command, again if the database rolled it back to break a deadlock."""
        self._counted = False
        return self.service.retrying(partial(self._handlers[name], *args), name, self.who)

    def login_attempt(self, raw: bytes) -> str | None:
        """The user name this line tries a password for: a PASS after USER, or an UNSU
        (which checks the logged-in user's password). The transport throttles these."""
        if raw.startswith(b"PASS:") and self.pending_user and not self.logged_in:
            return self.pending_user
        if raw.startswith(b"FICH:") and not self.logged_in:
            # The name as sent: a malformed line is refused before any check runs.
            return raw[5:].split(b":", 1)[0].decode("utf-8", "replace")[:64] or "-"
        if raw.startswith(b"UNSU:") and self.caller is not None:
            return self.caller.name
        return None

    def overlong(self, limit: int) -> Outcome:
        return self._reply(Reply.F_LONGLINE, f"line longer than {limit} bytes; it was discarded")

    # -- reply helpers -----------------------------------------------------------------

    @staticmethod
    def _reply(code: Reply, data: str = "", *, close: bool = False) -> Outcome:
        return Outcome([encode_reply(code, data)], close)

    @staticmethod
    def _records(code: Reply, records: Iterable[str], **kw: Any) -> Outcome:
        return Outcome(encode_records(code, records, **kw))

    def _since(self, code: Reply, fecha: int, records: list[str]) -> Outcome:
        stamp = format_fecha(fecha)
        if not records:
            return self._reply(Reply.S_NODATA, stamp)
        return self._records(code, records, prefix=stamp)

    def who(self) -> str:
        name = self.caller.name if self.caller else self.pending_user or "-"
        return f"{name}@{self.peer}"

    def _notifies(self, operation: str) -> None:
        """The command makes an event for another user: counted against the caller's
        account (``Service.limit_events``), 847 past the limit; once, though the
        database may roll it back and it run again."""
        if not self._counted:
            self._counted = True
            self.service.limit_events(self._me, operation)

    @property
    def _me(self) -> Caller:
        assert self.caller is not None  # login is checked before dispatch
        return self.caller

    # -- session and account commands --------------------------------------------------

    def do_USER(self, name: str) -> Outcome:
        if self.logged_in:
            return self._reply(Reply.F_LOGGED, f"already logged in as '{self._me.name}'")
        self.pending_user = None
        self.service.check_user(name, self.peer)
        self.pending_user = name
        return self._reply(Reply.S_USER, name)

    def do_PASS(self, password: str) -> Outcome:
        if self.logged_in:
            return self._reply(Reply.F_LOGGED, f"already logged in as '{self._me.name}'")
        if self.pending_user is None:
            return self._reply(Reply.F_SEQ, "PASS must follow a successful USER", close=True)
        self.caller = self.service.log_in(self.pending_user, password, self.address, self.peer)
        return self._reply(Reply.S_PASSWD, self.caller.name)

    def do_FICH(self, name: str, secret: str) -> Outcome:
        if self.logged_in:
            return self._reply(Reply.F_LOGGED, f"already logged in as '{self._me.name}'")
        self.pending_user = None
        self.caller = self.service.token_log_in(name, secret, self.address, self.peer)
        return self._reply(Reply.S_PASSWD, self.caller.name)

    def do_SUBS(self, name: str, password: str, comment: str) -> Outcome:
        self.service.sign_up(name, password, comment, self.address, self.peer)
        return self._reply(Reply.S_SUBS)

    def do_UNSU(self, name: str, password: str) -> Outcome:
        try:
            self.service.close_account(self._me, name, password, self.address, self.peer)
        except Failure as f:
            if f.kind is not Refusal.WRONG_PASSWORD:
                raise
            # A failed login: the end of the session, as after PASS.
            return self._reply(refusal_code(f.kind), f"{f.reason}; closing", close=True)
        return self._reply(Reply.S_UNSU, close=True)

    def do_HELP(self, topic: str = "") -> Outcome:
        if topic and lookup(topic) is None:
            return self._reply(Reply.F_PARAM, f"HELP: no command '{topic}'")
        return self._records(Reply.S_HELP, help_text(topic), sep="\n")

    def do_QUIT(self) -> Outcome:
        return Outcome(close=True)

    def do_JAUT(self, since: int) -> Outcome:
        stamp, names = self.accounts.active_users_since(since)
        return self._since(Reply.S_JAUT, stamp, names)

    def do_JUGA(self, since: int) -> Outcome:
        stamp, players = self.accounts.players_since(since)
        records = [Listed(name, guest).encode() for name, guest in players]
        return self._since(Reply.S_JUGA, stamp, records)

    # -- challenges --------------------------------------------------------------------

    def do_JUEG(self, target: str, control: str | None = None, private: bool = False) -> Outcome:
        self._notifies("challenge")
        self.games.challenge(self._me.id, target, control, private)
        return self._reply(Reply.S_TRAN)

    def do_TRAN(self, since: int, with_controls: bool = False) -> Outcome:
        stamp, found = self.games.challengers_since(self._me.id, since)
        if with_controls:
            records = [Challenger(name, control).encode() for name, control in found]
        else:
            records = [name for name, _control in found]
        return self._since(Reply.S_TRAN, stamp, records)

    def do_ACEP(self, color: str, challenger: str, control: str | None = None) -> Outcome:
        game_id = self.games.accept(self._me.id, color, challenger, control)
        return self._reply(Reply.S_ACEP, format_partida(game_id))

    def do_DECL(self, other: str) -> Outcome:
        self._notifies("decline")
        self.games.decline(self._me.id, other)
        return self._reply(Reply.S_DECL)

    # -- games -------------------------------------------------------------------------

    def do_PPEN(self, since: int) -> Outcome:
        stamp, games = self.games.games_since(self._me.id, since)
        return self._since(Reply.S_PPEN, stamp, [encode_summary(g) for g in games])

    def do_SOLI(self, with_controls: bool = False) -> Outcome:
        challenges = self.games.open_challenges(self._me.id)
        records = [
            OpenChallenge(name, not made, control if with_controls else None).encode()
            for made, name, control in challenges
        ]
        return self._records(Reply.S_SOLI, records)

    def do_BAJA(self, since: int) -> Outcome:
        stamp, removed = self.games.removals_since(self._me.id, since)
        return self._since(Reply.S_BAJA, stamp, [Removal(k, s).encode() for k, s in removed])

    def do_SRNK(self) -> Outcome:
        ranking = self.games.ranking()
        return self._records(Reply.S_SRNK, [RankEntry(n, w).encode() for n, w in ranking])

    # STAT, SPAR and JGDA run on the loop (Work.QUEUE): each hands the store its work.

    def do_STAT(self, game_id: int, with_takeback: bool = False) -> Outcome:
        me = self._me.id

        def reply(rows: list[Any]) -> Outcome:
            if watches(rows, me):
                return self._as_observer("STAT", game_id, rows[0], lambda: reply_observed(rows))
            status = status_of(rows, me, game_id)
            return self._reply(Reply.S_STAT, encode_status(status, with_takeback))

        def reply_observed(rows: list[Any]) -> Outcome:
            status = status_of(rows, me, game_id, True)
            return self._reply(Reply.S_STAT, encode_status(status, with_takeback))

        rows = self.moves.game_rows(game_id, with_takeback)
        return Outcome(later=Later("STAT", rows, reply))

    def do_SPAR(self, game_id: int, after: int) -> Outcome:
        me = self._me.id

        def reply(rows: list[Any], observer: bool = False) -> Outcome:
            if not observer and watches(rows, me):
                return self._as_observer("SPAR", game_id, rows[0], lambda: reply(rows, True))
            records = [encode_move(m) for m in moves_of(rows, me, game_id, after, observer)]
            return self._records(Reply.S_SPAR, records)

        return Outcome(later=Later("SPAR", self.moves.move_rows(game_id, after), reply))

    def _as_observer(
        self, command: str, game_id: int, game: Any, reply: Callable[[], Outcome]
    ) -> Outcome:
        """STAT and SPAR of a game (``game``: its row) the caller does not play in:
        answered as for a player if the caller observes it (one more queued read), else
        refused as to a stranger."""

        def observed(rows: list[Any]) -> Outcome:
            if not rows:
                raise not_watching(game, game_id)
            return reply()

        return Outcome(later=Later(command, self.moves.observing(game_id, self._me.id), observed))

    def do_JGDA(
        self, game_id: int, ply: int, jugada: str, reverso: int, posicion: str, promocion: int
    ) -> Outcome:
        move = MoveRecord(ply, jugada, reverso, posicion, promocion)
        work = self.moves.play(self._me.id, game_id, move)
        return Outcome(later=Later("JGDA", work, _moved))

    def do_TBLS(self, game_id: int, opponent: str) -> Outcome:
        self._notifies("offer_draw")
        self.games.offer_draw(self._me.id, game_id, opponent)
        return self._reply(Reply.S_TBLS)

    def do_RTBL(self, game_id: int, accept: bool, opponent: str) -> Outcome:
        self.games.answer_draw(self._me.id, game_id, accept, opponent)
        return self._reply(Reply.S_RTBL)

    def do_REND(self, game_id: int, opponent: str) -> Outcome:
        self.games.resign(self._me.id, game_id, opponent)
        return self._reply(Reply.S_REND)

    def do_FINP(self, game_id: int, opponent: str) -> Outcome:
        self.games.claim_draw(self._me.id, game_id, opponent)
        return self._reply(Reply.S_FINP)

    def do_RELJ(self, game_id: int, with_grace: bool = False) -> Outcome:
        status = self.games.time.clock_status(self._me.id, game_id)
        return self._reply(Reply.S_RELJ, encode_clocks(status, with_grace))

    def do_EVEN(self, cursor: int | None = None) -> Outcome:
        # The connection answers 219 once its hub has taken the stream (connection.py);
        # from now on: once the store has said what "now" is (Hub.now).
        me = self._me.id
        hub = self.service.hub
        if cursor is not None or hub is None:
            return Outcome(stream=StreamAsk(me, cursor))
        now = asyncio.ensure_future(hub.now())
        return Outcome(later=Later("EVEN", now, lambda n: Outcome(stream=StreamAsk(me, None, n))))

    # -- live play: observers, chat, seeks, hints, takeback ------------------------------

    def do_OBSV(self, game_id: int) -> Outcome:
        self._notifies("observe")
        self.games.live.observe(self._me.id, game_id)
        return self._reply(Reply.S_OBSV, format_partida(game_id))

    def do_OBSF(self, game_id: int) -> Outcome:
        self._notifies("stop_observing")
        self.games.live.stop_observing(self._me.id, game_id)
        return self._reply(Reply.S_OBSF, format_partida(game_id))

    def do_OBSL(self, game_id: int) -> Outcome:
        return self._records(Reply.S_OBSL, self.games.live.observers(self._me.id, game_id))

    def do_CHAT(self, game_id: int, text: str) -> Outcome:
        self.games.live.say(self._me.id, game_id, text)
        return self._reply(Reply.S_CHAT)

    def do_CHLE(self, game_id: int, since: int) -> Outcome:
        stamp, lines = self.games.live.chat_since(self._me.id, game_id, since)
        records = [format_fecha(stamp), *(line.encode() for line in lines)]
        return self._records(Reply.S_CHLE, records, sep="\n")

    def do_BUSC(self, control: str, private: bool = False) -> Outcome:
        self._notifies("seek")
        game_id = self.games.live.seek(self._me.id, control, private)
        return self._reply(Reply.S_BUSC, "" if game_id is None else format_partida(game_id))

    def do_BUSL(self) -> Outcome:
        seeks = self.games.live.seeks()
        return self._records(Reply.S_BUSL, [f"{name}:{control}" for name, control in seeks])

    def do_BUSR(self, control: str | None = None) -> Outcome:
        self.games.live.unseek(self._me.id, control)
        return self._reply(Reply.S_BUSR)

    def do_HOVR(self, game_id: int, square: str) -> Outcome:
        targets = self.games.live.hints(self._me.id, game_id, square)
        return self._reply(Reply.S_HOVR, ",".join(targets))

    def do_ATRS(self, game_id: int, opponent: str) -> Outcome:
        self._notifies("ask_takeback")
        self.games.ask_takeback(self._me.id, game_id, opponent)
        return self._reply(Reply.S_ATRS)

    def do_RATR(self, game_id: int, accept: bool, opponent: str) -> Outcome:
        self.games.answer_takeback(self._me.id, game_id, accept, opponent)
        return self._reply(Reply.S_RATR)

    def do_LICE(self, action: str, days: int | None = None) -> Outcome:
        time = self.games.time
        if days is not None and action != "I":
            return self._reply(Reply.F_PARAM, f"LICE:{action} takes no dias (only LICE:I does)")
        if action != "E":
            self._notifies("leave")
        if action == "I":
            leave = time.start_leave(self._me.id, days)
            log.info("leave started by %s until %d", self.who(), leave.until_ms)
        elif action == "F":
            leave = time.end_leave(self._me.id)
            log.info("leave ended by %s", self.who())
        else:
            leave = time.leave_status(self._me.id)
        return self._reply(Reply.S_LICE, encode_leave(leave))

    # -- blocks --------------------------------------------------------------------------

    def do_BLOQ(self, name: str) -> Outcome:
        self._notifies("block")
        self.service.blocks.block(self._me.id, name)
        log.info("%s blocks %s", self.who(), name)
        return self._reply(Reply.S_BLOQ, name)

    def do_BLOR(self, name: str) -> Outcome:
        self._notifies("unblock")
        self.service.blocks.unblock(self._me.id, name)
        log.info("%s unblocks %s", self.who(), name)
        return self._reply(Reply.S_BLOR, name)

    def do_BLOL(self) -> Outcome:
        return self._records(Reply.S_BLOL, self.service.blocks.blocked(self._me.id))

    # -- logins that last ------------------------------------------------------------------

    def do_FICN(self, label: str) -> Outcome:
        token_id, secret = self.service.tokens.create(self._me.id, label)
        log.info("token %d made by %s", token_id, self.who())  # its id, never its secret
        return self._reply(Reply.S_FICN, f"{token_id}:{secret}")

    def do_FICL(self) -> Outcome:
        records = [
            ":".join(
                [
                    str(t.id),
                    t.label,
                    format_fecha(t.created_at),
                    format_fecha(t.last_used_at),
                    format_fecha(t.expires_at),
                ]
            )
            for t in self.service.tokens.listed(self._me.id)
        ]
        # A label may hold a ',' (a comment's rules): one token a line.
        return self._records(Reply.S_FICL, records, sep="\n")

    def do_FICR(self, token_id: int | None) -> Outcome:
        tokens = self.service.tokens
        if token_id is None:
            count = tokens.revoke_all(self._me.id)
            log.info("all %d token(s) of %s revoked", count, self.who())
        else:
            tokens.revoke(self._me.id, token_id)
            count = 1
            log.info("token %d revoked by %s", token_id, self.who())
        return self._reply(Reply.S_FICR, str(count))

    def do_PGNX(self, game_id: int, with_chat: bool = False) -> Outcome:
        text = self.games.pgn(game_id, caller_id=self._me.id, with_chat=with_chat)
        return self._records(Reply.S_PGNX, text.rstrip("\n").split("\n"), sep="\n")


def _moved(_stored: object) -> Outcome:
    return Session._reply(Reply.S_JGDA)
