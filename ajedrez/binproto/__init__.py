"""The binary protocol of seed 004 (docs/dialects.md): a front end on the service."""
