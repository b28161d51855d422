"""gatedb's own write arguments: basis_version, write_context (and the
idempotency it keys), the MongoDB version idiom, and with_version_gate."""

import datetime
import struct

import pytest

import gatedb


def test_basis_version_gates_each_write(db):
    coll = db["orders"]
    coll.insert_one({"_id": 1, "n": 0})
    assert coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, basis_version=0).modified_count == 1
    assert coll.replace_one({"_id": 1}, {"n": 10}, basis_version=1).modified_count == 1
    with pytest.raises(gatedb.VersionConflictError):
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, basis_version=1)
    for bad in (True, 1.0, "2"):
        with pytest.raises(TypeError):
            coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, basis_version=bad)
    with pytest.raises(gatedb.InvalidDocument):
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, basis_version=2 ** 63)
    assert coll.delete_one({"_id": 1}, basis_version=db.client.types.Int64(2)).deleted_count == 1


def test_the_gated_update_fast_path_sends_the_general_paths_bytes(db):
    coll = db["fast"]
    coll.insert_one({"_id": 1, "n": 0})
    handle, sent = coll._handle, []
    real = handle.command

    def record(data):
        sent.append(data)
        return real(data)

    handle.command = record
    try:
        fast = coll.update_one({"_id": 1}, {"$inc": {"n": 1}, "$set": {"s": "x"}}, basis_version=0)
        general = coll._update({"_id": 1}, {"$inc": {"n": 1}, "$set": {"s": "x"}}, False, False, 1, None, None, {})
    finally:
        del handle.command
    assert fast.modified_count == 1 and general.modified_count == 1
    assert len(sent) == 2 and sent[0] == sent[1].replace(struct.pack("<q", 1), struct.pack("<q", 0))
    assert db.client.codec.decode(sent[0])["updates"][0]["basisVersion"] == 0
    with pytest.raises(gatedb.InvalidDocument):  # the codec's refusals, unchanged
        coll.update_one({"_id": 1}, {"$set": {"f": object()}}, basis_version=2)
    with pytest.raises(ValueError):  # a replacement given to update_one, as pymongo refuses it
        coll.update_one({"_id": 1}, {"n": 5}, basis_version=2)
    with pytest.raises(gatedb.VersionConflictError):
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, basis_version=0)
    assert coll.find_one(1)["n"] == 2


def test_the_mongodb_idiom_reports_version_conflicts(db):
    coll = db["orders"]
    coll.insert_one({"_id": 1, "n": 0})
    assert coll.update_one({"_id": 1, "version": 0}, {"$inc": {"n": 1, "version": 1}}).modified_count == 1
    assert coll.find_one(1)["version"] == 1  # $inc: {version: 1} is the one step, never two
    stale = coll.update_one({"_id": 1, "version": 0}, {"$inc": {"n": 1}})
    assert stale.matched_count == 0
    assert stale.version_conflicts == [{"index": 0, "_id": 1, "expectedVersion": 0, "currentVersion": 1}]
    gone = coll.delete_one({"_id": 1, "version": 0})
    assert gone.deleted_count == 0 and gone.version_conflicts[0]["currentVersion"] == 1


def test_write_context_is_recorded_and_keys_idempotency(db):
    coll = db["orders"]
    coll.insert_one({"_id": 1, "n": 0}, write_context={"agentId": "creator"})
    read_at = datetime.datetime.now(datetime.timezone.utc)
    wc = gatedb.WriteContext(agent_id="a", task_id="task-7", write_seq=1, source="test", read_at=read_at)
    first = coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, write_context=wc)
    again = coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, write_context=wc)
    assert not first.replayed and again.replayed and again.modified_count == 1
    assert coll.find_one(1)["n"] == 1  # ran once
    with pytest.raises(gatedb.OperationFailure) as e:  # the same key for another command
        coll.update_one({"_id": 1}, {"$inc": {"n": 2}}, write_context=wc)
    assert e.value.code_name == "IdempotencyKeyReuse"
    events = db.command({"journal": "orders", "afterSeq": 0, "limit": 100})["events"]
    mine = [ev for ev in events if ev["ns"] == db.name + ".orders"]
    assert [ev["op"] for ev in mine] == ["insert", "update"]
    assert mine[0]["writeContext"]["agentId"] == "creator"
    assert mine[1]["writeContext"]["taskId"] == "task-7" and mine[1]["writeContext"]["source"] == "test"
    status = db.command({"idempotencyStatus": "task-7"})
    assert [w["writeSeq"] for w in status["writes"]] == [1]


def test_stale_read_at_is_refused(db):
    coll = db.create_collection("fresh", maxBasisAgeMs=1000)
    coll.insert_one({"_id": 1, "n": 0})
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    with pytest.raises(gatedb.WriteError) as e:
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, basis_version=0, write_context={"readAt": old})
    assert e.value.code_name == "StaleBasis"


def test_with_version_gate_decides_again_on_the_current_document(db):
    coll = db["k"]
    coll.insert_one({"_id": "k", "n": 0})
    seen = []

    def decide(doc):
        seen.append(dict(doc))
        if len(seen) == 1:  # another writer gets in between our read and our write
            coll.update_one({"_id": "k"}, {"$inc": {"n": 100}})
        return {"$inc": {"n": 1}}

    reads = []
    real_find_one = coll.find_one
    coll.find_one = lambda *a, **k: (reads.append(a), real_find_one(*a, **k))[1]
    r = coll.with_version_gate({"_id": "k"}, decide, write_context={"agentId": "g"})
    del coll.find_one
    assert r.modified_count == 1 and r.attempts == 2
    assert [d["version"] for d in seen] == [0, 1] and seen[1]["n"] == 100  # errInfo.current, not a reread
    assert len(reads) == 1
    assert coll.find_one("k") == {"_id": "k", "n": 101, "version": 2}


def test_with_version_gate_replacement_decline_and_missing(db):
    coll = db["k"]
    coll.insert_one({"_id": 1, "n": 0, "tag": "x"})
    r = coll.with_version_gate({"tag": "x"}, lambda d: {"n": d["n"] + 5, "tag": "y"})
    assert r.modified_count == 1 and coll.find_one(1) == {"_id": 1, "n": 5, "tag": "y", "version": 1}
    assert coll.with_version_gate({"_id": 1}, lambda d: None) is None
    assert coll.find_one(1)["version"] == 1
    with pytest.raises(gatedb.OperationFailure) as e:
        coll.with_version_gate({"_id": "missing"}, lambda d: {"$set": {"a": 1}})
    assert e.value.code == 47

    def delete_first(doc):
        coll.delete_one({"_id": doc["_id"]})
        return {"$set": {"n": -1}}

    with pytest.raises(gatedb.WriteError) as e:  # the library: basisVersion names a document that is gone
        coll.with_version_gate({"_id": 1}, delete_first)
    assert e.value.code == 47 and e.value.code_name == "NoMatchingDocument"
    assert coll.find_one(1) is None


def test_with_version_gate_gives_up_after_max_attempts(db):
    coll = db["k"]
    coll.insert_one({"_id": 1, "n": 0})

    def always_overtaken(doc):
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}})
        return {"$set": {"mine": True}}

    with pytest.raises(gatedb.VersionConflictError):
        coll.with_version_gate({"_id": 1}, always_overtaken, max_attempts=3)
    assert coll.find_one(1)["n"] == 3 and "mine" not in coll.find_one(1)


def test_with_version_gate_honours_the_version_field(db):
    c = db.create_collection("custom", versionField="rev")
    c.insert_one({"_id": 1, "n": 0})
    c.with_version_gate({"_id": 1}, lambda d: {"$inc": {"n": 1}})
    c.with_version_gate({"_id": 1}, lambda d: {"$inc": {"n": 1}})
    assert c.find_one(1) == {"_id": 1, "n": 2, "rev": 2}
    assert c.version_field() == "rev" and db["plain"].version_field() == "version"
