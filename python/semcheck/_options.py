"""The options of a check, validated in one place for the API (:func:`semcheck.check`,
:func:`~semcheck.check_file`, :func:`~semcheck.assert_proved`) and the pytest marker and
ini settings (:mod:`semcheck.pytest_plugin`), before anything is traced or checked.

* ``devices``: a mesh size (an ``int`` from 1 to :data:`MAX_DEVICES`) or an iterable of
  them, not empty; repeated sizes count once, in the order first given. ``bool``,
  ``float``, strings and mappings are refused (``"16"`` is not ``[1, 6]`` nor ``[16]``:
  the ini setting's text is read by :func:`ini_devices`, as pytest splits it).
* ``repeat`` and ``max_memory_mib``: an ``int`` from 1 to :data:`MAX_REPEAT` and
  :data:`MAX_MEMORY_MIB`.
* ``max_seconds``: a finite number of seconds > 0 (NaN and infinity refused).
* ``dma_order`` and ``dma_landing``: one of :data:`DMA_ORDERS` and :data:`DMA_LANDINGS`,
  the binary's choices (``semcheck semantics --json``; the tests compare them).
* ``kernel`` and ``expect``: a non-empty string.

``None`` is the default for every option but ``devices``. A wrong type raises
``TypeError``, a wrong value ``ValueError``, each naming the option and the value.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import os
import re
from typing import Any, Iterable, Mapping

#: The largest mesh semcheck checks (the binary's ``--devices`` range; the tests compare).
MAX_DEVICES = 4096
#: The most back-to-back invocations ``--repeat`` takes (the binary's range; the tests compare).
MAX_REPEAT = 64
#: The largest ``--max-memory-mib`` (16 TiB; the binary's range; the tests compare).
MAX_MEMORY_MIB = 1 << 24
#: ``--dma-order``'s choices, the default first.
DMA_ORDERS = ("any", "pair-fifo")
#: ``--dma-landing``'s choices, the default first.
DMA_LANDINGS = ("whole", "cells")


@dataclasses.dataclass(frozen=True)
class Options:
    """How ``semcheck check`` is run: the specification, the hardware assumptions
    (``semcheck semantics``): ``dma_order`` ``"any"`` or ``"pair-fifo"``, ``dma_landing``
    ``"whole"`` or ``"cells"`` (``None`` is the checker's default), and the budgets."""

    kernel: str | None = None
    expect: str | None = None
    repeat: int | None = None
    dma_order: str | None = None
    dma_landing: str | None = None
    max_seconds: float | None = None
    max_memory_mib: int | None = None

    def flags(self) -> list[str]:
        """The options as ``semcheck check``'s flags."""
        out = []
        for flag, value in (("--kernel", self.kernel), ("--expect", self.expect), ("--repeat", self.repeat),
                            ("--dma-order", self.dma_order), ("--dma-landing", self.dma_landing),
                            ("--max-seconds", self.max_seconds), ("--max-memory-mib", self.max_memory_mib)):
            if value:
                out.append(f"{flag}={value}")  # one argument: a value like `--help` stays a value
        return out


@dataclasses.dataclass(frozen=True)
class Checked(Options):
    """A check's options, validated, and the mesh sizes to check."""

    devices: tuple[int, ...] = ()


def _integer(value: Any) -> int | None:
    """``value`` as an ``int`` if it is an integer (a NumPy one too), not a ``bool``."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def mesh_sizes(devices: Any, name: str = "devices") -> tuple[int, ...]:
    """``devices`` as the mesh sizes to check, each once."""
    shape = f"{name} must be a mesh size or a list of them, like 2 or [2, 3]"
    if isinstance(devices, (str, bytes)):
        raise TypeError(f"{shape}, not the string {devices!r}")
    one = _integer(devices)
    if one is not None:
        sizes = [one]
    else:
        if isinstance(devices, (bool, Mapping)) or not isinstance(devices, Iterable):
            raise TypeError(f"{shape}, not {devices!r}")
        sizes = []
        for d in devices:
            n = _integer(d)
            if n is None:
                raise TypeError(f"{shape} (whole numbers), not {devices!r}: {d!r} is a {type(d).__name__}")
            sizes.append(n)
        if not sizes:
            raise ValueError(f"{name} is empty: name at least one mesh size, like [2, 3]")
    for n in sizes:
        _in_range(n, name)
    return tuple(dict.fromkeys(sizes))


def mesh_size(value: Any, name: str = "devices") -> int:
    """One mesh size: an ``int`` from 1 to :data:`MAX_DEVICES`."""
    n = _integer(value)
    if n is None:
        raise TypeError(f"{name} must be a mesh size (a whole number of devices, like 2), not {value!r}")
    return _in_range(n, name)


def _in_range(n: int, name: str) -> int:
    if n < 1:
        raise ValueError(f"{name} must be mesh sizes of 1 device or more, not {n!r}")
    if n > MAX_DEVICES:
        raise ValueError(f"{name} must be mesh sizes of at most {MAX_DEVICES} devices (semcheck's largest mesh), "
                         f"not {n!r}")
    return n


def count(value: Any, name: str, most: int) -> int | None:
    """An ``int`` from 1 to ``most`` (``repeat``: :data:`MAX_REPEAT`, ``max_memory_mib``:
    :data:`MAX_MEMORY_MIB`), or ``None``."""
    if value is None:
        return None
    n = _integer(value)
    if n is None:
        raise TypeError(f"{name} must be a whole number, not {value!r}")
    if n < 1:
        raise ValueError(f"{name} must be 1 or more, not {value!r}")
    if n > most:
        raise ValueError(f"{name} must be at most {most}, not {value!r}")
    return n


def script_args(value: Any) -> tuple[str, ...]:
    """A script's arguments: a list (or other iterable) of strings, numbers or paths, each
    one argument; ``None`` for none. A string is refused (``"--size 1024"`` is not split)."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"script_args must be a list of arguments, like ['--size', '1024'], not {value!r}")
    out = []
    for a in value:
        if isinstance(a, bool) or not isinstance(a, (str, int, float, os.PathLike)):
            raise TypeError(f"script_args must be strings (or numbers, or paths), not {a!r} in {value!r}")
        out.append(os.fspath(a) if isinstance(a, os.PathLike) else str(a))
    return tuple(out)


def seconds(value: Any, name: str = "max_seconds") -> float | None:
    """A finite number of seconds > 0, or ``None``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number of seconds above 0, not {value!r}")
    return float(value)


def choice(value: Any, name: str, choices: tuple[str, ...]) -> str | None:
    """One of ``choices``, or ``None``."""
    if value is None:
        return None
    if value not in choices or not isinstance(value, str):
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def name(value: Any, option: str) -> str | None:
    """A non-empty string (``kernel``, ``expect``), or ``None``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{option} must be a string, not {value!r}")
    if not value:
        raise ValueError(f"{option} must be a name, not an empty string (None, the default, leaves it unset)")
    return value


def validate(devices: Any, kernel: Any = None, expect: Any = None, repeat: Any = None, dma_order: Any = None,
             dma_landing: Any = None, max_seconds: Any = None, max_memory_mib: Any = None,
             prefix: str = "") -> Checked:
    """Every option of a check, validated (module docs); an error names the option with
    ``prefix`` before it (``semcheck_``: the ini setting)."""
    p = prefix
    return Checked(devices=mesh_sizes(devices, f"{p}devices"), kernel=name(kernel, f"{p}kernel"),
                   expect=name(expect, f"{p}expect"), repeat=count(repeat, f"{p}repeat", MAX_REPEAT),
                   dma_order=choice(dma_order, f"{p}dma_order", DMA_ORDERS),
                   dma_landing=choice(dma_landing, f"{p}dma_landing", DMA_LANDINGS),
                   max_seconds=seconds(max_seconds, f"{p}max_seconds"),
                   max_memory_mib=count(max_memory_mib, f"{p}max_memory_mib", MAX_MEMORY_MIB))


# The ini settings are text (or, from a TOML list, a list): read into the values the
# options take, then validated as the marker's are.

_WHOLE = re.compile(r"[0-9]+")


def ini_devices(value: Any, setting: str = "semcheck_devices") -> Any:
    """``semcheck_devices``: mesh sizes separated by spaces (``2 3``), or a TOML list of
    them (``[2, 3]`` or ``["2", "3"]``); as a list of ints, or as given when it is not
    text (:func:`mesh_sizes` then says what is wrong)."""
    words = value.split() if isinstance(value, str) else value
    if not isinstance(words, list):
        return words
    out: list[Any] = []
    for w in words:
        # pytest.ini's `semcheck_devices = "2 3"` reaches here as the one word '2 3'.
        for part in w.split() if isinstance(w, str) else [w]:
            if isinstance(part, str):
                if not _WHOLE.fullmatch(part):
                    raise ValueError(f"{setting}: {part!r} is not a mesh size: write whole numbers separated by "
                                     "spaces, like 2 3")
                out.append(int(part))
            else:
                out.append(part)
    return out


def ini_number(value: Any, setting: str, kind: type) -> Any:
    """A number setting's text as ``kind`` (``int`` or ``float``); ``None`` when it is
    empty (not set); a value that is not text as it is."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{setting} must be a {'whole number' if kind is int else 'number'}, not {value!r}") from None


def ini_text(value: Any) -> Any:
    """A text setting: ``None`` when empty (not set)."""
    return None if value == "" else value
