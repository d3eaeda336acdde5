"""Shared fixtures."""

from __future__ import annotations

import os

import matplotlib
import pytest

from perfmodel.testing import make_accelerator, tiny_model

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def tiny():
    return tiny_model()


@pytest.fixture
def gpu():
    return make_accelerator()
