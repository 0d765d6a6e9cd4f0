"""``python -m semcheck.frontend export FILE --devices N [--kernel NAME] [--out PATH] [-- ARGS]``
(and ``record``, the child an export with ``SEMCHECK_INTERPRET_VALUES`` runs, ``serve``,
``version``).

Exit status: 0 when the document was written (even if it holds unsupported or refused
kernels: they are data for the checker), 2 on a usage error or when the document has
top-level errors (script error, no kernel found).
"""

from __future__ import annotations

import argparse
# Bound when the front end is imported, before a script runs: a script that replaces
# `json.dumps` (or the like) does not change how the export is written.
from json import dumps
import sys


def _orphaned() -> int:
    """What an export does when the semcheck that started it ended while it was starting
    (it was reparented): it runs no script, since nothing of semcheck may outlive it."""
    sys.stderr.write("semcheck: the semcheck that started this export has ended: no script is run\n")
    return 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m semcheck.frontend")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="run a kernel script and print its kernels as JSON")
    ex.add_argument("file")
    ex.add_argument("--devices", type=int, required=True, help="number of devices JAX sees (N)")
    ex.add_argument("--kernel", help="export only the kernel with this name")
    ex.add_argument("--out", help="write the JSON here instead of stdout")
    ex.add_argument("--no-lower", action="store_true", help="skip Mosaic's TPU lowering cross-check")
    rec = sub.add_parser("record", help="run a script with its kernels in JAX's TPU interpret mode, recording "
                                         "their copies into SMEM (the export's --interpret-values child)")
    rec.add_argument("file")
    rec.add_argument("--devices", type=int, required=True, help="number of devices JAX sees (N)")
    rec.add_argument("--out", required=True, help="the file the events are written to")
    sub.add_parser("version", help="print the package, format and jax versions")
    sv = sub.add_parser("serve", help="serve exports read from stdin, in forked workers (server.py)")
    sv.add_argument("--jobs", type=int, default=1, help="workers running at once")
    sv.add_argument("--idle-seconds", type=float, help="exit after this long with nothing to do")
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    if args.command == "version":
        from .export import FORMAT, VERSION

        print(dumps({"package": VERSION, "format": FORMAT}))
        return 0
    if args.command == "serve":
        from .server import serve

        return serve(args.jobs, args.idle_seconds)
    if args.devices < 1:
        parser.error("--devices must be at least 1")
    from .._procs import orphaned, starting_parent

    parent = starting_parent()
    if args.command == "record":
        from .export import configure

        configure(args.devices)
        from .capture import record_interpreted

        if orphaned(parent):
            return _orphaned()
        return record_interpreted(args.file, script_args, args.out)
    from .export import export_file

    if orphaned(parent):
        return _orphaned()
    doc = export_file(args.file, args.devices, args.kernel, script_args, lower=not args.no_lower)
    # Compact: with `indent`, `json` falls back to its pure-Python encoder (1.5 s instead
    # of 0.1 s for the 2 MB document of the fused reduce-scatter GMM at N = 8).
    text = dumps(doc, separators=(",", ":"))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 2 if doc["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
