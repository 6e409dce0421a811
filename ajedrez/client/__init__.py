"""The Ajedrez client: a typed ESPOL 2.0 protocol library and the ``ajedrez`` command.

The library (:mod:`ajedrez.client.protocol`, :mod:`ajedrez.client.errors`) imports no
server code; only the protocol's vocabulary under :mod:`ajedrez.protocol` (reply codes,
framing, field syntax, records), which the server shares.
"""

from ajedrez.client.errors import (
    ClientError,
    ConnectionLost,
    DrawPending,
    GameOver,
    IllegalMove,
    NameTaken,
    NoChallenge,
    NoMoreMoves,
    NoSuchGame,
    NoSuchUser,
    NotEspol,
    NotYourTurn,
    ProtocolError,
    ProtocolFailure,
    ReplyError,
    ServerError,
    StalePly,
    Unreachable,
    WrongPassword,
)
from ajedrez.client.protocol import DEFAULT_PORT, Changes, Client, Response, game_id
from ajedrez.protocol.records import BLACK, WHITE, GameStatus, GameSummary, MoveRecord, RankEntry

__all__ = [
    "BLACK",
    "DEFAULT_PORT",
    "WHITE",
    "Changes",
    "Client",
    "ClientError",
    "ConnectionLost",
    "DrawPending",
    "GameOver",
    "GameStatus",
    "GameSummary",
    "IllegalMove",
    "MoveRecord",
    "NameTaken",
    "NoChallenge",
    "NoMoreMoves",
    "NoSuchGame",
    "NoSuchUser",
    "NotEspol",
    "NotYourTurn",
    "ProtocolError",
    "ProtocolFailure",
    "RankEntry",
    "ReplyError",
    "Response",
    "ServerError",
    "StalePly",
    "Unreachable",
    "WrongPassword",
    "game_id",
]
