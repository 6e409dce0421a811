"""The schema: the one place where tables, keys and constraints are defined.

Alembic migrations (``migrations/``) create and change the database; they must agree
with these models (``tests/test_migrations.py`` compares the two).

Every ``*_at`` column holds a fecha: whole seconds since 1970-01-01 UTC, the protocol's
unit. ``changed_at`` columns carry the sync stamp of the last write that touched the row
(see ``docs/design.md``, "Sync by fecha").
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Game status and result values are the protocol's own (docs/protocol.md section 2).
from ajedrez.domain.values import REQ_NONE, STATUS_ACTIVE, WINNER_NONE

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    # The name in lower case: no two accounts whose names differ only in case. NULL only
    # for an account that clashed with an older one when this rule came (it keeps
    # working; the administrator is told).
    name_key: Mapped[str | None] = mapped_column(String(32), nullable=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    comment: Mapped[str] = mapped_column(String(200), default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    admitted_at: Mapped[int] = mapped_column(BigInteger)
    changed_at: Mapped[int] = mapped_column(BigInteger, index=True)
    wins: Mapped[int] = mapped_column(Integer, default=0)
    # Leave (LICE): when the current leave ends (ms; NULL or past: not on leave), and
    # the leave left in ``leave_year`` after it (ms; another year: the full allowance).
    leave_until_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    leave_left_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    leave_year: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # A guest (docs/dialects.md): an account a seed protocol's listener made for a
    # connection. It has no password and never logs in; ``guest_lease_ms`` is when the
    # claim of the connection holding the name lapses (NULL: nobody holds it), renewed
    # while the connection lasts, so every process sharing the database sees it.
    guest: Mapped[bool] = mapped_column(Boolean, server_default="0")
    guest_lease_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)

    __table_args__ = (
        Index("ix_users_wins_name", "wins", "name"),
        Index("uq_users_name_key", "name_key", unique=True),
    )


class Subscription(Base):
    """A SUBS request waiting for the administrator; the password is already hashed."""

    __tablename__ = "subscriptions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    name_key: Mapped[str | None] = mapped_column(String(32), nullable=True)  # as in users
    password_hash: Mapped[str] = mapped_column(String(255))
    comment: Mapped[str] = mapped_column(String(200), default="")
    requested_at: Mapped[int] = mapped_column(BigInteger)
    # The client address the request came from, so pending requests are capped per address.
    requested_from: Mapped[str] = mapped_column(String(64), default="", server_default="")

    __table_args__ = (
        Index("uq_subscriptions_name_key", "name_key", unique=True),
        Index("ix_subscriptions_requested_from", "requested_from"),
    )


class GameRequest(Base):
    """An open challenge. ``user_lo``/``user_hi`` make one request per pair, either way."""

    __tablename__ = "game_requests"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    challenger_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    challenged_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    user_lo: Mapped[int] = mapped_column(Integer)
    user_hi: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[int] = mapped_column(BigInteger)
    # The time control the game will have (ms; tc_initial_ms NULL: no clock).
    tc_initial_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    tc_increment_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    tc_cap_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # The game will refuse observers (JUEG's privada).
    private: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")

    __table_args__ = (
        UniqueConstraint("user_lo", "user_hi"),
        Index("ix_game_requests_challenged_created", "challenged_id", "created_at"),
        CheckConstraint("challenger_id <> challenged_id", name="not_self"),
    )


class Game(Base):
    __tablename__ = "games"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    white_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    black_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    user_lo: Mapped[int] = mapped_column(Integer)
    user_hi: Mapped[int] = mapped_column(Integer)
    status: Mapped[int] = mapped_column(SmallInteger, default=STATUS_ACTIVE)
    winner: Mapped[int] = mapped_column(SmallInteger, default=WINNER_NONE)
    req_white: Mapped[int] = mapped_column(SmallInteger, default=REQ_NONE)
    req_black: Mapped[int] = mapped_column(SmallInteger, default=REQ_NONE)
    # The game's next_ply when each side last offered a draw (NULL: never): one offer per
    # move of its maker's (docs/protocol.md, TBLS).
    white_offer_ply: Mapped[int | None] = mapped_column(Integer, nullable=True)
    black_offer_ply: Mapped[int | None] = mapped_column(Integer, nullable=True)
    next_ply: Mapped[int] = mapped_column(Integer, default=1)
    # The position after the last move, so a move is checked without replaying the game.
    fen: Mapped[str] = mapped_column(Text)
    # The position after the last irreversible move (capture, pawn move, lost castling
    # right; NULL: the start), so repetitions are found from the plies since base_ply
    # alone: a move's cost does not grow with the game's length.
    base_ply: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    base_fen: Mapped[str | None] = mapped_column(Text, nullable=True)
    end_reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    changed_at: Mapped[int] = mapped_column(BigInteger)
    finished_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # The clock (docs/protocol.md section 5), all in ms. tc_*: the time control (NULL:
    # no clock). white_ms/black_ms: each side's bank; the running side's as it was at
    # clock_since_ms, when its clock started (later than now while it is on leave).
    # deadline_ms: when the running side runs out, NULL when no clock runs (no clock,
    # or the game is over), so the scheduler's index holds the running clocks alone.
    tc_initial_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    tc_increment_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    tc_cap_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    white_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    black_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    clock_since_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    deadline_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # Each player's leave, in a correspondence game whose clock runs (ms; NULL or past:
    # none): a copy of users.leave_until_ms kept on the row, so a move reads it under the
    # row's lock, with no other statement.
    white_leave_until_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    black_leave_until_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # When the running side's next clock warning is due (AVISO_RELOJ; ms; NULL: none
    # left this turn, or no clock runs).
    warn_at_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # Nobody but the players may observe it.
    private: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")

    __table_args__ = (
        # One active game per pair of players (seed 5.1); finished games do not count.
        Index(
            "uq_games_active_pair",
            "user_lo",
            "user_hi",
            unique=True,
            sqlite_where=(status == STATUS_ACTIVE),
            postgresql_where=(status == STATUS_ACTIVE),
        ),
        Index("ix_games_white_changed", "white_id", "changed_at"),
        Index("ix_games_black_changed", "black_id", "changed_at"),
        Index("ix_games_status", "status"),
        # The scheduler's next deadline, and the games due, without a scan.
        Index(
            "ix_games_deadline",
            "deadline_ms",
            sqlite_where=deadline_ms.isnot(None),
            postgresql_where=deadline_ms.isnot(None),
        ),
        # The scheduler's next clock warning, and the warnings due.
        Index(
            "ix_games_warn",
            "warn_at_ms",
            sqlite_where=warn_at_ms.isnot(None),
            postgresql_where=warn_at_ms.isnot(None),
        ),
        CheckConstraint("white_id <> black_id", name="two_players"),
        CheckConstraint("status IN (0, 2)", name="status"),
        CheckConstraint("winner BETWEEN 0 AND 3", name="winner"),
        CheckConstraint("next_ply >= 1", name="next_ply"),
        # A game id is never given twice, also after a purge removed the newest games
        # (SQLite would otherwise reuse the largest free rowid; PostgreSQL's sequence
        # never goes back).
        {"sqlite_autoincrement": True},
    )


class Move(Base):
    """One ply. The primary key (game, ply) makes a duplicate ply impossible."""

    __tablename__ = "moves"

    game_id: Mapped[int] = mapped_column(
        ForeignKey("games.id", ondelete="CASCADE"), primary_key=True
    )
    ply: Mapped[int] = mapped_column(Integer, primary_key=True)
    jugada: Mapped[str] = mapped_column(String(5))
    reverso: Mapped[int] = mapped_column(SmallInteger, default=0)
    posicion: Mapped[str] = mapped_column(String(4))
    promocion: Mapped[int] = mapped_column(SmallInteger, default=0)
    san: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[int] = mapped_column(BigInteger)
    # The mover's bank after the move (ms; NULL: no clock), for PGN's %clk.
    clock_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)

    __table_args__ = (
        CheckConstraint("ply >= 1", name="ply"),
        CheckConstraint("reverso IN (0, 1)", name="reverso"),
        CheckConstraint("promocion IN (0, 2, 3, 4, 5)", name="promocion"),
    )


class Removal(Base):
    """Something a player's client holds that went away without a record to say so:
    a game the administrator purged (``kind`` P, ``subject`` the game id), or an open
    challenge closed without a game (declined, withdrawn, or one of the two left; ``kind``
    R, ``subject`` the other user's name). One row per player to tell, stamped like any
    write, so BAJA reports it by fecha (``docs/design.md``, "Sync by fecha"). Rows are
    kept: a client that syncs after a year still learns of the removal."""

    __tablename__ = "removals"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    kind: Mapped[str] = mapped_column(String(1))
    subject: Mapped[str] = mapped_column(String(32))
    removed_at: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        Index("ix_removals_user_removed", "user_id", "removed_at"),
        CheckConstraint("kind IN ('P', 'R')", name="kind"),
    )


class ImportedRow(Base):
    """A row ``ajedrez-admin import espol`` wrote, by its key in the 1995 files: ``kind``
    user or request (``subject`` the name), game (``subject`` the number, P#######) or
    challenge (``subject`` the challenger, ``challenged`` the user challenged; '' for
    the other kinds). Written in the transaction of the row it records, and kept: an
    item recorded here is imported already, whatever players did with it since (a
    challenge declined, a request approved, a game purged, an account closed), so a
    rerun of the import never brings it back. No foreign key to ``users`` or ``games``:
    the rows it names may be purged or closed, and the record must outlive them."""

    __tablename__ = "imported_rows"

    kind: Mapped[str] = mapped_column(String(9), primary_key=True)
    subject: Mapped[str] = mapped_column(String(32), primary_key=True)
    challenged: Mapped[str] = mapped_column(String(32), primary_key=True)
    imported_at: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        CheckConstraint("kind IN ('user', 'request', 'game', 'challenge')", name="kind"),
    )


class AdminAudit(Base):
    """One change made through ``ajedrez-admin``: who ran it (the OS user), when, what."""

    __tablename__ = "admin_audit"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[int] = mapped_column(BigInteger, index=True)
    actor: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(String(64), default="")
    detail: Mapped[str] = mapped_column(Text, default="")


class Event(Base):
    """One event of the stream (EVEN, docs/protocol.md section 6), kept so that a client
    that reconnects with its cursor gets every event it missed.

    ``id`` is the cursor: given from ``event_counter`` under that row's lock, held to
    commit, so ids become visible in their order and a reader that has seen id ``n`` has
    seen every committed id below it. Who receives an event: ``user_a`` and ``user_b``
    (the players, or a challenge's two users) and, when ``observers`` is set, whoever
    observes ``game_id``. ``data`` is the event's fields, a JSON object of the named
    fields (``store/event_data.py``), which each front end writes its own way."""

    __tablename__ = "events"

    # An alias of SQLite's rowid, but never taken from it: the counter gives it.
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=False
    )
    at_ms: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(24))
    game_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    user_a: Mapped[int | None] = mapped_column(Integer, nullable=True)
    user_b: Mapped[int | None] = mapped_column(Integer, nullable=True)
    actor_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    observers: Mapped[bool] = mapped_column(Boolean, default=False)
    data: Mapped[str] = mapped_column(Text)

    __table_args__ = (
        Index("ix_events_user_a", "user_a", "id"),
        Index("ix_events_user_b", "user_b", "id"),
        Index(
            "ix_events_game",
            "game_id",
            "id",
            sqlite_where=observers.is_(True),
            postgresql_where=observers.is_(True),
        ),
    )


class EventCounter(Base):
    """One row: the last event id given (``last``), and the last one discarded by the
    retention (``pruned_through``), so a cursor older than what is kept is told so."""

    __tablename__ = "event_counter"

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True, autoincrement=False)
    last: Mapped[int] = mapped_column(BigInteger, default=0)
    pruned_through: Mapped[int] = mapped_column(BigInteger, default=0)

    __table_args__ = (CheckConstraint("id = 1", name="one_row"),)


class Observer(Base):
    """A user who observes a game (OBSV): kept until they stop or the game is purged, so
    the stream resumed after a reconnect still carries that game's events."""

    __tablename__ = "observers"

    game_id: Mapped[int] = mapped_column(
        ForeignKey("games.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    since_at: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (Index("ix_observers_user", "user_id"),)


class ChatMessage(Base):
    """A message said in a game (CHAT): ``channel`` J the players', O the observers'.
    ``at`` is the sync stamp (CHLE by fecha), ``at_ms`` when it was said, ``ply`` the
    ply it followed (PGN comments)."""

    __tablename__ = "chat_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    channel: Mapped[str] = mapped_column(String(1))
    ply: Mapped[int] = mapped_column(Integer)
    at: Mapped[int] = mapped_column(BigInteger)
    at_ms: Mapped[int] = mapped_column(BigInteger)
    text: Mapped[str] = mapped_column(Text)

    __table_args__ = (
        Index("ix_chat_messages_game_at", "game_id", "at"),
        # The rate limit counts a user's messages of the last minute.
        Index("ix_chat_messages_user_at_ms", "user_id", "at_ms"),
        CheckConstraint("channel IN ('J', 'O')", name="channel"),
    )


class Seek(Base):
    """A waiting seek (BUSC): ``control`` is the time control's canonical name
    (``control_name``), so equal controls compare equal as text."""

    __tablename__ = "seeks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    control: Mapped[str] = mapped_column(String(32))
    tc_initial_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    tc_increment_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    tc_cap_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        UniqueConstraint("user_id", "control"),
        Index("ix_seeks_control", "control", "id"),
    )


class Presence(Base):
    """The logged-in sessions one server process (``holder``) serves of one account
    (``domain/presence.py``). ``lease_ms``: the row counts until then; the process
    renews it while it runs, so a process that dies stops counting within a lease."""

    __tablename__ = "presences"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    holder: Mapped[str] = mapped_column(String(32), primary_key=True)
    sessions: Mapped[int] = mapped_column(Integer)
    lease_ms: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (Index("ix_presences_holder", "holder"),)


class Takeback(Base):
    """A pending takeback request (ATRS): ``ply`` is the move to take back; it stands
    only while that move is still the game's last (``games.next_ply == ply + 1``)."""

    __tablename__ = "takebacks"

    game_id: Mapped[int] = mapped_column(
        ForeignKey("games.id", ondelete="CASCADE"), primary_key=True
    )
    ply: Mapped[int] = mapped_column(Integer)
    by_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    asked_at: Mapped[int] = mapped_column(BigInteger)


class Block(Base):
    """``blocker`` blocks ``blocked`` (BLOQ): the blocked account may not challenge,
    chat to, be paired by a seek with, or observe the games of the blocker."""

    __tablename__ = "blocks"

    blocker_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    blocked_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    created_at: Mapped[int] = mapped_column(BigInteger)


class Token(Base):
    """A login that lasts (FICN, FICH): a revocable session token of ``user_id``. Only
    the SHA-256 of its secret is kept (hex); the secret was shown once, to the client
    that made it. ``expires_at`` moves on each use (a sliding lifetime)."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[int] = mapped_column(BigInteger)
    last_used_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int] = mapped_column(BigInteger)


def generated_id_tables() -> list[str]:
    """The tables whose integer ids the database generates (SQLite's rowid, PostgreSQL's
    sequences), in the order their rows may be written."""
    return [t.name for t in Base.metadata.sorted_tables if t.autoincrement_column is not None]
