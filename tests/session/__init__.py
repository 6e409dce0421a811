"""IO-free tests of the ESPOL session: bytes in, reply frames out, on a real SQLite store."""
