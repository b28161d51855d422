"""Errors carry gatedb's codes and replies; bad values never reach the
library; a closed database raises instead of crashing."""

import threading

import pytest

import gatedb


def test_bad_commands_raise_operation_failure_with_the_code(db):
    with pytest.raises(gatedb.OperationFailure) as e:
        db.command({"noSuchCommand": 1})
    assert e.value.code == 59 and e.value.code_name == "CommandNotFound"
    assert e.value.details["ok"] == 0 and "noSuchCommand" in e.value.details["errmsg"]
    with pytest.raises(gatedb.OperationFailure) as e:
        db["c"].find_one({"$bogus": 1})
    assert e.value.code == 2 and e.value.code_name == "BadValue"
    with pytest.raises(gatedb.OperationFailure) as e:
        db["c"].update_one({"_id": 1}, {"$set": {"a": 1}, "$unset": {"a": ""}}, upsert=True)
    assert e.value.code == 40  # ConflictingUpdateOperators: a write error of the statement
    assert isinstance(e.value, gatedb.WriteError)
    with pytest.raises(gatedb.OperationFailure) as e:
        db["c"].update_one({"_id": 1}, {"$set": {"version": 5}})
    with pytest.raises(gatedb.OperationFailure) as e:
        db.client.command({"find": "c", "$db": "x", "bogusField": 1})
    assert e.value.code_name is not None and e.value.code != 0


def test_duplicate_keys(db):
    coll = db["c"]
    coll.insert_one({"_id": 1})
    with pytest.raises(gatedb.DuplicateKeyError) as e:
        coll.insert_one({"_id": 1})
    assert e.value.code == 11000 and e.value.details["keyValue"] == {"_id": 1}
    assert isinstance(e.value, gatedb.WriteError) and isinstance(e.value, gatedb.OperationFailure)
    with pytest.raises(gatedb.BulkWriteError) as e:
        coll.insert_many([{"_id": 2}, {"_id": 1}, {"_id": 3}])
    assert e.value.details["writeErrors"][0]["index"] == 1 and e.value.details["writeErrors"][0]["code"] == 11000
    assert e.value.details["n"] == 1 and coll.count_documents({}) == 2  # ordered: stopped at the duplicate
    with pytest.raises(gatedb.BulkWriteError) as e:
        coll.insert_many([{"_id": 4}, {"_id": 1}, {"_id": 2}, {"_id": 5}], ordered=False)
    assert [w["index"] for w in e.value.details["writeErrors"]] == [1, 2]
    assert coll.count_documents({}) == 4 and coll.find_one(5) is not None  # unordered: went on
    keyed = db["keyed"]
    keyed.create_index("k", unique=True)
    keyed.insert_one({"_id": 10, "k": 1})
    with pytest.raises(gatedb.DuplicateKeyError) as e:  # findAndModify refuses at the top level: same class
        keyed.find_one_and_update({"_id": 11}, {"$set": {"k": 1}}, upsert=True)
    assert e.value.code == 11000


def test_version_conflict_error_carries_err_info(db):
    coll = db["orders"]
    coll.insert_one({"_id": "o1", "status": "open", "total": 0})
    coll.update_one({"_id": "o1"}, {"$set": {"status": "paid"}}, basis_version=0, write_context={"agentId": "billing"})
    with pytest.raises(gatedb.VersionConflictError) as e:
        coll.update_one({"_id": "o1"}, {"$set": {"status": "void"}}, basis_version=0)
    err = e.value
    assert err.code_name == "VersionConflict" and isinstance(err, gatedb.WriteError)
    info = err.err_info
    assert info["basisVersion"] == 0 and info["currentVersion"] == 1 == err.current_version
    assert err.current == {"_id": "o1", "status": "paid", "total": 0, "version": 1}
    assert info["conflictingFields"] == ["status"]
    assert info["lastWriter"]["agentId"] == "billing"
    assert info["suggestedAction"] == "reread_and_retry" and info["reason"]
    with pytest.raises(gatedb.VersionConflictError) as e:  # findAndModify: a top-level refusal, same class
        coll.find_one_and_update({"_id": "o1"}, {"$set": {"status": "x"}}, basis_version=0)
    assert e.value.current["status"] == "paid"
    with pytest.raises(gatedb.VersionConflictError):
        coll.delete_one({"_id": "o1"}, basis_version=0)
    with pytest.raises(gatedb.VersionConflictError):
        coll.replace_one({"_id": "o1"}, {"status": "new"}, basis_version=0)
    assert coll.find_one("o1")["status"] == "paid"


class Unencodable:
    pass


def test_invalid_documents_are_refused_before_the_library(db, monkeypatch):
    coll = db["c"]
    sent = []
    real = db.client._handle.command
    monkeypatch.setattr(db.client._handle, "command", lambda data: (sent.append(data), real(data))[1])
    for bad in ({"_id": 1, "x": Unencodable()}, {"_id": 1, 2: "int key"}, {"_id": 1, "a\x00": 1},
                {"_id": 1, "s": "\udcff"}, {"_id": 1, "big": 2 ** 64}):
        with pytest.raises(gatedb.InvalidDocument):
            coll.insert_one(bad)
    with pytest.raises(gatedb.InvalidDocument):
        coll.find_one({"x": Unencodable()})
    with pytest.raises(gatedb.InvalidDocument):
        coll.update_one({"_id": 1}, {"$set": {"x": Unencodable()}})
    assert sent == []
    monkeypatch.undo()
    assert coll.find_one({"_id": 1}) is None


def test_a_closed_database_raises_instead_of_crashing(tmp_path):
    d = gatedb.Database(tmp_path / "d")
    coll = d["a"]["b"]
    coll.insert_one({"_id": 1})
    cursor = coll.find({}, batch_size=1)
    d.close()
    assert d.closed
    for call in (lambda: coll.find_one({}), lambda: coll.insert_one({"_id": 2}), lambda: d.command({"ping": 1}),
                 lambda: list(cursor), lambda: d.command_json('{"ping": 1}')):
        with pytest.raises(gatedb.InvalidOperation):
            call()
    d.close()  # twice is fine
    cursor.close()


def test_close_waits_for_calls_in_flight(tmp_path):
    d = gatedb.Database(tmp_path / "d")
    coll = d["a"]["b"]
    outcomes = []
    start = threading.Barrier(5)

    def work(t):
        start.wait()
        try:
            for i in range(100000):
                coll.insert_one({"_id": "%d-%d" % (t, i)})
        except gatedb.InvalidOperation:
            outcomes.append("closed")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    start.wait()
    d.close()
    for t in threads:
        t.join()
    assert outcomes == ["closed"] * 4
