#!/usr/bin/env python3
"""The agent demo in Python (``gatedb demo``, written with the package).

Simulated agents (threads) work on a few shared order documents: each
reads an order with its version, thinks a random few milliseconds, and
adds to the order's total through the version gate
(Collection.with_version_gate: basisVersion; on a VersionConflict it
decides again on the conflict's current document).  At the end every
order's total must equal the sum of the increments the agents were told
were written, and its version the number of those writes: no update lost,
none applied twice.

    GATEDB_LIBRARY=build/api/libgatedb.so PYTHONPATH=api/python \\
        python3 api/python/examples/agent_demo.py --agents 8 --seconds 3
"""

import argparse
import os
import random
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import gatedb  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--db", help="data directory (default: a temporary one, removed at the end); "
                                "the demo uses demo.orders")
    p.add_argument("--agents", type=int, default=8, help="agent threads (default 8)")
    p.add_argument("--docs", type=int, default=4, help="shared order documents (default 4)")
    p.add_argument("--seconds", type=float, default=3.0, help="how long the agents work (default 3)")
    p.add_argument("--think-ms", type=float, default=5.0, help="longest think time between read and write (default 5)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    a = p.parse_args(argv)
    if a.agents < 1 or a.docs < 1 or a.seconds <= 0 or a.think_ms < 0:
        p.error("--agents and --docs need at least 1, --seconds more than 0, --think-ms at least 0")
    return a


class Tally:
    """What the agents were told: per order, the committed increments and writes."""

    def __init__(self, ids):
        self.lock = threading.Lock()
        self.model = {i: [0, 0] for i in ids}
        self.attempts = self.committed = self.errors = 0

    def record(self, order_id, amount, attempts, committed):
        with self.lock:
            self.attempts += attempts
            if committed:
                self.committed += 1
                self.model[order_id][0] += amount
                self.model[order_id][1] += 1

    def error(self):
        with self.lock:
            self.errors += 1


def agent(orders, ids, tally, stop, think_ms, seed, n):
    rng = random.Random(seed + n * 7919)
    agent_id = "agent-%d" % n
    task = 0
    while not stop.is_set():
        order_id = rng.choice(ids)
        amount = rng.randint(1, 100)
        task += 1

        def decide(doc):
            time.sleep(rng.random() * think_ms / 1000.0)  # the agent thinks between its read and its write
            return {"$inc": {"total": amount}, "$set": {"lastAgent": agent_id}}

        try:
            r = orders.with_version_gate({"_id": order_id}, decide, max_attempts=1000, write_context={
                "agentId": agent_id, "taskId": "%s-task-%d" % (agent_id, task), "source": "demo"})
        except gatedb.PyMongoError as e:
            print("%s: %s" % (agent_id, e), file=sys.stderr)
            tally.error()
            return
        tally.record(order_id, amount, r.attempts, r.modified_count == 1)


def main(argv=None):
    a = parse_args(argv)
    if a.db:
        return run(a, a.db, a.db)
    with tempfile.TemporaryDirectory(prefix="gatedb-demo-py-") as path:
        return run(a, path, "a temporary directory")


def run(a, path, where):
    seed = a.seed if a.seed is not None else time.time_ns()
    with gatedb.Database(path) as db:
        orders = db["demo"]["orders"]
        orders.drop()
        ids = ["order_%d" % (1001 + d) for d in range(a.docs)]
        orders.insert_many([{"_id": i, "status": "open", "total": gatedb.Int64(0), "lastAgent": ""} for i in ids])
        journal_start = db.command({"journal": 1, "limit": 1, "$db": "demo"})["lastSeq"]

        print("gatedb demo (Python): %d agents, %d shared orders, %.1f s, think 0-%g ms, demo.orders in %s"
              % (a.agents, a.docs, a.seconds, a.think_ms, where))
        print("agents write through the version gate: basisVersion, decide again on VersionConflict")
        tally = Tally(ids)
        stop = threading.Event()
        threads = [threading.Thread(target=agent, args=(orders, ids, tally, stop, a.think_ms, seed, n))
                   for n in range(a.agents)]
        start = time.monotonic()
        for t in threads:
            t.start()
        try:
            while True:
                stop.wait(min(1.0, max(0.0, a.seconds - (time.monotonic() - start))))
                elapsed = time.monotonic() - start
                print("  %5.1f s  attempts %d  committed %d  stale stopped %d"
                      % (elapsed, tally.attempts, tally.committed, tally.attempts - tally.committed), flush=True)
                if elapsed >= a.seconds:
                    break
        finally:  # also on Ctrl-C: the agents stop before the database closes
            stop.set()
            for t in threads:
                t.join()
        elapsed = time.monotonic() - start

        ok = tally.errors == 0
        version_sum = 0
        for order_id in ids:
            doc = orders.find_one({"_id": order_id})
            total, writes = tally.model[order_id]
            if doc is None or doc["total"] != total or doc["version"] != writes:
                ok = False
                print("  MISMATCH %s: %r, expected total %d and version %d" % (order_id, doc, total, writes))
            else:
                version_sum += doc["version"]
        stats = db["demo"].command({"conflictStats": "orders", "afterSeq": journal_start})
        holds = ok and version_sum == tally.committed
        print()
        print("agents               %d" % a.agents)
        print("orders               %d" % a.docs)
        print("write attempts       %d" % tally.attempts)
        print("committed writes     %d" % tally.committed)
        print("stale writes stopped %d (VersionConflict, then decided again)" % (tally.attempts - tally.committed))
        print("conflict rate        %.1f%% of %d gated writes (conflictStats, from the journal)"
              % (100.0 * stats["conflictRate"], stats["gatedWrites"]))
        print("retries              %d" % (tally.attempts - tally.committed))
        print("errors               %d" % tally.errors)
        print("throughput           %.0f committed writes/s, %.0f attempts/s"
              % (tally.committed / elapsed, tally.attempts / elapsed))
        print("invariant            %s: sum of versions %d == committed writes %d; totals == committed increments"
              % ("HOLDS" if holds else "VIOLATED", version_sum, tally.committed))
        return 0 if holds else 2


if __name__ == "__main__":
    sys.exit(main())
