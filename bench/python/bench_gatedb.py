#!/usr/bin/env python3
"""The Python package's cost over the library, in one process.

For each codec ("pure", and "pymongo" when pymongo's bson is importable),
on a collection of 1,000 small documents, two cases:
  find_one        coll.find_one({"_id": k})
  gated update    coll.update_one({"_id": k}, {"$inc": ...}, basis_version=v)

Every iteration makes one package call and one "raw" call, in alternating
order: raw is the very bytes the package sends for that call, pre-encoded
outside the clock, sent straight through ctypes' gatedb_command (the
library's own cost plus the bare ctypes call and the reply copy).  During
the package call the handle's ctypes function is wrapped by a timer, so
each package call is split into the time inside the library and the time
outside it, paired call by call.  A bare ctypes call (gatedb_command on a
NULL handle, which returns at once) gives what ctypes itself costs for
that signature.

    overhead = median(package - inside, paired) + bare ctypes call
             = the package's encode, decode and bookkeeping, plus ctypes

It is what the package adds to a call; the budget is 10 us.  "alone" is
the package's call answered at once by a stand-in handle: hot (back to
back) and cold (each right after a raw call of the same case, so with the
caches as the library leaves them).  The overhead in place is close to
"alone cold" plus the bare call: the same Python work costs about twice as
much after the library's call has evicted the interpreter's caches.  Also printed:
the medians of package and raw calls and their ratio, and their plain
difference, which includes how the two sides disturb each other's caches
(on this machine single runs move by 20%, so read that column as a range).
Each case runs in its own block (a find after a write is slower than a
find after a find, whichever door it comes through).

    GATEDB_LIBRARY=build/api/libgatedb.so /usr/bin/python3 bench/python/bench_gatedb.py [--calls 20000]
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
_now = time.perf_counter_ns


def captured(db, call):
    """The command bytes the package sends for call()."""
    handle = db._handle
    sent = []
    real = handle.command

    def record(data):
        sent.append(data)
        return real(data)

    handle.command = record
    try:
        call()
    finally:
        del handle.command
    assert len(sent) == 1, "the call sent %d commands" % len(sent)
    return sent[0]


class TimedCall:
    """Stands in for the handle's ctypes function, adding up the time inside it."""

    def __init__(self, fn):
        self.fn = fn
        self.inside = 0

    def __call__(self, *args):
        t = _now()
        rc = self.fn(*args)
        self.inside += _now() - t
        return rc


class CannedHandle:
    """Answers every command with one recorded reply, at once."""

    def __init__(self, reply):
        self.reply = reply

    def command(self, data):
        return 0, self.reply


class Bench:
    """One codec's database and its two cases."""

    def __init__(self, codec):
        self.dir = tempfile.TemporaryDirectory(prefix="gatedb-pybench-")
        self.db = gatedb.Database(self.dir.name, codec=codec)
        self.coll = self.db["bench"]["docs"]
        self.coll.insert_many([{"_id": "doc%05d" % i, "status": "open", "score": i * 0.5,
                                "owner": "agent-%d" % (i % 7)} for i in range(1000)])
        self.version = 0
        self.find_bytes = captured(self.db, lambda: self.coll.find_one({"_id": FIND_KEY}))
        self.update_template = captured(self.db, self._one_update)
        marker = b"\x12basisVersion\x00"
        self.basis_at = self.update_template.index(marker) + len(marker)

    def _one_update(self):
        self.coll.update_one({"_id": UPDATE_KEY}, UPDATE, basis_version=self.version)
        self.version += 1

    def _update_bytes(self, v):
        t = self.update_template
        return t[:self.basis_at] + struct.pack("<q", v) + t[self.basis_at + 8:]

    def _raw(self, data):
        h = self.db._handle
        reply, n = ctypes.c_void_p(), ctypes.c_size_t()
        t = _now()
        h._command(h._ptr, data, len(data), ctypes.byref(reply), ctypes.byref(n), None)
        ctypes.string_at(reply.value, n.value)
        h._free(reply)
        return _now() - t

    def run(self, case, calls):
        """Per call: (package ns, inside-the-library ns, raw ns)."""
        h = self.db._handle
        timed = TimedCall(h._command)
        out = []
        flt = {"_id": FIND_KEY if case == "find_one" else UPDATE_KEY}
        find_one, update_one = self.coll.find_one, self.coll.update_one
        for i in range(calls):
            raw_first = i & 1
            if case == "find_one":
                data = self.find_bytes
            else:
                data = self._update_bytes(self.version + (0 if raw_first else 1))
            r = self._raw(data) if raw_first else 0
            h._command, timed.inside = timed, 0
            t = _now()
            if case == "find_one":
                find_one(flt)
            else:
                update_one(flt, UPDATE, basis_version=self.version + (1 if raw_first else 0))
            p = _now() - t
            h._command = timed.fn
            if not raw_first:
                r = self._raw(data)
            if case != "find_one":
                self.version += 2
            out.append((p, timed.inside, r))
        return out

    def alone(self, case, calls, after_raw):
        """The package's call answered at once by a stand-in handle: its own
        work, back to back (hot) or each right after a raw call of the same
        case (as cold as the library leaves the caches)."""
        coll = self.db["bench"]["docs"]
        data = self.find_bytes if case == "find_one" else self._update_bytes(self.version)
        rc, reply = self.db._handle.command(data)
        if case != "find_one":
            self.version += 1
        coll._handle = CannedHandle(reply)
        flt = {"_id": FIND_KEY if case == "find_one" else UPDATE_KEY}
        samples = []
        for _ in range(calls):
            if after_raw:
                if case == "find_one":
                    self._raw(data)
                else:
                    self._raw(self._update_bytes(self.version))
                    self.version += 1
            t = _now()
            if case == "find_one":
                coll.find_one(flt)
            else:
                coll.update_one(flt, UPDATE, basis_version=7)
            samples.append(_now() - t)
        return statistics.median(samples) / 1000.0

    def check(self):
        """Every gated write went through: the version counts them all."""
        doc = self.coll.find_one({"_id": UPDATE_KEY})
        assert doc["version"] == self.version, (doc, self.version)


def bare_ctypes_call(handle, calls):
    """gatedb_command(NULL, ...): the ctypes call alone, for that signature."""
    reply, n = ctypes.c_void_p(), ctypes.c_size_t()
    p_reply, p_n, fn, data = ctypes.byref(reply), ctypes.byref(n), handle._command, b"\x05\x00\x00\x00\x00"
    samples = []
    for _ in range(calls):
        t = _now()
        fn(None, data, 5, p_reply, p_n, None)
        samples.append(_now() - t)
    return statistics.median(samples)


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
        t0 = _now()
        for _ in range(calls):
            fn()
        out[name] = (_now() - t0) / calls / 1000
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20000, help="paired calls per case (default 20000)")
    p.add_argument("--codecs", default=None, help="comma-separated: pure,pymongo (default: those available)")
    a = p.parse_args()
    codecs = a.codecs.split(",") if a.codecs else ["pure"] + (["pymongo"] if gcodec.pymongo_bson() else [])
    benches = {c: Bench(c) for c in codecs}
    bare = bare_ctypes_call(next(iter(benches.values())).db._handle, a.calls) / 1000.0
    rows = []
    for c, b in benches.items():
        for case in ("find_one", "gated update"):
            b.run(case, max(1000, a.calls // 10))  # warm up
            s = b.run(case, a.calls)
            med = statistics.median
            pk, inside, raw = (med(x[k] for x in s) / 1000.0 for k in range(3))
            outside = med(x[0] - x[1] for x in s) / 1000.0
            hot, cold = b.alone(case, a.calls // 4, False), b.alone(case, a.calls // 4, True)
            rows.append((c, case, raw, pk, inside, outside + bare, pk / raw, pk - raw, hot, cold))
        b.check()
    print("libgatedb %s, python %s, %d paired calls per case, medians in us"
          % (gatedb.library_version(), sys.version.split()[0], a.calls))
    if gcodec.pymongo_bson() is not None:
        print("pymongo's bson C extension: %s" % ("yes" if gcodec.pymongo_bson(require_c=True) else "no"))
    print("bare ctypes call (gatedb_command on NULL): %.2f us" % bare)
    print()
    print("%-8s %-13s %8s %8s %8s %9s %6s %10s %9s %9s" % ("codec", "case", "raw", "package", "inside", "overhead",
                                                           "ratio", "pkg - raw", "alone hot", "alone cold"))
    worst = 0.0
    for c, case, raw, pk, inside, over, ratio, diff, hot, cold in rows:
        worst = max(worst, over)
        print("%-8s %-13s %8.2f %8.2f %8.2f %9.2f %6.2f %10.2f %9.2f %10.2f%s"
              % (c, case, raw, pk, inside, over, ratio, diff, hot, cold,
                 "   OVER BUDGET" if over > BUDGET_US else ""))
    print()
    for c, b in benches.items():
        parts = pieces(b, a.calls)
        print("%-8s alone: %s" % (c, ", ".join("%s %.2f us" % kv for kv in parts.items())))
    print()
    print("overhead budget %.0f us per call: %s"
          % (BUDGET_US, "met" if worst <= BUDGET_US else "MISSED by %.1f us" % (worst - BUDGET_US)))
    for b in benches.values():
        b.db.close()
        b.dir.cleanup()
    return 0 if worst <= BUDGET_US else 1


if __name__ == "__main__":
    sys.exit(main())
