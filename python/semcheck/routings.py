"""Routings to check an expert-parallel kernel over: the kinds that break MoE kernels.

semcheck reads integer data a kernel gets from its inputs (top-k ids, a routing table)
with the values the script passes, and checks the kernel once per set of values it is
called with. To check one kernel over many routings in one command, the script calls it
once per routing; :func:`generated` gives the usual families::

    from semcheck.routings import generated

    for name, topk in generated(devices=N, tokens=T, top_k=K, experts=E):
        run(topk)            # jit(shard_map(pallas_call(...)))(topk, x)

``semcheck check`` then says "checked for R routings" per kernel and which of them
break it; a call made inside ``with routing(name):`` gives its routing that name in the
report (``kernel#2 (all-to-one)``). The routings are those the script passes: never every routing, unless the
script enumerates them all (:func:`every`, for small token and expert counts).

Each routing is an integer array ``[devices, tokens, top_k]``: entry ``[d, t, j]`` is
the ``j``-th expert token ``t`` of device ``d`` goes to. Experts are laid out in blocks:
expert ``e`` lives on device ``e // (experts // devices)``. A token's ``top_k`` experts
are distinct, as a router's top-k gives them (when ``experts >= top_k``).
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Iterator

import numpy as np

#: The name of the routing the script is calling a kernel with (see :func:`routing`).
current: str | None = None


@contextlib.contextmanager
def routing(name: str) -> Iterator[None]:
    """Names the routing of the kernel calls made inside it: semcheck's report lists the
    kernel checked with those values under this name. Outside ``semcheck check`` it does
    nothing."""
    global current
    before, current = current, str(name)
    try:
        yield
    finally:
        current = before


#: The families :func:`generated` gives, in order.
FAMILIES = ("all-to-one", "local-only", "remote-only", "empty-experts", "random")


def _distinct(row: list[int], experts: int, top_k: int) -> list[int]:
    """``row``'s first ``top_k`` distinct experts, topped up with the lowest others."""
    out: list[int] = []
    for e in row + list(range(experts)):
        if e not in out:
            out.append(e)
        if len(out) == top_k:
            break
    return out


def generated(*, devices: int, tokens: int, top_k: int, experts: int, random: int = 3,
              seed: int = 0, dtype: str = "int32") -> Iterator[tuple[str, np.ndarray]]:
    """``(name, routing)`` for each family of :data:`FAMILIES`:

    - ``all-to-one``: every token of every device goes to experts ``0 .. top_k - 1``
      (expert 0 gets every token; its device gets the most traffic);
    - ``local-only``: every token goes to experts of its own device (no remote copy);
    - ``remote-only``: every token goes to experts of the next device (all remote);
    - ``empty-experts``: only the first expert of each device is used (the others get
      no token: empty groups);
    - ``random-1`` .. ``random-R`` (R = ``random``): draws of distinct experts per token,
      from ``seed``.
    """
    if experts % devices:
        raise ValueError(f"{experts} experts do not split evenly over {devices} devices")
    per = experts // devices
    shape = (devices, tokens, top_k)

    def table(pick) -> np.ndarray:
        out = np.zeros(shape, dtype=dtype)
        for d in range(devices):
            for t in range(tokens):
                out[d, t] = _distinct(pick(d, t), experts, top_k)
        return out

    yield "all-to-one", table(lambda d, t: list(range(top_k)))
    yield "local-only", table(lambda d, t: [d * per + (t + j) % per for j in range(top_k)])
    nxt = lambda d: (d + 1) % devices  # noqa: E731
    yield "remote-only", table(lambda d, t: [nxt(d) * per + (t + j) % per for j in range(top_k)])
    yield "empty-experts", table(lambda d, t: [((d + t + j) % devices) * per for j in range(top_k)])
    rng = np.random.default_rng(seed)
    for i in range(random):
        draw = np.stack([[rng.permutation(experts)[:top_k] for _ in range(tokens)] for _ in range(devices)])
        yield f"random-{i + 1}", draw.astype(dtype)


def every(*, devices: int, tokens: int, top_k: int, experts: int,
          dtype: str = "int32") -> Iterator[tuple[str, np.ndarray]]:
    """Every routing (each token's ``top_k`` distinct experts in every order): for small
    counts only, ``(experts! / (experts - top_k)!) ** (devices * tokens)`` of them, named
    ``every-1``, ``every-2``, ... in order (as semcheck's notes count routings: the script
    passing only these, ``every-k`` is ``routing k of the R``)."""
    choices = list(itertools.permutations(range(experts), top_k))
    slots = devices * tokens
    if len(choices) ** slots > 100_000:
        raise ValueError(f"{len(choices) ** slots} routings: too many to enumerate")
    for i, combo in enumerate(itertools.product(choices, repeat=slots)):
        yield f"every-{i + 1}", np.asarray(combo, dtype=dtype).reshape(devices, tokens, top_k)


__all__ = ["FAMILIES", "every", "generated", "routing"]
