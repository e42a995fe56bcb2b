"""Issue 9 (referee): what outside trials broke, each against a real ``referee serve`` process over
real sockets: private record files, hostile bytes and text, a seat that never reads, forfeits that
must not show a hidden hand."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from allfours.v1 import referee_pb2 as pb
from tests.server_helpers import start_referee

pytestmark = pytest.mark.slow


def test_record_dir_and_files_are_private_under_a_permissive_umask(tmp_path: Path) -> None:
    """item 6: ``--record-dir`` is created 0700 and each record file 0600, whatever the umask."""
    records = tmp_path / "new" / "records"
    old = os.umask(0o022)
    try:
        gen = start_referee(records)
        ref = next(gen)
    finally:
        os.umask(old)
    try:
        created = ref.create(players=2, join_ms=200)
        result, _ = ref.result(created.match_id)
        assert result.status == pb.MATCH_STATUS_FORFEITED  # nobody joined: a no-show, the record is whole
        path = records / f"{created.match_id}.jsonl"
        assert path.read_text().count("\n") >= 3
        assert stat.S_IMODE(records.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        gen.close()
