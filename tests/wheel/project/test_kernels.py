"""A kernel author's tests: each is checked by semcheck instead of run."""

import pytest

import kernels


@pytest.mark.semcheck(devices=[2, 3])
def test_shift():
    kernels.run()


@pytest.mark.semcheck(devices=[2])
def test_shift_early():
    kernels.run(early=True)
