"""A bot process starts fast: the modules a bot imports (the instant bot, the SDK's runner) pull in
neither numpy nor scipy (the arena's statistics), which took seconds to import on a loaded machine,
so 4 bots started together missed a 3 s join deadline (tests/test_arena_e2e.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["arena.testing.instant_bot", "sdk.run", "arena.config"])
def test_bot_modules_do_not_import_the_statistics_libraries(module: str) -> None:
    code = f"import sys, {module}; print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", f"{module} imports {r.stdout.strip()}"


def test_the_bot_image_entry_imports_nothing_of_the_arena() -> None:
    """A Python bot's image holds allfours/, referee/ and sdk/ only (arena/hosting/bots_build.py), and
    runs ``sdk.run``: it and the bot API must not need the arena (sdk.spar and sdk.conformance may: they
    run where the whole repository is installed)."""
    code = "import sys, sdk, sdk.run; print(sorted(m for m in sys.modules if m.split('.')[0] == 'arena'))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", f"sdk.run imports {r.stdout.strip()}"
