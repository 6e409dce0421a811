"""Code the tests share: ESPOL clients, server processes, store helpers, play helpers.

Nothing here is collected as a test; ``tests/conftest.py`` builds its fixtures from it.
"""
