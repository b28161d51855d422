#!/usr/bin/env python3
"""The Python package's cost over the library, in one process.

For each codec ("pure", and "pymongo" when pymongo's bson is importable),
on a collection of 1,000 small documents:
  find_one        coll.find_one({"_id": k})
  gated update    coll.update_one({"_id": k}, {"$inc": ...}, basis_version=v)
  raw find/update the very bytes the package sent for those calls, sent
                  straight through ctypes' gatedb_command with no conversion
                  (pre-encoded; one command per basis version for the update):
                  the library's own cost plus the bare ctypes call and copy.
  python only     the same package calls on a stand-in handle that answers
                  the recorded reply at once: the package's own work, without
                  the library in between (whose caches it shares).
Cases run in interleaved repetitions and the medians are reported (single
runs on this machine move by 20%).  Overhead = package - raw, in
microseconds and as a ratio; the budget is 10 us per call.

    GATEDB_LIBRARY=build/api/libgatedb.so /usr/bin/python3 bench/python/bench_gatedb.py [--calls 20000] [--reps 7]
"""

import argparse
import ctypes
import os
import statistics
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "api", "python"))

import gatedb  # noqa: E402
from gatedb import codec as gcodec  # noqa: E402

BUDGET_US = 10.0
FIND_KEY = "doc00042"
UPDATE_KEY = "doc00007"
UPDATE = {"$inc": {"score": 1}}


def captured(db, call):
    """The command bytes the package sends for call(), and the reply it got."""
    handle = db._handle
    sent = []
    real = handle.command

    def record(data):
        rc, reply = real(data)
        sent.append((data, reply))
        return rc, reply

    handle.command = record
    try:
        call()
    finally:
        del handle.command
    assert len(sent) == 1, "the call sent %d commands" % len(sent)
    return sent[0]


class CannedHandle:
    """Answers every command with one recorded reply, at once."""

    def __init__(self, reply):
        self.reply = reply

    def command(self, data):
        return 0, self.reply


class Bench:
    """One codec's database and its cases."""

    def __init__(self, codec, calls):
        self.calls = calls
        self.dir = tempfile.TemporaryDirectory(prefix="gatedb-pybench-")
        self.db = gatedb.Database(self.dir.name, codec=codec)
        self.coll = self.db["bench"]["docs"]
        self.coll.insert_many([{"_id": "doc%05d" % i, "status": "open", "score": i * 0.5,
                                "owner": "agent-%d" % (i % 7)} for i in range(1000)])
        self.version = 0
        self.find_bytes, find_reply = captured(self.db, lambda: self.coll.find_one({"_id": FIND_KEY}))
        self.update_template, update_reply = captured(self.db, self._one_update)
        self.basis_at = self.update_template.index(b"\x12basisVersion\x00") + len(b"\x12basisVersion\x00")
        self.canned_find = self._canned(find_reply)
        self.canned_update = self._canned(update_reply)

    def _canned(self, reply):
        """The collection again, on a CannedHandle that answers reply."""
        coll = self.db["bench"]["docs"]
        coll._handle = CannedHandle(reply)
        return coll

    def _one_update(self):
        self.coll.update_one({"_id": UPDATE_KEY}, UPDATE, basis_version=self.version)
        self.version += 1

    def _update_bytes(self, v):
        t = self.update_template
        return t[:self.basis_at] + struct.pack("<q", v) + t[self.basis_at + 8:]

    def cases(self):
        return {"find_one": self.find_one, "raw find": self.raw_find, "gated update": self.update,
                "raw update": self.raw_update, "find_one python": self.find_one_python,
                "gated update python": self.update_python}

    def find_one(self, coll=None):
        find_one, flt, n = (coll or self.coll).find_one, {"_id": FIND_KEY}, range(self.calls)
        t0 = time.perf_counter_ns()
        for _ in n:
            find_one(flt)
        return time.perf_counter_ns() - t0

    def find_one_python(self):
        return self.find_one(self.canned_find)

    def update_python(self):
        update_one, flt = self.canned_update.update_one, {"_id": UPDATE_KEY}
        t0 = time.perf_counter_ns()
        for v in range(self.calls):
            update_one(flt, UPDATE, basis_version=v)
        return time.perf_counter_ns() - t0

    def update(self):
        update_one, flt, v0 = self.coll.update_one, {"_id": UPDATE_KEY}, self.version
        t0 = time.perf_counter_ns()
        for v in range(v0, v0 + self.calls):
            update_one(flt, UPDATE, basis_version=v)
        elapsed = time.perf_counter_ns() - t0
        self.version = v0 + self.calls
        return elapsed

    def _raw_parts(self):
        h = self.db._handle
        reply, n = ctypes.c_void_p(), ctypes.c_size_t()
        return h._command, h._ptr, reply, n, ctypes.byref(reply), ctypes.byref(n), ctypes.string_at, h._free

    def raw_find(self):
        command, ptr, reply, n, p_reply, p_n, string_at, free = self._raw_parts()
        data, size = self.find_bytes, len(self.find_bytes)
        t0 = time.perf_counter_ns()
        for _ in range(self.calls):
            command(ptr, data, size, p_reply, p_n, None)
            string_at(reply.value, n.value)
            free(reply)
        return time.perf_counter_ns() - t0

    def raw_update(self):
        command, ptr, reply, n, p_reply, p_n, string_at, free = self._raw_parts()
        v0 = self.version
        cmds = [self._update_bytes(v) for v in range(v0, v0 + self.calls)]  # pre-encoded, outside the clock
        t0 = time.perf_counter_ns()
        for data in cmds:
            command(ptr, data, len(data), p_reply, p_n, None)
            string_at(reply.value, n.value)
            free(reply)
        elapsed = time.perf_counter_ns() - t0
        self.version = v0 + self.calls
        return elapsed

    def check(self):
        """Every gated write went through: the version counts them all."""
        doc = self.coll.find_one({"_id": UPDATE_KEY})
        assert doc["version"] == self.version, (doc, self.version)


def pieces(bench, calls):
    """What the pure parts of a find_one cost alone (no library call)."""
    db = bench.db
    codec = db.codec
    rc, reply = db._handle.command(bench.find_bytes)
    flt = {"_id": FIND_KEY}
    out = {}
    for name, fn in (("encode filter", lambda: codec.encode(flt)),
                     ("decode the document", lambda: codec.first_batch_document(reply)),
                     ("decode the whole reply", lambda: codec.decode(reply))):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        out[name] = (time.perf_counter_ns() - t0) / calls / 1000
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20000, help="calls per case and repetition (default 20000)")
    p.add_argument("--reps", type=int, default=7, help="interleaved repetitions (default 7)")
    p.add_argument("--codecs", default=None, help="comma-separated: pure,pymongo (default: those available)")
    a = p.parse_args()
    codecs = a.codecs.split(",") if a.codecs else ["pure"] + (["pymongo"] if gcodec.pymongo_bson() else [])
    benches = {c: Bench(c, a.calls) for c in codecs}
    samples = {(c, k): [] for c, b in benches.items() for k in b.cases()}
    for b in benches.values():  # warm up
        for fn in b.cases().values():
            fn()
    for _ in range(a.reps):
        for c, b in benches.items():
            for k, fn in b.cases().items():
                samples[(c, k)].append(fn() / a.calls / 1000.0)
    for b in benches.values():
        b.check()

    med = {key: statistics.median(v) for key, v in samples.items()}
    spread = {key: (min(v), max(v)) for key, v in samples.items()}
    print("libgatedb %s, python %s, %d calls x %d interleaved repetitions, medians (min-max)"
          % (gatedb.library_version(), sys.version.split()[0], a.calls, a.reps))
    if gcodec.pymongo_bson() is not None:
        print("pymongo's bson C extension: %s" % ("yes" if gcodec.pymongo_bson(require_c=True) else "no"))
    print()
    print("%-8s %-13s %18s %18s %12s %6s %15s" % ("codec", "case", "raw us", "package us", "overhead us", "ratio",
                                                   "python only us"))
    worst = 0.0
    for c in benches:
        for case, raw in (("find_one", "raw find"), ("gated update", "raw update")):
            r, pk, py = med[(c, raw)], med[(c, case)], med[(c, case + " python")]
            over = pk - r
            worst = max(worst, over) if c == "pure" else worst
            print("%-8s %-13s %6.2f (%4.1f-%4.1f) %6.2f (%5.1f-%5.1f) %12.2f %6.2f %6.2f (%.1f-%.1f)%s"
                  % (c, case, r, *spread[(c, raw)], pk, *spread[(c, case)], over, pk / r, py,
                     *spread[(c, case + " python")], "   OVER BUDGET" if over > BUDGET_US else ""))
    print()
    for c, b in benches.items():
        parts = pieces(b, a.calls)
        print("%-8s alone: %s" % (c, ", ".join("%s %.2f us" % kv for kv in parts.items())))
    print()
    print("overhead budget %.0f us per call (pure codec): %s"
          % (BUDGET_US, "met" if worst <= BUDGET_US else "MISSED by %.1f us" % (worst - BUDGET_US)))
    for b in benches.values():
        b.db.close()
        b.dir.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
