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


SPLIT_CALL = '''\
def kernel(x_ref, o_ref, send_sem, recv_sem):
    pltpu.make_async_remote_copy(
        src_ref=x_ref, dst_ref=o_ref, send_sem=send_sem, recv_sem=recv_sem,
        device_id=(1,), device_id_type=pltpu.DeviceIdType.MESH,
    ).wait_recv()  # the method JAX locates at this line
    short(
        a).start()
'''


def test_a_method_called_on_a_call_that_spans_lines_is_shown_from_its_statement(tmp_path) -> None:
    # Python locates `make_async_remote_copy(...).wait_recv()` at `wait_recv`, on the line
    # of `)` (columns as `dis` gives them under Python 3.11 and 3.12): the
    # text is the statement, its first call's arguments elided when it is long.
    from jax._src.source_info_util import Frame

    from semcheck.frontend.location import frame_record

    path = tmp_path / "split_call.py"
    path.write_text(SPLIT_CALL)
    record = frame_record(Frame(str(path), "kernel", 5, 6, 5, 17))
    assert (record["line"], record["text"]) == (5, ").wait_recv()")
    assert record["code"] == "pltpu.make_async_remote_copy(...).wait_recv()"
    short = frame_record(Frame(str(path), "kernel", 7, 11, 7, 18))
    assert short["code"] == "short(a).start()"
    # A frame that starts its statement keeps its own (whole) lines.
    assert frame_record(Frame(str(path), "kernel", 6, 4, 7, 10))["code"] == "short(a).start()"
