"""The ``arena`` command: argument parsing (:mod:`arena.cli.commands`) and one function per command;
no business logic lives here. ``arena.cli:main`` is the installed entry point."""

from arena.cli.commands import main

__all__ = ["main"]
