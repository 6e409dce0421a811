"""Every reply code the server can send: the reconstructed annex A1 of ESPOL 2.0.

Classes (docs/protocol.md section 1): 1xx-3xx success, 4xx-5xx system error (the command was
not carried out because of the server), 6xx event (pushed on a streaming connection, never
an answer to a command), 8xx-9xx failure (the client's command was bad,
not allowed now, or based on stale data). One meaning per code. ``docs/protocol.md``
lists the same table; ``tests/test_docs.py`` checks that the two agree.
"""

from __future__ import annotations

from enum import IntEnum

from ajedrez.domain.errors import Refusal


class Reply(IntEnum):
    # -- success ---------------------------------------------------------------
    S_USER = 101  # USER accepted; data: the user name (code fixed by the seed)
    S_PASSWD = 102  # login complete; data: the user name
    S_SUBS = 103  # subscription request stored for the administrator
    S_UNSU = 104  # account closed; the connection closes after this reply
    S_HELP = 110  # data: the command list
    S_TRAN = 200  # command carried out (JUEG); TRAN with data
    S_NODATA = 201  # TRAN, PPEN, JAUT, JUGA, BAJA: nothing since fecha; data: the new fecha
    S_ACEP = 202  # game created; data: the game id
    S_PPEN = 203  # data: fecha then the caller's games changed since the asked fecha
    S_JAUT = 204  # data: fecha then the active users admitted or changed since fecha
    S_SRNK = 205  # data: the ranking
    S_STAT = 206  # data: the game's status record
    S_SPAR = 207  # data: moves after the asked ply
    S_JGDA = 208  # move stored (or an exact resend of the move just stored)
    S_TBLS = 209  # draw offer recorded
    S_RTBL = 210  # answer to a draw offer recorded
    S_REND = 211  # resignation recorded; the game is over
    S_FINP = 212  # draw claim accepted; the game is over, drawn
    S_DECL = 213  # challenge declined (DECL)
    S_PGNX = 214  # data: the game as PGN text (PGNX)
    S_BAJA = 215  # data: fecha then what went away for the caller since the asked fecha
    S_SOLI = 216  # data: the caller's open challenges, made (E) and received (R)
    S_RELJ = 217  # data: a game's clocks (RELJ)
    S_LICE = 218  # data: the caller's leave (LICE)
    S_EVEN = 219  # the connection streams events (EVEN); data: the cursor they follow
    S_OBSV = 220  # observing the game (OBSV); data: the game
    S_OBSF = 221  # no longer observing it (OBSF); data: the game
    S_OBSL = 222  # data: who observes the game (OBSL)
    S_CHAT = 223  # message stored and sent (CHAT)
    S_CHLE = 224  # data: fecha, then the game's messages since the asked fecha (CHLE)
    S_BUSC = 225  # seek stored (no data) or paired at once (data: the new game) (BUSC)
    S_BUSL = 226  # data: the waiting seeks (BUSL)
    S_BUSR = 227  # seek(s) withdrawn (BUSR)
    S_HOVR = 228  # data: the squares the piece may move to (HOVR)
    S_ATRS = 229  # takeback request recorded (ATRS)
    S_RATR = 230  # answer to a takeback request recorded (RATR)
    S_JUGA = 231  # data: fecha then the players, accounts and guests, since fecha (JUGA)
    S_BLOQ = 232  # the user is blocked (BLOQ)
    S_BLOR = 233  # the user is no longer blocked (BLOR)
    S_BLOL = 234  # data: the users the caller blocks (BLOL)
    S_FICN = 235  # token made (FICN); data: <id>:<secreto>, the secret shown this once
    S_FICL = 236  # data: the caller's tokens (FICL), never their secrets
    S_FICR = 237  # token(s) revoked (FICR); data: how many

    # -- system errors ---------------------------------------------------------
    E_STORAGE = 401  # the database cannot be reached or refused the work; retry later
    E_BUSY = 402  # the server holds its maximum number of connections; try later
    E_INTERNAL = 500  # an unexpected fault inside the server; the command was not done

    # -- events: sent by the server on a streaming connection, never as an answer ---
    V_EVENTO = 600  # data: one event, <cursor>:<ms>:<KIND>[:<field>...]
    V_ALDIA = 601  # every stored event up to now was sent; data: the cursor
    V_HUECO = 602  # the stream cannot go on from the cursor asked; data: the one it goes on after
    V_LATIDO = 603  # the stream is alive (sent when idle); data: the cursor

    # -- failures: the line itself ---------------------------------------------
    F_CMDINV = 800  # unknown command code
    F_NFIELDS = 801  # wrong number of fields for the command
    F_PARAM = 802  # a field is malformed (the reason names it)
    F_LONGLINE = 803  # the line exceeds the maximum length; discarded whole
    F_ENCODING = 804  # the line is not valid UTF-8
    # -- failures: session state -----------------------------------------------
    F_NOLOGIN = 805  # the command needs a login; the connection closes
    F_SEQ = 806  # PASS without a preceding successful USER; the connection closes
    F_LOGGED = 807  # USER or PASS sent again after login
    F_NOTSELF = 808  # UNSU names another user than the one logged in
    F_DEADLINE = 809  # a line was not completed in time; the connection closes
    F_ADDRLIMIT = 810  # too many connections from the client's address, or of its account
    F_LOGINTIME = 811  # no login within the grace time, or dropped for a newcomer; it closes
    F_SUBSRATE = 812  # SUBS: too many requests from this address lately; try later
    F_SUBSFULL = 813  # SUBS: the pending requests are at their cap (this address, or all)
    # -- failures: accounts ----------------------------------------------------
    F_NOUSER = 814  # no active user of that name (code fixed by the seed)
    F_PASINV = 815  # wrong password
    F_NAMETAKEN = 816  # SUBS: the name is taken or already requested
    F_SELF = 817  # JUEG to oneself
    # -- failures: challenges --------------------------------------------------
    F_REQEXISTS = 820  # an open challenge between the two users exists already
    F_GAMEEXISTS = 821  # an active game between the two users exists already
    F_NOREQ = 822  # no open challenge from that user
    # -- failures: games -------------------------------------------------------
    F_NOGAME = 830  # no game with that id
    F_NOTPLAYER = 831  # the caller does not play in that game
    F_OPPONENT = 832  # usuario destino is not the caller's opponent in that game
    F_GAMEOVER = 833  # the game is finished
    F_NOTURN = 834  # it is not the caller's turn
    F_PLY = 835  # #jugada is not the next ply of the game (stale or ahead)
    F_DRAWPEND = 836  # reserved: a move is never refused for a pending draw offer
    F_MISMATCH = 837  # posicion or promocion disagree with jugada
    F_ILLEGAL = 838  # the move is illegal in the position
    F_NOMASJUG = 839  # SPAR: no moves after that ply
    F_OFFERED = 840  # TBLS: a draw offer is already pending in that game
    F_NOOFFER = 841  # RTBL: no draw offer from the opponent to answer
    F_NOCLAIM = 842  # FINP: neither threefold repetition nor the fifty-move rule applies
    F_TIMECONTROL = 843  # ACEP: the challenge's time control is not the one named
    F_LEAVE = 844  # LICE: leave cannot start or end now
    # -- failures: live play ---------------------------------------------------
    F_PRIVATE = 845  # never sent: a private game is 830 to a stranger (older servers' OBSV)
    F_OBSERVE = 846  # OBSV: the caller plays in the game; OBSF: the caller does not observe it
    F_RATE = 847  # too many messages (CHAT), or requests that notify others, lately
    F_SEEKEXISTS = 848  # BUSC: the caller already seeks that control, or holds the most seeks
    F_NOSEEK = 849  # BUSR: no seek of the caller's to withdraw
    F_TAKEBACK = 850  # ATRS, RATR: no takeback may be asked or answered now
    # -- failures: blocks ------------------------------------------------------
    F_NOTACCEPTED = 851  # a block between the two users forbids it (JUEG, CHAT, OBSV)
    F_NOBLOCK = 852  # BLOR: the caller does not block that user
    F_BLOCKFULL = 853  # BLOQ: the caller blocks as many users as allowed
    # -- failures: tokens ------------------------------------------------------
    F_TOKINV = 854  # FICH: wrong, revoked or expired token; the connection closes
    F_NOTOKEN = 855  # FICR: the caller has no token of that id
    F_TOKENFULL = 856  # FICN: the caller has as many tokens as allowed


SUCCESS_CLASSES = (1, 2, 3)
ERROR_CLASSES = (4, 5)
EVENT_CLASSES = (6,)
FAILURE_CLASSES = (8, 9)


def reply_class(code: int) -> str:
    """Return ``"success"``, ``"error"``, ``"event"`` or ``"failure"`` for a code
    (protocol.md section 1)."""
    first = code // 100
    if first in SUCCESS_CLASSES:
        return "success"
    if first in ERROR_CLASSES:
        return "error"
    if first in EVENT_CLASSES:
        return "event"
    if first in FAILURE_CLASSES:
        return "failure"
    raise ValueError(f"code {code} is outside every reply class")


# The code each kind of refusal is answered with: the one place a Refusal becomes ESPOL's.
REFUSAL_CODES: dict[Refusal, Reply] = {
    Refusal.INVALID: Reply.F_PARAM,
    Refusal.NOT_SELF: Reply.F_NOTSELF,
    Refusal.SIGNUP_RATE: Reply.F_SUBSRATE,
    Refusal.SIGNUPS_FULL: Reply.F_SUBSFULL,
    # Refused with the code of the per-address cap, which old clients know: a cap on
    # the client's own connections, closing the connection.
    Refusal.SESSION_LIMIT: Reply.F_ADDRLIMIT,
    Refusal.NO_SUCH_USER: Reply.F_NOUSER,
    Refusal.WRONG_PASSWORD: Reply.F_PASINV,
    Refusal.NAME_TAKEN: Reply.F_NAMETAKEN,
    Refusal.SELF_CHALLENGE: Reply.F_SELF,
    Refusal.CHALLENGE_EXISTS: Reply.F_REQEXISTS,
    Refusal.GAME_EXISTS: Reply.F_GAMEEXISTS,
    Refusal.NO_SUCH_CHALLENGE: Reply.F_NOREQ,
    Refusal.TIME_CONTROL_DIFFERS: Reply.F_TIMECONTROL,
    Refusal.NO_SUCH_GAME: Reply.F_NOGAME,
    Refusal.NOT_A_PLAYER: Reply.F_NOTPLAYER,
    Refusal.NOT_OPPONENT: Reply.F_OPPONENT,
    Refusal.GAME_OVER: Reply.F_GAMEOVER,
    Refusal.NOT_YOUR_TURN: Reply.F_NOTURN,
    Refusal.WRONG_PLY: Reply.F_PLY,
    Refusal.MOVE_MISMATCH: Reply.F_MISMATCH,
    Refusal.ILLEGAL_MOVE: Reply.F_ILLEGAL,
    Refusal.NO_MORE_MOVES: Reply.F_NOMASJUG,
    Refusal.DRAW_OFFERED: Reply.F_OFFERED,
    Refusal.NO_DRAW_OFFER: Reply.F_NOOFFER,
    Refusal.NO_CLAIM: Reply.F_NOCLAIM,
    Refusal.LEAVE_REFUSED: Reply.F_LEAVE,
    Refusal.OBSERVE_REFUSED: Reply.F_OBSERVE,
    Refusal.CHAT_RATE: Reply.F_RATE,
    Refusal.EVENT_RATE: Reply.F_RATE,
    Refusal.SEEK_EXISTS: Reply.F_SEEKEXISTS,
    Refusal.SEEK_LIMIT: Reply.F_SEEKEXISTS,
    Refusal.NO_SUCH_SEEK: Reply.F_NOSEEK,
    Refusal.TAKEBACK_REFUSED: Reply.F_TAKEBACK,
    Refusal.NOT_ACCEPTED: Reply.F_NOTACCEPTED,
    Refusal.NOT_BLOCKED: Reply.F_NOBLOCK,
    Refusal.BLOCKS_FULL: Reply.F_BLOCKFULL,
    Refusal.WRONG_TOKEN: Reply.F_TOKINV,
    Refusal.NO_SUCH_TOKEN: Reply.F_NOTOKEN,
    Refusal.TOKENS_FULL: Reply.F_TOKENFULL,
}


def refusal_code(kind: Refusal) -> Reply:
    return REFUSAL_CODES[kind]
