"""Exports several scripts in one process (one device count): used by the tests to
avoid starting JAX once per file. ``python batch_export.py N OUT_DIR FILE...``."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from semcheck.frontend.export import configure  # noqa: E402

devices = int(sys.argv[1])
configure(devices)
# The kernels that ask JAX for the TPU's sizes (emit_pipeline) are traced as on a v6e.
os.environ.setdefault("SEMCHECK_TPU", "v6e")
from semcheck.frontend.export import export_file  # noqa: E402

out_dir = sys.argv[2]
for path in sys.argv[3:]:
    doc = export_file(path, devices)
    name = os.path.basename(os.path.dirname(path)) + "__" + os.path.basename(path)
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(doc, f)
