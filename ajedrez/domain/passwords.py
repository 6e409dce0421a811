"""Password hashing: argon2id through libpass (import name ``passlib``).

The context can verify older schemes and report that a hash should be upgraded, so a
change of parameters or scheme takes effect at each user's next login.
"""

from __future__ import annotations

from passlib.context import CryptContext

# OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane): ~30-50 ms per hash on this
# machine class, so a login costs a guesser real time without stalling the server.
# pbkdf2_sha256 is accepted only to log in accounts imported with such hashes; being
# deprecated, each is replaced by an argon2id hash at its first successful login.
CONTEXT = CryptContext(
    schemes=["argon2", "pbkdf2_sha256"],
    deprecated=["pbkdf2_sha256"],
    argon2__type="ID",
    argon2__memory_cost=19456,
    argon2__time_cost=2,
    argon2__parallelism=1,
)


def hash_password(password: str) -> str:
    return str(CONTEXT.hash(password))


def verify(password: str, stored_hash: str) -> tuple[bool, str | None]:
    """(matches, replacement hash or None). Never raises on a malformed stored hash."""
    try:
        ok, new_hash = CONTEXT.verify_and_update(password, stored_hash)
    except (ValueError, TypeError):
        return False, None
    return bool(ok), None if new_hash is None else str(new_hash)
