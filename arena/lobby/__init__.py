"""The lobby that bot workers dial: worker tokens, seat reservation and the gRPC service."""
