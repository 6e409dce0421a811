"""The `#` protocol of seed 000 (docs/dialects.md): a front end on the service."""
