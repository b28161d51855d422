"""Snapshot transactions through sessions: all or nothing, conflicts are
transient, with_transaction retries them."""

import pytest

import gatedb


def test_commit_makes_writes_visible_together(db):
    a, b = db["a"], db["b"]
    a.insert_one({"_id": 1, "v": 10})
    b.insert_one({"_id": 1, "v": 0})
    with db.transaction(write_context={"agentId": "mover"}) as s:
        assert s.in_transaction
        a.update_one({"_id": 1}, {"$inc": {"v": -5}}, session=s)
        b.update_one({"_id": 1}, {"$inc": {"v": 5}}, session=s)
        b.insert_one({"_id": 2, "v": 1}, session=s)
        assert b.find_one(1)["v"] == 0 and b.find_one(2) is None  # outside: not yet
        assert b.find_one(1, session=s)["v"] == 5  # inside: its own writes
        assert b.count_documents({}, session=s) == 2
    assert not s.in_transaction
    assert (a.find_one(1)["v"], b.find_one(1)["v"], b.find_one(2)["v"]) == (5, 5, 1)
    events = db.command({"journal": 1, "afterSeq": 0, "limit": 1000})["events"]
    txn_events = [e for e in events if e.get("txn") and e["ns"].startswith(db.name + ".")]
    assert len(txn_events) == 3 and len({str(e["txn"]) for e in txn_events}) == 1


def test_an_exception_aborts(db):
    a = db["a"]
    a.insert_one({"_id": 1, "v": 5})
    with pytest.raises(RuntimeError):
        with db.transaction() as s:
            a.update_one({"_id": 1}, {"$inc": {"v": -5}}, session=s)
            a.insert_one({"_id": 2}, session=s)
            raise RuntimeError("the agent changed its mind")
    assert a.find_one(1)["v"] == 5 and a.find_one(2) is None


def test_pymongo_session_shape_and_fields(db):
    a = db["a"]
    with db.client.start_session() as s:
        lsid = s.session_id["id"]
        assert type(lsid) is db.client.types.Binary and lsid.subtype == 4 and len(lsid) == 16
        with s.start_transaction():
            a.insert_one({"_id": 1}, session=s)
        with s.start_transaction():
            a.insert_one({"_id": 2}, session=s)
            s.abort_transaction()
        assert s._txn_number == 2
        s.start_transaction()
        a.insert_one({"_id": 3}, session=s)
    assert not s.in_transaction  # ending the session aborted the transaction left open
    assert a.find_one(1) is not None and a.find_one(2) is None and a.find_one(3) is None
    with pytest.raises(gatedb.InvalidOperation):
        s.commit_transaction()  # none in progress


def test_write_conflict_between_transactions_is_transient(db):
    c = db["c"]
    c.insert_one({"_id": 1, "n": 0})
    s1 = db.transaction()
    c.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s1)
    with pytest.raises(gatedb.OperationFailure) as e:
        with db.transaction() as s2:  # a second writer of the same document, before the first commits
            c.update_one({"_id": 1}, {"$inc": {"n": 10}}, session=s2)
    assert e.value.has_error_label("TransientTransactionError")
    assert e.value.code_name == "WriteConflict"
    s1.commit_transaction()
    assert c.find_one(1)["n"] == 1


def test_with_transaction_retries_transient_failures(db):
    c = db["c"]
    c.insert_one({"_id": 1, "n": 0})
    calls = []
    blocker = db.transaction()
    c.update_one({"_id": 1}, {"$set": {"lock": 1}}, session=blocker)

    def move(s):
        calls.append(1)
        if len(calls) == 3:
            blocker.commit_transaction()  # the other transaction gets out of the way
        return c.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s).modified_count

    with pytest.raises(gatedb.OperationFailure):
        db.with_transaction(move, max_attempts=1)
    assert db.with_transaction(move) == 1
    assert len(calls) == 3  # one failed with no retry allowed; then a failure, and the retry that committed
    assert c.find_one(1)["n"] == 1 and c.find_one(1)["lock"] == 1
