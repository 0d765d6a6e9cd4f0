"""The cell pass's shortcut (cells.Granularity.run): one device visited when nothing the
pass evaluates reads the device's coordinates. Compared with the full visit of every
device on the seed kernels: the same documents."""

import json
import os
import subprocess
import sys

from conftest import HERE, seed_files

from semcheck.frontend import cells
from semcheck.frontend import exprs as E

#: Exports each file twice in one process (N devices): as the front end does, and with the
#: shortcut off (every device visited); prints whether each pair of documents is the same.
COMPARE = r"""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[1]))))
from semcheck.frontend.export import configure
configure(int(sys.argv[2]))
os.environ.setdefault("SEMCHECK_TPU", "v6e")
from semcheck.frontend import cells
from semcheck.frontend.export import export_file

def strip(doc):
    if isinstance(doc, dict):
        return {k: strip(v) for k, v in doc.items() if "seconds" not in k}
    if isinstance(doc, list):
        return [strip(v) for v in doc]
    return doc

shortcut = cells._reads_device
taken = 0
def counting(body):
    global taken
    reads = shortcut(body)
    taken += not reads
    return reads

def export(path, reads_device):
    cells._reads_device = reads_device
    return strip(export_file(path, int(sys.argv[2]), lower=False))

out = {}
for path in sys.argv[3:]:
    # One line calls both exports: the documents name their caller's lines.
    fast, full = [export(path, patch) for patch in (counting, lambda body: True)]
    out[path] = fast == full
print(json.dumps({"same": out, "shortcut_taken": taken}))
"""


def test_reads_device_sees_axis_index_in_what_the_pass_evaluates():
    when = {"op": "when", "cond": E.op("eq", ("axis_index", "x"), E.const(0)), "body": []}
    assert cells._reads_device([when])
    by_step = {"op": "when", "cond": E.op("eq", ("program_id", 0), E.const(0)), "body": [when]}
    assert cells._reads_device([by_step])
    assert not cells._reads_device([{**by_step, "body": []}])


def test_one_device_gives_the_documents_every_device_gives():
    files = seed_files()
    proc = subprocess.run([sys.executable, "-c", COMPARE, os.path.join(HERE, "conftest.py"), "4", *files],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    different = [f for f, same in result["same"].items() if not same]
    assert different == []
    # The shortcut is taken somewhere (psum's cells depend on the grid step only).
    assert result["shortcut_taken"] >= 1
