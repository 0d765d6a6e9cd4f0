"""How a kernel file is run (``semcheck.frontend.scripts``): as a script, or, when it is
a module of a package that imports relatively, as ``python -m`` runs it."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from semcheck.frontend.scripts import StderrTail, as_module, exit_message, run_as_main


def package(root: Path, files: dict[str, str]) -> None:
    """Writes ``files`` (relative path to text) under ``root``."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_only_a_package_module_that_imports_relatively_runs_as_a_module(tmp_path: Path) -> None:
    package(tmp_path, {
        "lib/__init__.py": "from .inner.ring import answer\n",
        "lib/inner/__init__.py": "",
        "lib/inner/ring.py": "from .. import helpers\nanswer = 42\n",
        "lib/inner/absolute.py": "import os\n",
        "lib/helpers.py": "",
        "loose/ring.py": "from . import x\n",
        "my-lib/__init__.py": "",
        "my-lib/ring.py": "from . import x\n",
        "lib/broken.py": "from . import (\n",
    })
    assert as_module(str(tmp_path / "lib/inner/ring.py")) == ("lib.inner.ring", str(tmp_path))
    assert as_module(str(tmp_path / "lib/__init__.py")) == ("lib", str(tmp_path))
    # No relative import, no package, a folder Python cannot import, a file that does not
    # parse (run as a script, which reports its syntax error): as a script.
    for script in ["lib/inner/absolute.py", "loose/ring.py", "my-lib/ring.py", "lib/broken.py"]:
        assert as_module(str(tmp_path / script)) is None, script


def test_a_module_runs_as_main_with_its_package_and_argv_and_leaves_sys_as_it_was(tmp_path: Path) -> None:
    package(tmp_path, {
        "lib/__init__.py": "",
        "lib/common.py": "seen = []\n",
        "lib/main.py": ("import sys\nfrom .common import seen\n"
                        "if __name__ == '__main__':\n    seen.append((__package__, sys.argv[1:]))\n"),
        "script.py": "import sys\nimport lib.common\nlib.common.seen.append(('script', sys.argv[1:]))\n",
    })
    argv, path = list(sys.argv), list(sys.path)
    try:
        run_as_main(str(tmp_path / "lib/main.py"), ["--flag"])
        import lib.common  # the package the module ran in, imported from its root

        assert lib.common.seen == [("lib", ["--flag"])]
        assert (sys.argv, sys.path) == (argv, path)
        # A script's own folder is first on sys.path: its sibling package imports.
        run_as_main(str(tmp_path / "script.py"), [])
        assert lib.common.seen[-1] == ("script", [])
        with pytest.raises(ImportError, match="no known parent package"):
            package(tmp_path, {"lone/ring.py": "from . import x\n"})
            run_as_main(str(tmp_path / "lone/ring.py"), [])
        assert (sys.argv, sys.path) == (argv, path)
    finally:
        for name in [n for n in sys.modules if n == "lib" or n.startswith("lib.")]:
            del sys.modules[name]



def test_an_exit_says_what_the_script_printed_last_and_where_its_arguments_go() -> None:
    tail = StderrTail(io.StringIO())
    with tail.keeping():
        print("compiling", file=sys.stderr)
        sys.stderr.write("bench.py: error: the following arguments are required: --size\n\n")
    assert tail.last == "bench.py: error: the following arguments are required: --size"
    said = exit_message(SystemExit(2), tail)
    assert said is not None and said.startswith(
        "the script exited with status 2 after printing `bench.py: error: the following arguments are required: --size`")
    assert "the script's own arguments go after `--`" in said
    assert exit_message(SystemExit("no TPU here"), tail) == "the script exited: no TPU here"
    assert exit_message(SystemExit(3), StderrTail(io.StringIO())) == "the script exited with status 3"
    assert exit_message(SystemExit(0), tail) is None and exit_message(SystemExit(None), tail) is None
