"""Where bots run: local processes (nothing outlives them), the shepherd, sandboxed containers,
image builds and each bot's workers."""
