"""The API's temporary folders: removed however their process ends, at once when it can,
else by the next process's sweep (the rule of the binary's `src/cleanup.rs`)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from semcheck import _tempdirs


def test_a_killed_processs_folder_is_swept_and_a_live_ones_is_not(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # A process that ends without cleaning up (as an xdist worker's os._exit does).
    code = ("import os; from semcheck._tempdirs import TempFolder; t = TempFolder('session-'); "
            "open(os.path.join(t.path, 'server.stderr'), 'w').close(); print(t.path, flush=True); os._exit(0)")
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    dead = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True).stdout.strip()
    assert os.path.isdir(dead) and os.path.isfile(dead + ".lock")
    live = _tempdirs.TempFolder()
    # A lock file whose folder is not made yet (or is gone) is left for a minute.
    young = tmp_path / f"{_tempdirs.PREFIX}{os.getpid() + 1}-0000.lock"
    young.touch()
    # Not ours: no lock file beside it.
    other = tmp_path / f"{_tempdirs.PREFIX}other"
    other.mkdir()
    assert _tempdirs.sweep() == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [os.path.basename(live.path), os.path.basename(live.lock_path), young.name, other.name])
    live.cleanup()
    assert not os.path.exists(live.path) and not os.path.exists(live.lock_path)
    os.utime(young, (0, 0))  # an hour old: removed
    assert _tempdirs.sweep() == [] and not young.exists()
