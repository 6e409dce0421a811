"""IO-free tests of the ESPOL vocabulary: framing, fields, the command table, its documentation."""
