"""Fixtures: a real gatedb data directory in pytest's tmp_path, opened with
each kind of returned types (gatedb's own; pymongo's when installed)."""

import pytest

import gatedb
from gatedb import _bson

TYPE_KINDS = ["gatedb"] + (["pymongo"] if _bson.pymongo_types() is not None else [])


@pytest.fixture(params=TYPE_KINDS)
def db(request, tmp_path):
    d = gatedb.Database(tmp_path / "data", types=request.param)
    yield d
    d.close()


@pytest.fixture
def gdb(tmp_path):
    """A database returning gatedb's own types."""
    d = gatedb.Database(tmp_path / "data", types="gatedb")
    yield d
    d.close()


@pytest.fixture
def coll(gdb):
    return gdb["app"]["tasks"]
