"""The ``rocketq`` command: argument parsing and output only; every command calls the library."""

from rocketq.cli.main import main

__all__ = ["main"]
