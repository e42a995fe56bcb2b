"""The ``arena`` command: argument parsing (:mod:`arena.cli.commands`) and one function per command;
no business logic lives here. ``arena.cli:main`` is the installed entry point."""

import os

# gRPC's C core logs INFO lines on stderr (``ssl_transport_security.cc … Handshake failed …`` before the
# one line `arena submit --tls-ca` against a plaintext port prints); the arena's commands show its
# warnings and errors only, unless the user set GRPC_VERBOSITY, as the SDK does (sdk/__init__.py). Set
# before grpc is imported: it reads the variable once.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from arena.cli.commands import main

__all__ = ["main"]
