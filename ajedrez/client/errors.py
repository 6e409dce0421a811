"""Exceptions of the ESPOL client library.

Every reply of an error class (4xx-5xx) becomes a :class:`ServerError`, every failure
(8xx-9xx) a :class:`ProtocolFailure`, or one of its subclasses for the cases a program
usually wants to tell apart (wrong password, not your turn, illegal move, ...). Both carry
the reply ``code`` and the server's one-line ``reason``.
"""

from __future__ import annotations

from ajedrez.espol.codes import Reply


class ClientError(Exception):
    """Base class of everything this library raises on purpose."""


def host_port(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets (``[::1]:1995``) so the port stays apart."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Unreachable(ClientError):
    """The server could not be reached (refused, unknown host, timeout while connecting)."""

    def __init__(self, host: str, port: int, why: str) -> None:
        super().__init__(f"cannot reach the server at {host_port(host, port)}: {why}")
        self.host = host
        self.port = port
        self.why = why


class NotTls(Unreachable):
    """``--tls`` to a port that answered the TLS handshake in clear text: most likely the
    server's plain ESPOL port."""

    def __init__(self, host: str, port: int, why: str) -> None:
        super().__init__(
            host,
            port,
            f"TLS handshake failed ({why}): this port does not speak TLS; leave out --tls, "
            "or give the server's TLS port",
        )


class ConnectionLost(ClientError):
    """The connection broke, timed out or was closed by the server in mid-exchange."""


class ProtocolError(ClientError):
    """The server sent something that is not a well-formed ESPOL reply."""


class NotEspol(ProtocolError):
    """The first reply on a connection was not ESPOL at all: something else listens there
    (another service's port, a web server). ``answered`` is what it sent first."""

    def __init__(self, host: str, port: int, answered: bytes) -> None:
        super().__init__(
            f"the other end at {host_port(host, port)} does not speak ESPOL (it answered "
            f"{answered.decode('utf-8', 'replace')!r}...)"
        )
        self.host = host
        self.port = port
        self.answered = answered


class ReplyError(ClientError):
    """A reply of an error or failure class; ``code`` and ``reason`` come from the server."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code} {code_name(code)}: {reason}")
        self.code = code
        self.reason = reason

    @property
    def name(self) -> str:
        return code_name(self.code)


class ServerError(ReplyError):
    """4xx/5xx: the server could not carry the command out (storage down, internal fault)."""


class ProtocolFailure(ReplyError):
    """8xx/9xx: the command was refused (bad parameters, not allowed now, stale data)."""


class NoSuchUser(ProtocolFailure):
    """814 F_NOUSER: no active user of that name."""


class WrongPassword(ProtocolFailure):
    """815 F_PASINV."""


class NameTaken(ProtocolFailure):
    """816 F_NAMETAKEN: SUBS for a name that is taken or already requested."""


class NoChallenge(ProtocolFailure):
    """822 F_NOREQ: no open challenge from (ACEP) or with (DECL) that user."""


class NoSuchGame(ProtocolFailure):
    """830 F_NOGAME or 831 F_NOTPLAYER: no such game, or not one of the caller's."""


class GameOver(ProtocolFailure):
    """833 F_GAMEOVER: the game is finished."""


class NotYourTurn(ProtocolFailure):
    """834 F_NOTURN."""


class StalePly(ProtocolFailure):
    """835 F_PLY: the ply sent is not the next one; resynchronise the game."""


class IllegalMove(ProtocolFailure):
    """837 F_MISMATCH or 838 F_ILLEGAL: the move cannot be played; ``reason`` says why."""


class NoMoreMoves(ProtocolFailure):
    """839 F_NOMASJUG: SPAR found no moves after the ply asked."""


class TimeControlChanged(ProtocolFailure):
    """843 F_TIMECONTROL: the challenge's time control is not the one ACEP named (it was
    made again with another one since the user looked); the challenge stays open."""


class LeaveRefused(ProtocolFailure):
    """844 F_LEAVE: leave cannot start or end now; ``reason`` says why."""


class PrivateGame(ProtocolFailure):
    """845 F_PRIVATE: OBSV of a private game."""


class ObserveRefused(ProtocolFailure):
    """846 F_OBSERVE: OBSV of a game the caller plays in, or OBSF of one not observed."""


class ChatRate(ProtocolFailure):
    """847 F_RATE: too many messages (CHAT), or requests that notify other users,
    lately; ``reason`` says when to try again."""


class NotAccepted(ProtocolFailure):
    """851 F_NOTACCEPTED: a block between the caller and the other user forbids it
    (JUEG, CHAT, OBSV); ``reason`` says what is refused."""


class NotBlocked(ProtocolFailure):
    """852 F_NOBLOCK: BLOR of a user the caller does not block."""


class BlocksFull(ProtocolFailure):
    """853 F_BLOCKFULL: BLOQ when the caller blocks as many users as allowed."""


class WrongToken(ProtocolFailure):
    """854 F_TOKINV: FICH with a wrong, revoked or lapsed token; the server closes."""


class NoToken(ProtocolFailure):
    """855 F_NOTOKEN: FICR of a token the caller does not have."""


class TokensFull(ProtocolFailure):
    """856 F_TOKENFULL: FICN when the caller has as many tokens as allowed."""


class SeekExists(ProtocolFailure):
    """848 F_SEEKEXISTS: BUSC for a time control the caller already seeks, or while it
    holds the most seeks the server allows (the reason says which)."""


class NoSeek(ProtocolFailure):
    """849 F_NOSEEK: BUSR with no seek of the caller's to withdraw."""


class TakebackRefused(ProtocolFailure):
    """850 F_TAKEBACK: no takeback may be asked or answered now; ``reason`` says why."""


class MalformedEvent(ProtocolError):
    """A ``600`` whose data is not an event record. The stream goes on; ``cursor`` is the
    event's cursor when that much could be read, so a reader can step past it."""

    def __init__(self, message: str, data: str, cursor: int | None) -> None:
        super().__init__(message)
        self.data = data
        self.cursor = cursor


_FAILURES: dict[int, type[ProtocolFailure]] = {
    Reply.F_NOUSER: NoSuchUser,
    Reply.F_PASINV: WrongPassword,
    Reply.F_NAMETAKEN: NameTaken,
    Reply.F_NOREQ: NoChallenge,
    Reply.F_NOGAME: NoSuchGame,
    Reply.F_NOTPLAYER: NoSuchGame,
    Reply.F_GAMEOVER: GameOver,
    Reply.F_NOTURN: NotYourTurn,
    Reply.F_PLY: StalePly,
    Reply.F_MISMATCH: IllegalMove,
    Reply.F_ILLEGAL: IllegalMove,
    Reply.F_NOMASJUG: NoMoreMoves,
    Reply.F_TIMECONTROL: TimeControlChanged,
    Reply.F_LEAVE: LeaveRefused,
    Reply.F_PRIVATE: PrivateGame,
    Reply.F_OBSERVE: ObserveRefused,
    Reply.F_RATE: ChatRate,
    Reply.F_SEEKEXISTS: SeekExists,
    Reply.F_NOSEEK: NoSeek,
    Reply.F_TAKEBACK: TakebackRefused,
    Reply.F_NOTACCEPTED: NotAccepted,
    Reply.F_NOBLOCK: NotBlocked,
    Reply.F_BLOCKFULL: BlocksFull,
    Reply.F_TOKINV: WrongToken,
    Reply.F_NOTOKEN: NoToken,
    Reply.F_TOKENFULL: TokensFull,
}


def code_name(code: int) -> str:
    """The symbolic name of a reply code (``F_PASINV``), or ``"?"`` for an unknown one."""
    try:
        return Reply(code).name
    except ValueError:
        return "?"


def reply_error(code: int, reason: str) -> ReplyError:
    """The exception for a non-success reply ``code`` (which must be 4xx-5xx or 8xx-9xx)."""
    if code // 100 in (4, 5):
        return ServerError(code, reason)
    return _FAILURES.get(code, ProtocolFailure)(code, reason)
