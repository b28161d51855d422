"""Cursors: getMore batches, killCursors when dropped early."""

import gc

import pytest

import gatedb


@pytest.fixture
def thousand(db):
    coll = db["docs"]
    coll.insert_many([{"_id": i} for i in range(1000)])
    return coll


def _get_more(coll, cid):
    return coll.database.command({"getMore": coll.database.client.types.Int64(cid), "collection": coll.name})


def test_find_follows_get_more(thousand):
    cur = thousand.find({}, batch_size=10)
    ids = [d["_id"] for d in cur]
    assert ids == list(range(1000))
    # The first batch, 99 getMores of 10, and maybe one more that finds the end.
    assert cur.batches in (100, 101)
    assert cur.cursor_id == 0 and not cur.alive
    default = thousand.find({})
    assert len(list(default)) == 1000 and default.batches > 1  # 101 first, as MongoDB
    agg = thousand.aggregate([{"$match": {"_id": {"$lt": 25}}}], batch_size=7)
    assert [d["_id"] for d in agg] == list(range(25)) and agg.batches == 4


def test_close_kills_the_cursor(thousand):
    early = thousand.find({}, batch_size=10)
    assert next(early)["_id"] == 0
    cid = early.cursor_id
    assert cid != 0 and early.alive
    assert _get_more(thousand, cid)["cursor"]["nextBatch"][0]["_id"] == 10  # open in the library
    early.close()
    with pytest.raises(gatedb.OperationFailure) as e:
        _get_more(thousand, cid)
    assert e.value.code == 43 and e.value.code_name == "CursorNotFound"
    with pytest.raises(StopIteration):
        next(early)


def test_with_block_and_garbage_collection_kill_too(thousand):
    with thousand.find({}, batch_size=5) as c:
        assert [next(c)["_id"] for _ in range(7)] == list(range(7))
        cid = c.cursor_id
    with pytest.raises(gatedb.OperationFailure) as e:
        _get_more(thousand, cid)
    assert e.value.code == 43
    dropped = thousand.find({}, batch_size=5)
    next(dropped)
    cid = dropped.cursor_id
    del dropped
    gc.collect()
    with pytest.raises(gatedb.OperationFailure) as e:
        _get_more(thousand, cid)
    assert e.value.code == 43


def test_modifiers_only_before_the_first_batch(thousand):
    cur = thousand.find({"_id": {"$lt": 50}}).sort("_id", -1).skip(5).limit(3)
    assert [d["_id"] for d in cur] == [44, 43, 42]
    with pytest.raises(gatedb.InvalidOperation):
        cur.limit(1)
