"""A location's text is the statement, not its comment (semcheck shows it in every
counterexample event): comments are found by Python's tokenizer, so a ``#`` in a string
stays."""

from __future__ import annotations

import pytest

from semcheck.frontend.location import without_comments


@pytest.mark.parametrize(
    "source, statement",
    [
        ("local.start()  # read hbm_buf while it lands", "local.start()"),
        ("remote.start()", "remote.start()"),
        ('name = "a # b"  # not a comment: the first #', 'name = "a # b"'),
        ("x = f'{a}#{b}'  # f-string", "x = f'{a}#{b}'"),
        ("    z = f(a,  # the first line of a call", "    z = f(a,"),
        ("# a comment line", ""),
        ("pl.semaphore_signal(sem, 1,  # inc\n    device_id=d)  # right", "pl.semaphore_signal(sem, 1,\n    device_id=d)"),
        ('s = """abc # inside an unterminated string', 's = """abc # inside an unterminated string'),
    ],
)
def test_comments_are_cut_with_the_tokenizer(source: str, statement: str) -> None:
    assert without_comments(source) == statement
