#!/usr/bin/python3
"""Upstream sync under faults, with the real processes: a hub (`gatedb serve`),
an edge data directory synced by `gatedb sync --once` through a TCP proxy
that loses replies after the hub committed, resets connections, delays
replies and reorders requests (one held back and delivered to the hub after
the sync's retry, on a connection of its own); sync processes and the hub
killed with SIGKILL at random points.

After every round (a faulty sync, then clean ones until nothing moves) the
test checks that no increment was applied twice or lost (the hub's and the
edge's counters equal the increments made on both sides) and that the
checkpoints agree: the hub's gatedb_sync.checkpoints batch is the edge's.

  /usr/bin/python3 tests/sync/sync_faults_test.py --bin build/api/gatedb [--rounds N] [--seed S]
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

try:
    from pymongo import MongoClient
except ImportError as e:  # pragma: no cover
    sys.exit("sync_faults_test.py needs Debian's python3-pymongo (%s)" % e)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients"))
import gatedb_server  # noqa: E402  (the clients' server helper: ready line, clean stop)

NS_DB, NS_COLL = "shop", "counters"
POLICY = '{"mode": "fieldMerge", "mergeIncrements": true}'


class FaultProxy:
    """Forwards whole wire messages between the sync and the hub, one reply
    per request, and injects the fault that is armed."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.lock = threading.Lock()
        self.drop_commit_replies = 0   # replies to commitTransaction to lose (after the hub committed)
        self.reset_after = 0           # reset a connection after this many requests (0: never)
        self.delay_ms = 0              # before each reply
        self.reorder_at = 0            # hold this request back (0: never) ...
        self.reorder_ms = 0            # ... and deliver it this much later, after the retry
        self.late_delivered = 0
        self.requests = 0
        self.dropped = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, drop_commit_replies=0, reset_after=0, delay_ms=0, reorder_at=0, reorder_ms=0):
        with self.lock:
            self.drop_commit_replies = drop_commit_replies
            self.reset_after = reset_after
            self.delay_ms = delay_ms
            self.reorder_at = reorder_at
            self.reorder_ms = reorder_ms
            self.requests = 0

    def _deliver_late(self, req, delay_ms):
        """The held request reaches the hub after whatever the sync sent
        since (its retry included); the reply goes nowhere."""
        time.sleep(delay_ms / 1000.0)
        try:
            server = socket.create_connection(("127.0.0.1", self.target_port), timeout=30)
            try:
                server.sendall(req)
                reply = self._read_message(server)
                if reply is not None:
                    with self.lock:
                        self.late_delivered += 1
                    if os.environ.get("GATEDB_TEST_VERBOSE"):
                        print("  late request %r -> reply %r" % (req[21:120], reply[21:200]))
            finally:
                server.close()
        except OSError:
            pass

    def _accept(self):
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    @staticmethod
    def _read_message(sock):
        header = b""
        while len(header) < 16:
            chunk = sock.recv(16 - len(header))
            if not chunk:
                return None
            header += chunk
        (length,) = struct.unpack("<i", header[:4])
        body = b""
        while len(body) < length - 16:
            chunk = sock.recv(min(1 << 20, length - 16 - len(body)))
            if not chunk:
                return None
            body += chunk
        return header + body

    @staticmethod
    def _reset(sock):
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        sock.close()

    def _serve(self, client):
        try:
            server = socket.create_connection(("127.0.0.1", self.target_port), timeout=30)
        except OSError:
            self._reset(client)
            return
        try:
            while True:
                req = self._read_message(client)
                if req is None:
                    break
                with self.lock:
                    hold = self.reorder_at > 0 and self.requests + 1 >= self.reorder_at
                    if hold:
                        self.reorder_at = 0
                        self.requests += 1
                        delay = self.reorder_ms
                if hold:
                    threading.Thread(target=self._deliver_late, args=(req, delay), daemon=True).start()
                    break  # the sync sees its connection reset, and retries
                server.sendall(req)
                reply = self._read_message(server)
                if reply is None:
                    break
                with self.lock:
                    self.requests += 1
                    lose = b"commitTransaction" in req and self.drop_commit_replies > 0
                    if lose:
                        self.drop_commit_replies -= 1
                        self.dropped += 1
                    reset = self.reset_after > 0 and self.requests >= self.reset_after
                    if reset:
                        self.reset_after = 0
                    delay = self.delay_ms
                if lose or reset:
                    break  # the hub has answered (committed); the sync never hears it
                if delay:
                    time.sleep(delay / 1000.0)
                client.sendall(reply)
        except OSError:
            pass
        finally:
            self._reset(client)
            server.close()


class Harness:
    def __init__(self, gatedb_bin, workdir, seed):
        self.bin = gatedb_bin
        self.dir = workdir
        self.rng = random.Random(seed)
        self.hub_dir = os.path.join(workdir, "hub")
        self.edge_dir = os.path.join(workdir, "edge")
        self.hub = None
        self.proxy = None
        self.edge_incs = 0
        self.hub_incs = 0
        self.expected = {i: 0 for i in range(6)}

    def start_hub(self):
        # A request delivered late can open a transaction on the hub that
        # nobody finishes (as on MongoDB); it holds its locks until the
        # transaction lifetime ends, shortened here from MongoDB's 60 s to 5.
        self.hub = gatedb_server.GatedbServer(extra_args=["--setParameter", "transactionLifetimeLimitSeconds=5"],
                                              data_dir=self.hub_dir).start()
        if self.proxy is None:
            self.proxy = FaultProxy(self.hub.port)
        else:
            self.proxy.target_port = self.hub.port

    def hub_client(self):
        return MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % self.hub.port,
                           serverSelectionTimeoutMS=10000)

    def run_edge(self, command):
        out = subprocess.run([self.bin, "run", "--db", self.edge_dir, "-c", json.dumps(command)],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise AssertionError("gatedb run failed: %s %s" % (out.stdout, out.stderr))
        return out.stdout

    def sync_args(self):
        # directConnection: with replicaSet the driver would follow the hub's own address round the proxy.
        uri = "mongodb://127.0.0.1:%d/?directConnection=true&serverSelectionTimeoutMS=3000" % self.proxy.port
        return [self.bin, "sync", "--db", self.edge_dir, "--upstream", uri, "--ns", "%s.%s" % (NS_DB, NS_COLL),
                "--origin", "edge", "--batch", "4", "--once"]

    def sync(self, must_succeed):
        out = subprocess.run(self.sync_args() + (["--progress"] if os.environ.get("GATEDB_TEST_VERBOSE") else []),
                             capture_output=True, text=True, timeout=120)
        if os.environ.get("GATEDB_TEST_VERBOSE"):
            print("  sync:", out.returncode, out.stdout.strip(), out.stderr.strip())
        if must_succeed and out.returncode != 0:
            raise AssertionError("sync failed: %s %s\n--- hub ---\n%s" % (out.stdout, out.stderr, self.hub.stderr()))
        if out.returncode == 0:
            return json.loads(out.stdout.strip().splitlines()[-1])
        return None

    def sync_killed(self):
        p = subprocess.Popen(self.sync_args(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(self.rng.uniform(0.0, 0.6))
        p.kill()
        p.wait()

    def settle(self):
        """Clean syncs until one moves nothing.  A run may fail while an
        abandoned hub transaction (a late request's) still holds locks: the
        sync must say so (exit non-zero), not report success, and the next
        run after the transaction's lifetime goes through."""
        self.proxy.arm()
        failures = 0
        for _ in range(12):
            r = self.sync(False)
            if os.environ.get("GATEDB_TEST_VERBOSE"):
                print("  settle:", r)
            if r is None:
                failures += 1
                if failures > 8:
                    self.sync(True)  # raises, with the sync's error
                time.sleep(1.0)
                continue
            if r["pushed"] == 0 and r["pulled"] == 0 and r["merged"] == 0:
                # A run that succeeds has pushed everything: nothing is left pending.
                st = json.loads(self.run_edge({"syncStatus": 1}))
                pending = [n["push"]["pendingDocuments"] for n in st["namespaces"]]
                if any(pending):
                    raise AssertionError("sync reported success with documents still pending: %s" % st)
                return
        raise AssertionError("sync did not settle")

    def edge_counts(self):
        out = self.run_edge({"find": NS_COLL, "$db": NS_DB, "sort": {"_id": 1}})
        return {d["_id"]: d["n"] for d in json.loads(out)["cursor"]["firstBatch"]}

    def check(self, round_no):
        c = self.hub_client()
        try:
            hub = {d["_id"]: d["n"] for d in c[NS_DB][NS_COLL].find({}, sort=[("_id", 1)])}
            ck = c["gatedb_sync"]["checkpoints"].find_one({"_id": "edge|%s.%s" % (NS_DB, NS_COLL)})
        finally:
            c.close()
        edge = self.edge_counts()
        want = self.edge_incs + self.hub_incs
        total_hub = sum(hub.values())
        total_edge = sum(edge.values())
        if hub != edge or hub != self.expected:
            raise AssertionError("round %d: hub %s, edge %s, want %s" % (round_no, hub, edge, self.expected))
        local = json.loads(self.run_edge({"find": "checkpoints", "filter": {"_id": "%s.%s" % (NS_DB, NS_COLL)},
                                          "$db": "__gatedb_sync"}))["cursor"]["firstBatch"]
        local_batch = local[0].get("batch", 0) if local else 0
        hub_batch = ck["batch"] if ck else 0
        if local_batch != hub_batch:
            raise AssertionError("round %d: checkpoints disagree: edge batch %s, hub batch %s" %
                                 (round_no, local_batch, hub_batch))
        print("round %d: total %d, %d documents, batch %s: ok" % (round_no, want, len(hub), hub_batch))

    def local_increments(self, n):
        ups = []
        for _ in range(n):
            i = self.rng.randrange(6)
            self.expected[i] += 1
            ups.append({"q": {"_id": i}, "u": {"$inc": {"n": 1}}})
        self.run_edge({"update": NS_COLL, "updates": ups, "$db": NS_DB})
        self.edge_incs += n

    def hub_increments(self, n):
        if os.environ.get("GATEDB_TEST_VERBOSE"):
            print("  before hub increments: edge", self.edge_counts())
        c = self.hub_client()
        try:
            for _ in range(n):
                i = self.rng.randrange(6)
                self.expected[i] += 1
                c[NS_DB][NS_COLL].update_one({"_id": i}, {"$inc": {"n": 1}})
        finally:
            c.close()
        self.hub_incs += n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("GATEDB_SYNC_FAULT_SEED", "1")))
    a = ap.parse_args()
    gatedb_server.set_bin(a.bin)
    work = tempfile.mkdtemp(prefix="gatedb-sync-faults-")
    h = Harness(os.path.abspath(a.bin), work, a.seed)
    try:
        h.start_hub()
        h.run_edge({"create": NS_COLL, "conflictPolicy": json.loads(POLICY), "$db": NS_DB})
        c = h.hub_client()
        c[NS_DB].command({"create": NS_COLL, "conflictPolicy": json.loads(POLICY)})
        c.close()
        h.run_edge({"insert": NS_COLL, "documents": [{"_id": i, "n": 0} for i in range(6)], "$db": NS_DB})
        h.settle()
        h.check(0)
        faults = ["lost_commit_reply", "reset", "delay", "reorder", "kill_sync", "kill_hub"]
        if os.environ.get("GATEDB_SYNC_FAULTS"):
            faults = os.environ["GATEDB_SYNC_FAULTS"].split(",")
        for r in range(1, a.rounds + 1):
            fault = faults[(r - 1) % len(faults)] if r <= len(faults) else h.rng.choice(faults)
            h.local_increments(h.rng.randrange(3, 12))
            h.hub_increments(h.rng.randrange(0, 5))
            print("round %d: %s" % (r, fault))
            if fault == "lost_commit_reply":
                h.proxy.arm(drop_commit_replies=2)  # the first try and libmongoc's retry of it
                h.sync(False)
            elif fault == "reset":
                h.proxy.arm(reset_after=h.rng.randrange(2, 12))
                h.sync(False)
            elif fault == "delay":
                h.proxy.arm(delay_ms=h.rng.randrange(5, 40))
                h.sync(False)
            elif fault == "reorder":
                h.proxy.arm(reorder_at=h.rng.randrange(2, 14), reorder_ms=h.rng.randrange(100, 600))
                h.sync(False)
            elif fault == "kill_sync":
                h.proxy.arm()
                h.sync_killed()
            elif fault == "kill_hub":
                h.proxy.arm()
                p = subprocess.Popen(h.sync_args(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(h.rng.uniform(0.0, 0.5))
                h.hub.kill()
                p.wait(timeout=120)
                h.start_hub()
            h.settle()
            if fault == "reorder":
                time.sleep(0.7)  # the held request reached the hub, perhaps amid the settling syncs
            h.check(r)
        print("dropped %d commit replies in all; %d requests delivered late" % (h.proxy.dropped, h.proxy.late_delivered))
        h.hub.stop(signal.SIGTERM)
        h.hub = None
        return 0
    finally:
        if h.hub is not None:
            h.hub.kill()
        if h.proxy is not None:
            h.proxy.closing = True
            h.proxy.listener.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
