#!/usr/bin/python3
"""kill -9 of `gatedb serve` loses nothing a client was told was written.

Writer threads (pymongo, Debian's python3-pymongo) insert documents and
increment counters through a real server; each records what the server
acknowledged. The server is SIGKILLed at a random moment, restarted on the
same data directory, and every acknowledged insert must be there, every
counter at least its acknowledged increments and at most those plus the one
in flight, its version equal to its value (each increment is one version
step). Several rounds; each uses a fresh seed printed for reproduction.

Usage: serve_kill9_test.py GATEDB_BINARY [--rounds N] [--seed S]
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pymongo
from pymongo.errors import PyMongoError

READY = re.compile(r"^listening on 127\.0\.0\.1:(\d+)$")


def start(binary, data_dir):
    proc = subprocess.Popen([binary, "serve", "--db", data_dir, "--port", "0", "--quiet"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 30
    line = proc.stdout.readline().decode().strip()
    m = READY.match(line)
    if not m or time.time() > deadline:
        proc.kill()
        raise AssertionError("no ready line, got %r; stderr: %s" % (line, proc.stderr.read().decode()[-2000:]))
    return proc, int(m.group(1))


def client(port):
    return pymongo.MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % port,
                               serverSelectionTimeoutMS=2000, socketTimeoutMS=5000, retryWrites=False)


def writer(port, wid, stop, acked_ids, acked_incs, counters):
    c = client(port)
    coll = c.k9.docs
    ctr = c.k9.counters
    n = 0
    try:
        while not stop.is_set():
            doc_id = "w%d-%d" % (wid, n)
            try:
                coll.insert_one({"_id": doc_id, "w": wid, "n": n})
            except PyMongoError:
                return  # the server died: this insert is in flight, not acknowledged
            acked_ids.append(doc_id)
            n += 1
            key = "c%d" % (n % counters)
            try:
                r = ctr.update_one({"_id": key}, {"$inc": {"v": 1}}, upsert=True)
            except PyMongoError:
                acked_incs.setdefault(key, [0, 0])[1] += 1  # in flight
                return
            if r.matched_count == 1 or r.upserted_id is not None:
                acked_incs.setdefault(key, [0, 0])[0] += 1
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print("serve_kill9_test: seed %d (rerun with --seed %d)" % (args.seed, args.seed))
    data_dir = tempfile.mkdtemp(prefix="gatedb-kill9-")
    acked_ids = []
    acked_incs = {}
    failures = []
    try:
        for rnd in range(args.rounds):
            proc, port = start(args.binary, data_dir)
            stop = threading.Event()
            per_round_incs = {}
            threads = [threading.Thread(target=writer, args=(port, w + rnd * 10, stop, acked_ids, per_round_incs, 4))
                       for w in range(4)]
            for t in threads:
                t.start()
            time.sleep(0.3 + rng.random() * 1.2)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            stop.set()
            for t in threads:
                t.join(30)
            for key, (ok, inflight) in per_round_incs.items():
                prev = acked_incs.setdefault(key, [0, 0])
                prev[0] += ok
                prev[1] += inflight
            # Restart on the same directory: everything acknowledged is there.
            proc, port = start(args.binary, data_dir)
            c = client(port)
            present = set(d["_id"] for d in c.k9.docs.find({}, {"_id": 1}))
            missing = [i for i in acked_ids if i not in present]
            if missing:
                failures.append("round %d: %d acknowledged inserts missing, e.g. %s" % (rnd, len(missing), missing[:5]))
            for key, (ok, inflight) in acked_incs.items():
                d = c.k9.counters.find_one({"_id": key})
                v = d["v"] if d else 0
                if not ok <= v <= ok + inflight:
                    failures.append("round %d: counter %s is %d, acknowledged %d (+%d in flight)" %
                                    (rnd, key, v, ok, inflight))
                if d and d["version"] != v - 1:
                    failures.append("round %d: counter %s has version %d for value %d" % (rnd, key, d["version"], v))
                # What the counter holds now is the acknowledged base for the next round.
                acked_incs[key] = [v, 0]
            print("round %d: %d acknowledged inserts all present, %d counters consistent" %
                  (rnd, len(acked_ids), len(acked_incs)))
            c.close()
            proc.send_signal(signal.SIGTERM)
            if proc.wait(30) != 0:
                failures.append("round %d: the restarted server did not exit 0 on SIGTERM" % rnd)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    if failures:
        print("FAILED (seed %d):\n  %s" % (args.seed, "\n  ".join(failures)))
        return 1
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
