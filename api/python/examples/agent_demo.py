#!/usr/bin/env python3
"""The agent demo in Python: agent threads read shared orders, think, and
add to their totals through the version gate (Collection.with_version_gate).
At the end every order's total must equal the sum of the increments its
agents were told were written: no update lost, none applied twice.

    GATEDB_LIBRARY=build/api/libgatedb.so PYTHONPATH=api/python \\
        python3 api/python/examples/agent_demo.py --agents 4 --seconds 3
"""

import argparse
import collections
import random
import sys
import tempfile
import threading
import time

import gatedb


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", help="data directory (default: a new temporary one)")
    p.add_argument("--agents", type=int, default=4)
    p.add_argument("--docs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--think-ms", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    path = a.db or tempfile.mkdtemp(prefix="gatedb-demo-py-")

    with gatedb.Database(path) as db:
        orders = db["demo"]["orders"]
        orders.drop()
        orders.insert_many([{"_id": "order_%d" % i, "total": 0} for i in range(a.docs)])
        added = collections.Counter()
        conflicts = collections.Counter()
        lock = threading.Lock()
        deadline = time.monotonic() + a.seconds

        def agent(n):
            rng = random.Random(a.seed * 1000 + n)
            name = "agent-%d" % n
            while time.monotonic() < deadline:
                oid = "order_%d" % rng.randrange(a.docs)
                amount = rng.randint(1, 9)
                attempts = []

                def decide(doc):
                    attempts.append(doc["version"])
                    time.sleep(a.think_ms / 1000.0 * rng.random())  # thinking, between read and write
                    return {"$inc": {"total": amount}}

                orders.with_version_gate({"_id": oid}, decide, write_context={"agentId": name, "source": "demo"})
                with lock:
                    added[oid] += amount
                    conflicts[name] += len(attempts) - 1

        threads = [threading.Thread(target=agent, args=(n,)) for n in range(a.agents)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        ok = True
        for doc in orders.find({}, sort=[("_id", 1)]):
            good = doc["total"] == added[doc["_id"]]
            ok &= good
            print("%-10s total %6d  expected %6d  version %5d  %s" % (
                doc["_id"], doc["total"], added[doc["_id"]], doc["version"], "ok" if good else "LOST UPDATE"))
        stats = db["demo"].command({"conflictStats": "orders"})
        print("gated writes %d, conflicts %d (each decided again on the current document)" % (
            stats["gatedWrites"], stats["conflicts"]))
        print("data directory:", path)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
