"""Threads share one Database: the ctypes calls release the GIL, and the
version gate keeps read-modify-write loops from losing updates."""

import threading
import time

import gatedb


def _run_threads(n, target):
    errors = []

    def guarded(i):
        try:
            target(i)
        except Exception as e:  # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_eight_threads_of_inserts_all_arrive(db):
    coll = db["many"]
    per_thread = 250
    _run_threads(8, lambda t: [coll.insert_one({"_id": "%d-%d" % (t, i), "t": t}) for i in range(per_thread)])
    assert coll.count_documents({}) == 8 * per_thread
    for t in range(8):
        assert coll.count_documents({"t": t}) == per_thread
    assert coll.find_one("7-249") == {"_id": "7-249", "t": 7, "version": 0}


def test_version_gate_helper_under_threads_loses_no_update(db):
    coll = db["counter"]
    coll.insert_one({"_id": "c", "n": 0})
    threads, each = 4, 100
    writes = []

    def work(i):
        for _ in range(each):
            # A read-modify-write ($set n + 1) would lose updates without the gate.
            r = coll.with_version_gate({"_id": "c"}, lambda d: {"$set": {"n": d["n"] + 1}},
                                       write_context={"agentId": "t%d" % i}, max_attempts=1000)
            writes.append(r.modified_count)

    _run_threads(threads, work)
    doc = coll.find_one("c")
    assert sum(writes) == threads * each
    assert doc["n"] == threads * each
    assert doc["version"] == threads * each  # one version per successful write
    stats = db.command({"conflictStats": "counter"})
    assert stats["gatedWrites"] >= threads * each


def test_a_thread_waiting_in_the_library_does_not_hold_the_gil(db):
    # A transaction holds a document's lock; another thread's write waits on
    # it inside gatedb_command (lock_timeout_ms: 1 s by default).  Were the
    # GIL held during the call, this thread could not run until that wait
    # ended; it does, and finishes its own writes while the other still waits.
    coll = db["locks"]
    coll.insert_many([{"_id": 1}, {"_id": 2}])
    holder = db.transaction()
    coll.update_one({"_id": 1}, {"$set": {"held": True}}, session=holder)
    done = threading.Event()
    outcome = []

    def blocked():
        try:
            coll.update_one({"_id": 1}, {"$set": {"other": True}})
            outcome.append("written")
        except gatedb.OperationFailure as e:
            outcome.append(e.code_name)
        done.set()

    t = threading.Thread(target=blocked)
    t.start()
    time.sleep(0.3)
    for _ in range(20):
        coll.update_one({"_id": 2}, {"$inc": {"n": 1}})
    assert not done.is_set()
    assert coll.find_one(2)["n"] == 20
    holder.commit_transaction()
    t.join()
    assert outcome == ["written"] and coll.find_one(1)["other"] is True
