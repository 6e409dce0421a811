"""The hot statements: those of a move, a STAT and a SPAR, built and compiled once
(``prepared.py``). For these small statements SQLAlchemy's statement building and
execution cost more than the database's own work.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Integer,
    Select,
    and_,
    any_,
    bindparam,
    cast,
    func,
    insert,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import aliased

from ajedrez.domain.values import STATUS_FINISHED
from ajedrez.store.models import Event, EventCounter, Game, Move, Observer, Takeback, User
from ajedrez.store.prepared import Prepared, PreparedMany

White = aliased(User)
Black = aliased(User)


def game_select() -> Select[Game, str, str]:
    return (
        select(Game, White.name.label("white"), Black.name.label("black"))
        .join(White, White.id == Game.white_id)
        .join(Black, Black.id == Game.black_id)
    )


# Built and compiled once (store/prepared.py): for these small statements, SQLAlchemy's
# statement building and execution cost more than the database's work.
GAME = Prepared(game_select().where(Game.id == bindparam("gid")))
# STAT:<partida>:1: the game's row and who asks a takeback now (NULL: nobody). A request
# stands while its move is the game's last.
GAME_WITH_TAKEBACK = Prepared(
    game_select()
    .add_columns(
        select(Takeback.by_id)
        .where(Takeback.game_id == Game.id, Takeback.ply == Game.next_ply - 1)
        .scalar_subquery()
        .label("takeback_by")
    )
    .where(Game.id == bindparam("gid"))
)
GAME_LOCKED = Prepared(game_select().where(Game.id == bindparam("gid")).with_for_update(of=Game))
PLAY_ROW = Prepared(
    select(
        Game.white_id,
        Game.black_id,
        Game.private,
        Game.status,
        Game.winner,
        Game.req_white,
        Game.req_black,
        Game.next_ply,
        Game.fen,
        Game.base_ply,
        Game.base_fen,
        Game.end_reason,
        Game.tc_increment_ms,
        Game.tc_cap_ms,
        Game.white_ms,
        Game.black_ms,
        Game.clock_since_ms,
        Game.deadline_ms,
        Game.white_leave_until_ms,
        Game.black_leave_until_ms,
    )
    .where(Game.id == bindparam("gid"))
    .with_for_update()
)
# A batch of moves (store/moves.py): every game row locked in id order.
PLAY_ROWS = Prepared(
    select(Game.id, *PLAY_ROW.statement.selected_columns)
    .where(Game.id == any_(bindparam("gids", type_=ARRAY(Integer))))
    .order_by(Game.id)
    .with_for_update()
)
# The scheduler's next deadline: the first entry of ix_games_deadline.
NEXT_DEADLINE = (
    select(Game.deadline_ms).where(Game.deadline_ms.isnot(None)).order_by(Game.deadline_ms).limit(1)
)
# The scheduler's next clock warning: the first entry of ix_games_warn.
NEXT_WARNING = (
    select(Game.warn_at_ms).where(Game.warn_at_ms.isnot(None)).order_by(Game.warn_at_ms).limit(1)
)
# A clock warning sent: the turn's next one (not a change a client syncs: no changed_at).
SET_WARNING = update(Game).where(Game.id == bindparam("gid")).values(warn_at_ms=bindparam("warn"))
# The scheduler's pass (game_queries.finish_timed_out), run with many parameter sets.
CREDIT_WIN = update(User).where(User.id == bindparam("uid")).values(wins=User.wins + 1)
END_ON_TIME = (
    update(Game)
    .where(Game.id == bindparam("gid"))
    .values(
        status=STATUS_FINISHED,
        winner=bindparam("g_winner"),
        end_reason=bindparam("g_reason"),
        finished_at=bindparam("g_at"),
        changed_at=bindparam("g_at"),
        deadline_ms=None,
        warn_at_ms=None,
        white_ms=bindparam("g_white_ms"),
        black_ms=bindparam("g_black_ms"),
    )
)
MOVE_AT = Prepared(
    select(Move.jugada, Move.reverso, Move.posicion, Move.promocion).where(
        Move.game_id == bindparam("gid"), Move.ply == bindparam("ply")
    )
)
MOVES_AFTER = Prepared(
    select(Move.ply, Move.jugada, Move.reverso, Move.posicion, Move.promocion)
    .where(Move.game_id == bindparam("gid"), Move.ply > bindparam("after"))
    .order_by(Move.ply)
)
# SPAR in one round trip: the game's players and privacy (for the access check) with its
# new moves.
PLAYERS_AND_MOVES_AFTER_ONE = Prepared(
    select(
        Game.white_id,
        Game.black_id,
        Game.private,
        Move.ply,
        Move.jugada,
        Move.reverso,
        Move.posicion,
        Move.promocion,
    )
    .select_from(Game)
    .outerjoin(Move, and_(Move.game_id == Game.id, Move.ply > bindparam("after")))
    .where(Game.id == bindparam("gid"))
    .order_by(Move.ply)
)
INSERT_MOVE = Prepared(
    insert(Move).values(
        game_id=bindparam("m_game"),
        ply=bindparam("m_ply"),
        jugada=bindparam("m_jugada"),
        reverso=bindparam("m_reverso"),
        posicion=bindparam("m_posicion"),
        promocion=bindparam("m_promocion"),
        san=bindparam("m_san"),
        created_at=bindparam("m_at"),
        clock_ms=bindparam("m_clock"),
    )
)
UPDATE_AFTER_MOVE = Prepared(
    update(Game)
    .where(Game.id == bindparam("gid"))
    .values(
        next_ply=bindparam("g_next"),
        fen=bindparam("g_fen"),
        changed_at=bindparam("g_changed"),
        base_ply=bindparam("g_base_ply"),
        base_fen=bindparam("g_base_fen"),
        white_ms=bindparam("g_white_ms"),
        black_ms=bindparam("g_black_ms"),
        clock_since_ms=bindparam("g_since"),
        deadline_ms=bindparam("g_deadline"),
        warn_at_ms=bindparam("g_warn"),
    )
)


def _array(name: str, column: Any) -> Any:
    """A parameter bound to an array of ``column``'s values (``PreparedMany``)."""
    return cast(bindparam(name), ARRAY(column.type))


# PostgreSQL: many SPARs in one statement (the reader thread's batch). The moves are
# read in a LATERAL subquery kept apart by OFFSET 0: otherwise the planner may join
# ``moves`` as a whole (a generic plan guesses the unnest's size) and check ``ply >
# after`` row by row, a cost that grows with the games' length, or with the table.
_SPAR_QUERIES = (
    func.unnest(_array("gid", Game.id), _array("after", Move.ply))
    .table_valued("gid", "after", with_ordinality="i")
    .render_derived(name="q")
)
_SPAR_MOVES = (
    select(Move.ply, Move.jugada, Move.reverso, Move.posicion, Move.promocion)
    .where(Move.game_id == _SPAR_QUERIES.c.gid, Move.ply > _SPAR_QUERIES.c.after)
    .offset(0)
    .lateral("m")
)
PLAYERS_AND_MOVES_AFTER = PreparedMany(
    select(_SPAR_QUERIES.c.i, Game.white_id, Game.black_id, Game.private, *_SPAR_MOVES.c)
    .select_from(_SPAR_QUERIES)
    .join(Game, Game.id == _SPAR_QUERIES.c.gid)
    .outerjoin(_SPAR_MOVES, true())
    .order_by(_SPAR_QUERIES.c.i, _SPAR_MOVES.c.ply),
    each=("gid", "after"),
    alone=PLAYERS_AND_MOVES_AFTER_ONE,
)

# PostgreSQL: moves (a batch's, or one) inserted and their games updated in one statement.
_MOVE_FIELDS = (
    ("m_game", Move.game_id),
    ("m_ply", Move.ply),
    ("m_jugada", Move.jugada),
    ("m_reverso", Move.reverso),
    ("m_posicion", Move.posicion),
    ("m_promocion", Move.promocion),
    ("m_san", Move.san),
    ("m_clock", Move.clock_ms),
    ("g_fen", Game.fen),
    ("g_base_ply", Game.base_ply),
    ("g_base_fen", Game.base_fen),
    ("g_white_ms", Game.white_ms),
    ("g_black_ms", Game.black_ms),
    ("g_since", Game.clock_since_ms),
    ("g_deadline", Game.deadline_ms),
    ("g_warn", Game.warn_at_ms),
)
_NEW_MOVES = (
    func.unnest(*(_array(name, column) for name, column in _MOVE_FIELDS))
    .table_valued(*(name for name, _ in _MOVE_FIELDS))
    .render_derived(name="v")
)
STORE_MOVES = PreparedMany(
    update(Game)
    .where(Game.id == _NEW_MOVES.c.m_game)
    .values(
        next_ply=_NEW_MOVES.c.m_ply + 1,
        fen=_NEW_MOVES.c.g_fen,
        changed_at=bindparam("g_changed"),
        base_ply=_NEW_MOVES.c.g_base_ply,
        base_fen=_NEW_MOVES.c.g_base_fen,
        white_ms=_NEW_MOVES.c.g_white_ms,
        black_ms=_NEW_MOVES.c.g_black_ms,
        clock_since_ms=_NEW_MOVES.c.g_since,
        deadline_ms=_NEW_MOVES.c.g_deadline,
        warn_at_ms=_NEW_MOVES.c.g_warn,
    )
    .add_cte(
        insert(Move)
        .from_select(
            [column.key for _, column in _MOVE_FIELDS[:8]] + ["created_at"],
            select(
                *(_NEW_MOVES.c[name] for name, _ in _MOVE_FIELDS[:8]),
                bindparam("m_at", type_=Move.created_at.type),
            ),
        )
        .cte("stored")
    ),
    each=tuple(name for name, _ in _MOVE_FIELDS),
)


# -- the event stream (store/events.py) --------------------------------------------------

# The counter's row stays locked to the end of the transaction: ids are given in commit
# order (models.Event).
BUMP_EVENTS = Prepared(
    update(EventCounter)
    .where(EventCounter.id == 1)
    .values(last=EventCounter.last + bindparam("n"))
    .returning(EventCounter.last)
)
INSERT_EVENT = Prepared(
    insert(Event).values(
        id=bindparam("id"),
        at_ms=bindparam("at_ms"),
        kind=bindparam("kind"),
        game_id=bindparam("game_id"),
        user_a=bindparam("user_a"),
        user_b=bindparam("user_b"),
        actor_id=bindparam("actor_id"),
        observers=bindparam("observers"),
        data=bindparam("data"),
    )
)
EVENT_HORIZON = Prepared(
    select(EventCounter.last, EventCounter.pruned_through).where(EventCounter.id == 1)
)
_EVENT_COLUMNS = (
    Event.id,
    Event.at_ms,
    Event.kind,
    Event.data,
    Event.game_id,
    Event.user_a,
    Event.user_b,
    Event.actor_id,
    Event.observers,
)
# A process's hub: every event after the last it saw, for its own connections.
EVENTS_AFTER = Prepared(
    select(*_EVENT_COLUMNS)
    .where(Event.id > bindparam("after"))
    .order_by(Event.id)
    .limit(bindparam("n"))
)


# One user's events after a cursor, as a player (either column) or an observer: each
# part reads its own index from the cursor on, and at most a page.
def _page(query: Any) -> Any:
    return select(*query.order_by(Event.id).limit(bindparam("n")).subquery().c)


_AFTER = Event.id > bindparam("after")
_USER_EVENTS = union_all(
    *(
        _page(select(*_EVENT_COLUMNS).where(_AFTER, column == bindparam("uid")))
        for column in (Event.user_a, Event.user_b)
    ),
    _page(
        select(*_EVENT_COLUMNS)
        .join(Observer, Observer.game_id == Event.game_id)
        .where(_AFTER, Observer.user_id == bindparam("uid"), Event.observers.is_(True))
    ),
).subquery("e")
USER_EVENTS_AFTER = Prepared(
    select(*_USER_EVENTS.c).order_by(_USER_EVENTS.c.id).limit(bindparam("n"))
)
# The id of the user's event ``skip`` + 1 after a cursor (no row: there are fewer), with
# ``n`` = ``skip`` + 1: how far behind a stream would start, read from the indexes alone.
_USER_EVENT_IDS = union_all(
    *(
        _page(select(Event.id).where(_AFTER, column == bindparam("uid")))
        for column in (Event.user_a, Event.user_b)
    ),
    _page(
        select(Event.id)
        .join(Observer, Observer.game_id == Event.game_id)
        .where(_AFTER, Observer.user_id == bindparam("uid"), Event.observers.is_(True))
    ),
).subquery("i")
USER_EVENT_BEYOND = Prepared(
    select(_USER_EVENT_IDS.c.id).order_by(_USER_EVENT_IDS.c.id).offset(bindparam("skip")).limit(1)
)
# Does the user observe the game?
OBSERVING = Prepared(
    select(Observer.user_id).where(
        Observer.game_id == bindparam("gid"), Observer.user_id == bindparam("uid")
    )
)
# The games a user observes.
OBSERVED_GAMES = Prepared(select(Observer.game_id).where(Observer.user_id == bindparam("uid")))
