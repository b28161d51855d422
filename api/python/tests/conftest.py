"""Fixtures: real gatedb data directories in pytest's tmp directories,
opened with each codec this machine has ("pure" always; "pymongo" when
pymongo's bson is importable).

Opening a fresh data directory takes about half a second here, so the
suite shares one Database per codec and gives each test a database name of
its own (``db``); tests about opening and closing open their own.

The package is imported from this source tree (api/python) and the library
from $GATEDB_LIBRARY:
``GATEDB_LIBRARY=build/api/libgatedb.so python3 -m pytest -q api/python/tests``.
"""

import itertools
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gatedb  # noqa: E402
from gatedb import codec as _codec  # noqa: E402

CODECS = ["pure"] + (["pymongo"] if _codec.pymongo_bson() is not None else [])
_names = itertools.count()


def _open(tmp_path_factory, codec):
    return gatedb.Database(tmp_path_factory.mktemp("data-" + codec), codec=codec)


@pytest.fixture(scope="session", params=CODECS)
def client(request, tmp_path_factory):
    """One Database per codec, shared by the whole run."""
    d = _open(tmp_path_factory, request.param)
    yield d
    d.close()


@pytest.fixture(scope="session")
def pclient(tmp_path_factory):
    """The shared Database with the pure codec (gatedb's own types)."""
    d = _open(tmp_path_factory, "pure")
    yield d
    d.close()


def _fresh_name(request):
    return "%s_%d" % (re.sub(r"[^A-Za-z0-9]", "_", request.node.name)[:40], next(_names))


@pytest.fixture
def db(client, request):
    """A database (handle) of this test's own, with each codec in turn."""
    return client[_fresh_name(request)]


@pytest.fixture
def pdb(pclient, request):
    """A database (handle) of this test's own, pure codec."""
    return pclient[_fresh_name(request)]


@pytest.fixture
def coll(pdb):
    return pdb["tasks"]


@pytest.fixture
def raw():
    """raw(database, cmd): runs cmd (a dict) and returns (code, the reply's BSON bytes), undecoded."""
    def run(database, cmd):
        rc, reply = database._handle.command(database.codec.encode(cmd))
        assert reply is not None
        return rc, reply
    return run
