"""`tilec.torch` where torch is missing: the error says how to install it (runs in CI)."""

from __future__ import annotations

import sys

import pytest

import tilec.torch as tilec_torch


def test_without_torch_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match="pip install torch"):
        tilec_torch.custom_op("tilec_cpu_test::never", mutates_args=())
    import tilec  # importing tilec never imports torch

    assert tilec.__name__ == "tilec"
