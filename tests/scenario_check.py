"""Compare a replay output with a scenario's ``expect`` block, as docs/formats.md describes.

Only the keys present in ``expect`` are compared; for ``next`` the ``legal`` list is compared as a
set; for ``error`` only ``reason`` and ``index``; a deal in ``deals`` is compared on the keys it
names (and ``deals`` must have at least as many entries as expected).
"""

from __future__ import annotations

from typing import Any


def mismatches(expect: dict[str, Any], out: dict[str, Any]) -> list[str]:
    """Human-readable differences between ``expect`` and the replay output ``out`` (empty = match)."""
    problems: list[str] = []
    for key, want in expect.items():
        got = out.get(key)
        if key == "next" and want is not None and got is not None:
            for k, v in want.items():
                g = got.get(k)
                if k == "legal":
                    if sorted(v) != sorted(g or []):
                        problems.append(f"next.legal: want {sorted(v)}, got {sorted(g or [])}")
                elif g != v:
                    problems.append(f"next.{k}: want {v!r}, got {g!r}")
        elif key == "error" and want is not None:
            if got is None:
                problems.append(f"error: want {want}, got none")
            else:
                for k in ("reason", "index"):
                    if k in want and want[k] != got.get(k):
                        problems.append(f"error.{k}: want {want[k]!r}, got {got.get(k)!r}")
        elif key == "deals":
            if len(got or []) < len(want):
                problems.append(f"deals: want {len(want)} deals, got {len(got or [])}")
                continue
            for i, wd in enumerate(want):
                for k, v in wd.items():
                    if got[i].get(k) != v:
                        problems.append(f"deals[{i}].{k}: want {v!r}, got {got[i].get(k)!r}")
        elif got != want:
            problems.append(f"{key}: want {want!r}, got {got!r}")
    return problems
