"""The package against a real data directory: every method, errors, cursors,
transactions, threads, and the version-gate helper under contention."""

import datetime
import threading
import uuid

import pytest

import gatedb
from gatedb import _bson


def test_library_version():
    assert gatedb.library_version() == gatedb.__version__


def test_every_type_round_trips_through_the_store(db):
    t = db.types
    doc = {
        "_id": t.ObjectId(), "i32": 7, "i64": t.Int64(7), "f": 2.5, "s": "ÉLAN", "b": False, "none": None,
        "dt": datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=datetime.timezone.utc),
        "raw": b"\x00\xff", "bin": t.Binary(b"\x01\x02", 128), "u": uuid.UUID(int=9),
        "re": t.Regex("^a.c$", "i"), "ts": t.Timestamp(1700000000, 2), "dec": t.Decimal128("1.10"),
        "min": t.MinKey(), "max": t.MaxKey(), "nested": {"z": 1, "a": [1, {"b": "c"}]},
    }
    coll = db["app"]["types"]
    coll.insert_one(doc)
    back = coll.find_one({"_id": doc["_id"]})
    version = back.pop("version")
    assert version == 0 and isinstance(version, t.Int64)
    assert back == doc
    assert list(back) == list(doc) and list(back["nested"]) == ["z", "a"]
    for k in ("_id", "i64", "bin", "re", "ts", "dec", "min", "max"):
        assert type(back[k]) is type(doc[k]), k
    assert type(back["i32"]) is int


def test_pymongo_types_are_accepted_with_gatedb_types(coll):
    bson = pytest.importorskip("bson")
    oid = bson.ObjectId()
    coll.insert_one({"_id": oid, "n": bson.Int64(3), "d": bson.Decimal128("2.5"), "r": bson.Regex("x", "i")})
    back = coll.find_one({"_id": gatedb.ObjectId(oid.binary)})
    assert back["n"] == 3 and type(back["n"]) is gatedb.Int64
    assert back["d"] == gatedb.Decimal128("2.5")
    assert back["r"] == gatedb.Regex("x", "i")


def test_crud_methods(coll):
    r = coll.insert_one({"name": "a", "n": 1})
    assert isinstance(r.inserted_id, gatedb.ObjectId)
    many = coll.insert_many([{"_id": i, "n": i} for i in range(2, 7)])
    assert many.inserted_ids == [2, 3, 4, 5, 6]
    assert coll.count_documents({}) == 6
    assert coll.count_documents({"n": {"$gte": 4}}) == 3
    assert coll.find_one({"_id": 3})["n"] == 3
    assert coll.find_one({"_id": 99}) is None

    u = coll.update_one({"_id": 2}, {"$set": {"x": 1}})
    assert (u.matched_count, u.modified_count, u.upserted_id) == (1, 1, None)
    um = coll.update_many({"n": {"$gte": 5}}, {"$inc": {"n": 10}})
    assert (um.matched_count, um.modified_count) == (2, 2)
    up = coll.update_one({"_id": 50}, {"$set": {"n": 50}}, upsert=True)
    assert up.upserted_id == 50 and up.matched_count == 0
    rep = coll.replace_one({"_id": 3}, {"n": 33})
    assert rep.modified_count == 1
    got = coll.find_one({"_id": 3})
    assert got == {"_id": 3, "n": 33, "version": 1}

    before = coll.find_one_and_update({"_id": 4}, {"$inc": {"n": 1}})
    assert before["n"] == 4
    after = coll.find_one_and_update({"_id": 4}, {"$inc": {"n": 1}}, return_document=gatedb.ReturnDocument.AFTER)
    assert after["n"] == 6 and after["version"] == 2
    assert coll.find_one_and_update({"_id": 404}, {"$set": {"a": 1}}) is None
    assert coll.find_one_and_replace({"_id": 4}, {"n": 0})["n"] == 6
    assert coll.find_one_and_delete({"_id": 4})["n"] == 0

    assert coll.delete_one({"_id": 2}).deleted_count == 1
    assert coll.delete_many({"n": {"$gte": 30}}).deleted_count == 2  # 3 (n 33) and 50
    assert sorted(d["_id"] for d in coll.find({"_id": {"$type": "int"}})) == [5, 6]
    assert coll.distinct("n") == [1, 15, 16]
    with pytest.raises(ValueError):
        coll.update_one({"_id": 3}, {"n": 1})
    with pytest.raises(ValueError):
        coll.replace_one({"_id": 3}, {"$set": {"n": 1}})


def test_find_options_and_projection(coll):
    coll.insert_many([{"_id": i, "g": i % 3, "v": i} for i in range(20)])
    docs = list(coll.find({"g": 1}, {"v": 1, "_id": 0}, sort=[("v", -1)], skip=1, limit=3))
    assert docs == [{"v": 16}, {"v": 13}, {"v": 10}]
    assert coll.find_one({"g": 2}, sort=[("v", -1)])["v"] == 17


def test_cursor_follows_get_more_and_kill_cursors(coll):
    coll.insert_many([{"_id": i} for i in range(1000)])
    cur = coll.find({}, batch_size=10)
    ids = [d["_id"] for d in cur]
    assert ids == list(range(1000))
    assert cur.batches >= 100  # one find and getMores, 10 at a time

    early = coll.find({}, batch_size=10)
    assert next(early)["_id"] == 0
    cid = early.cursor_id
    assert cid != 0
    early.close()
    with pytest.raises(gatedb.OperationFailure) as e:
        coll.database.command({"getMore": gatedb.Int64(cid), "collection": coll.name})
    assert e.value.code == 43  # CursorNotFound: killCursors reached the server
    with coll.find({}, batch_size=5) as c:
        assert len([next(c) for _ in range(7)]) == 7


def test_errors_carry_codes(gdb, coll):
    coll.insert_one({"_id": 1})
    with pytest.raises(gatedb.DuplicateKeyError) as e:
        coll.insert_one({"_id": 1})
    assert e.value.code == 11000
    with pytest.raises(gatedb.OperationFailure) as e:
        gdb.command({"noSuchCommand": 1})
    assert e.value.code == 59 and e.value.code_name == "CommandNotFound"
    with pytest.raises(gatedb.OperationFailure) as e:
        coll.find_one({"$bogus": 1})
    assert e.value.code != 0 and e.value.details["ok"] == 0
    with pytest.raises(gatedb.BulkWriteError) as e:
        coll.insert_many([{"_id": 2}, {"_id": 1}, {"_id": 3}])
    assert e.value.details["writeErrors"][0]["index"] == 1
    assert coll.count_documents({}) == 2  # ordered: stopped at the duplicate
    with pytest.raises(gatedb.InvalidDocument):
        coll.insert_one({"_id": 5, "bad": object()})
    assert coll.find_one({"_id": 5}) is None


def test_basis_version_and_version_conflict(coll):
    coll.insert_one({"_id": "o1", "status": "open", "total": 0})
    assert coll.update_one({"_id": "o1"}, {"$set": {"status": "paid"}}, basis_version=0,
                           write_context={"agentId": "billing"}).modified_count == 1
    with pytest.raises(gatedb.VersionConflictError) as e:
        coll.update_one({"_id": "o1"}, {"$set": {"status": "void"}}, basis_version=0,
                        write_context=gatedb.WriteContext(agent_id="late"))
    info = e.value.err_info
    assert info["basisVersion"] == 0 and info["currentVersion"] == 1
    assert info["current"]["status"] == "paid"
    assert info["lastWriter"]["agentId"] == "billing"
    assert e.value.code_name == "VersionConflict"
    # The MongoDB idiom: a stale version equality matches nothing, and says why.
    r = coll.update_one({"_id": "o1", "version": 0}, {"$set": {"status": "x"}})
    assert r.matched_count == 0 and r.version_conflicts[0]["currentVersion"] == 1
    with pytest.raises(gatedb.VersionConflictError):
        coll.delete_one({"_id": "o1"}, basis_version=0)
    assert coll.delete_one({"_id": "o1"}, basis_version=1).deleted_count == 1


def test_idempotent_retry_replays(coll):
    coll.insert_one({"_id": 1, "n": 0})
    wc = {"agentId": "a", "taskId": "task-7", "writeSeq": 1}
    first = coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, write_context=wc)
    again = coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, write_context=wc)
    assert not first.replayed and again.replayed
    assert coll.find_one(1)["n"] == 1


def test_with_version_gate_decides_on_the_current_document(coll):
    coll.insert_one({"_id": "k", "n": 0, "log": []})
    seen = []

    def decide(doc):
        seen.append(doc["version"])
        if len(seen) == 1:  # another writer gets in between our read and our write
            coll.update_one({"_id": "k"}, {"$inc": {"n": 100}})
        return {"$inc": {"n": 1}}

    r = coll.with_version_gate({"_id": "k"}, decide, write_context={"agentId": "g"})
    assert r.modified_count == 1
    assert seen == [0, 1]  # decided again on the conflict's current document
    assert coll.find_one("k")["n"] == 101
    assert coll.with_version_gate({"_id": "k"}, lambda d: None) is None
    with pytest.raises(gatedb.OperationFailure) as e:
        coll.with_version_gate({"_id": "missing"}, lambda d: {"$set": {"a": 1}})
    assert e.value.code == 47


def test_with_version_gate_honours_version_field(gdb):
    c = gdb["app"].create_collection("custom", versionField="rev")
    c.insert_one({"_id": 1, "n": 0})
    c.with_version_gate({"_id": 1}, lambda d: {"$inc": {"n": 1}})
    assert c.find_one(1) == {"_id": 1, "n": 1, "rev": 1}


def test_version_gate_helper_under_threads_loses_no_update(tmp_path):
    with gatedb.Database(tmp_path / "d") as db:
        coll = db["app"]["counter"]
        coll.insert_one({"_id": "c", "n": 0})
        threads, each, errors = 4, 150, []

        def work(i):
            try:
                for _ in range(each):
                    coll.with_version_gate({"_id": "c"}, lambda d: {"$set": {"n": d["n"] + 1}},
                                           write_context={"agentId": "t%d" % i})
            except Exception as e:  # reported below
                errors.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert errors == []
        doc = coll.find_one("c")
        # A read-modify-write ($set n+1) loses updates without the gate.
        assert doc["n"] == threads * each
        assert doc["version"] == threads * each


def test_threads_insert_concurrently(gdb):
    coll = gdb["app"]["many"]

    def work(t):
        for i in range(100):
            coll.insert_one({"_id": "%d-%d" % (t, i)})

    ts = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert coll.count_documents({}) == 800


def test_transaction_commits_together_or_not_at_all(gdb):
    a, b = gdb["bank"]["a"], gdb["bank"]["b"]
    a.insert_one({"_id": 1, "v": 10})
    b.insert_one({"_id": 1, "v": 0})
    with gdb.transaction(write_context={"agentId": "mover"}) as s:
        a.update_one({"_id": 1}, {"$inc": {"v": -5}}, session=s)
        b.update_one({"_id": 1}, {"$inc": {"v": 5}}, session=s)
        assert b.find_one(1)["v"] == 0  # outside the transaction: not yet
        assert b.find_one(1, session=s)["v"] == 5  # inside: its own write
    assert (a.find_one(1)["v"], b.find_one(1)["v"]) == (5, 5)

    with pytest.raises(RuntimeError):
        with gdb.transaction() as s:
            a.update_one({"_id": 1}, {"$inc": {"v": -5}}, session=s)
            raise RuntimeError("the agent changed its mind")
    assert a.find_one(1)["v"] == 5  # aborted


def test_write_conflict_between_transactions_is_transient(tmp_path):
    with gatedb.Database(tmp_path / "d", lock_timeout_ms=50) as db:
        c = db["app"]["c"]
        c.insert_one({"_id": 1, "n": 0})
        s1 = db.transaction()
        c.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s1)
        with pytest.raises(gatedb.OperationFailure) as e:
            with db.transaction() as s2:
                c.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s2)
        assert e.value.has_error_label("TransientTransactionError")
        s1.commit_transaction()
        assert c.find_one(1)["n"] == 1
        # with_transaction retries a transient failure.
        assert db.with_transaction(lambda s: c.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s)).modified_count == 1
        assert c.find_one(1)["n"] == 2


def test_database_handle_methods(gdb):
    app = gdb["app"]
    app.create_collection("x")
    app["y"].insert_one({"_id": 1})
    assert sorted(app.list_collection_names()) == ["x", "y"]
    assert "app" in gdb.list_database_names()
    app.drop_collection("x")
    app.drop_collection("never")  # NamespaceNotFound is not an error, as in pymongo
    assert app.list_collection_names() == ["y"]
    assert app.command({"ping": 1})["ok"] == 1
    name = app["y"].create_index([("a", 1)])
    assert name == "a_1" and [i["name"] for i in app["y"].list_indexes()] == ["_id_", "a_1"]


def test_options_and_closed_database(tmp_path):
    with pytest.raises(TypeError):
        gatedb.Database(tmp_path / "d", no_such_option=1)
    with pytest.raises(gatedb.OperationFailure):
        gatedb.Database(tmp_path / "missing", create_if_missing=False)
    db = gatedb.Database(tmp_path / "d", cursor_timeout_ms=4321)
    assert db.command({"getParameter": 1, "cursorTimeoutMillis": 1})["cursorTimeoutMillis"] == 4321
    with pytest.raises(gatedb.OperationFailure):
        gatedb.Database(tmp_path / "d")  # RocksDB's lock: one handle per directory
    db.close()
    with pytest.raises(gatedb.InvalidOperation):
        db["a"]["b"].find_one({})
    db.close()  # twice is fine
