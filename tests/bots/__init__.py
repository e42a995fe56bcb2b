"""Minimal protocol test bots (plain grpc clients on the generated stubs)."""
