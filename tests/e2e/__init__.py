"""End-to-end tests: real server processes spoken to over sockets, the admin command, the
repository as shipped (README, packaging, types)."""
