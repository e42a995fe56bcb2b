"""Every repository path that the code and the docs mention exists (issue 13: references pointed to
RULES-style names of files this repository does not have, and to a scenarios folder it never had)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A path-like word: folders then a file name with a known extension (``docs/rules.md``,
#: ``referee/rules/engine.py``), or an upper-case Markdown file name (``README``-style).
PATH = re.compile(r"(?<![\w./{$-])((?:[\w-]+/)+[\w.-]+\.(?:py|md|proto|json|toml|sh|yaml|js|txtpb))\b"
                  r"|(?<![\w./-])([A-Z][A-Z_]+\.md)\b")
#: Mentions that are not repository paths, each with why.
NOT_PATHS = {
    "allfours/v1/referee.proto": "an import path inside proto/ (protoc -Iproto)",
    "allfours/v1/lobby.proto": "an import path inside proto/ (protoc -Iproto)",
    "arena-out/demo/leaderboard.html": "output of a run",
    "arena-out/compose/leaderboard.html": "output of a run",
    "benchmarks/X.py": "a placeholder in a docstring",
    "records/m1.json": "a record path inside a test's output folder",
    "replays/pages.json": "a file of a tournament's output folder (arena/web/export.py)",
    "d/manifest.json": "a member of a hostile image archive (tests/test_competition_intake.py)",
    "OUTPUT/submissions/ID/upload.json": "a receipt in a competition's output folder (arena/competition/pipeline.py)",
    "final/ratings.json": "a file of a tournament's output folder (a competition's final: arena/tournament/restore.py)",
    "folder/ratings.json": "a file of any tournament's output folder (arena/tournament/restore.py)",
    "OUTPUT/final/final.toml": "the final's config in a competition's output folder (arena/competition/final.py)",
    "examples/my.toml": "the copy of examples/demo.toml a bot author makes (docs/bot-authors.md)",
    "mybots/cpp/build.sh": "the copy of sample_bots/cpp a bot author makes (docs/bot-authors.md)",
}
SCANNED = (".py", ".md", ".proto", ".toml", ".sh", ".js", ".yaml", ".cc")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split() if f.endswith(SCANNED) and not f.startswith("allfours/")]


def test_every_path_mentioned_exists() -> None:
    files = _tracked()
    assert len(files) > 100, "git ls-files found too few files to be this repository"
    missing = []
    for name in files:
        path = ROOT / name
        if not path.exists():
            continue  # deleted in the work tree, not yet committed
        for m in PATH.finditer(path.read_text(errors="replace")):
            mention = m.group(1) or m.group(2)
            if mention in NOT_PATHS:
                continue
            if not any((base / mention).exists() for base in (ROOT, path.parent, ROOT / "docs")):
                missing.append(f"{name}: {mention}")
    assert not missing, "paths mentioned that do not exist:\n" + "\n".join(missing)


def test_the_check_finds_a_missing_path() -> None:
    """The pattern catches both kinds of mention (so the test above can fail)."""
    text = "see RULES" ".md and shared/scenarios/README" ".md"  # split: this file is scanned too
    found = {m.group(1) or m.group(2) for m in PATH.finditer(text)}
    assert found == {"RULES" ".md", "shared/scenarios/README" ".md"}
    assert not any((ROOT / p).exists() for p in found)
