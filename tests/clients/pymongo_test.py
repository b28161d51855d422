#!/usr/bin/python3
"""gatedb serve, driven by PyMongo (Debian's python3-pymongo, 3.11) and by raw sockets.

    GATEDB_BIN=build/api/gatedb /usr/bin/python3 tests/clients/pymongo_test.py
    /usr/bin/python3 tests/clients/pymongo_test.py --bin build/api/gatedb [-v] [TestClass.test_name]

Run it with Debian's /usr/bin/python3: that is the interpreter python3-pymongo
installs into (scripts/install_clients.sh installs the package).

PymongoTest: the driver's CRUD, cursors, counts, transactions, errors and
gatedb's extension fields. RetryableWriteTest: a retryable write sent twice by
hand with the same lsid and txnNumber is applied once. HostileInputTest: bad
frames and connection storms; after each, a fresh client must still ping.
TimeoutTest: --readTimeoutMs and --idleTimeoutMs. RestartTest: acknowledged
writes survive a clean stop. Every server must exit with status 0 on its
signal. The whole file is bounded by a watchdog (150 s).
"""

import faulthandler
import itertools
import os
import signal
import socket
import struct
import sys
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatedb_server  # noqa: E402

try:
    import bson
    import pymongo
    from bson import SON, Binary, Int64
    from pymongo import MongoClient, ReturnDocument, monitoring
    from pymongo import InsertOne, UpdateOne, UpdateMany, ReplaceOne, DeleteOne, DeleteMany
    from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure
except ImportError as e:  # pragma: no cover
    sys.stderr.write("pymongo_test.py needs PyMongo (%s): run it with /usr/bin/python3 after "
                     "scripts/install_clients.sh (Debian's python3-pymongo)\n" % e)
    sys.exit(2)

DB = "pyclient"
OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013


# --------------------------------------------------------------------------
# Raw wire protocol helpers: just enough of MongoDB's framing to send
# hand-built (and broken) messages and read replies.

_request_ids = itertools.count(1000)


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC32C[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the Castagnoli check value


def header(length, request_id, response_to, opcode):
    return struct.pack("<iiii", length, request_id, response_to, opcode)


def op_msg(body, flags=0, checksum=False, request_id=None):
    """An OP_MSG with one kind-0 section. Returns (requestID, bytes)."""
    rid = next(_request_ids) if request_id is None else request_id
    if checksum:
        flags |= 1
    payload = struct.pack("<I", flags) + b"\x00" + bson.encode(body)
    length = 16 + len(payload) + (4 if checksum else 0)
    msg = header(length, rid, 0, OP_MSG) + payload
    if checksum:
        msg += struct.pack("<I", crc32c(msg))
    return rid, msg


def raw_frame(opcode, payload, request_id=None, length=None):
    rid = next(_request_ids) if request_id is None else request_id
    return rid, header(16 + len(payload) if length is None else length, rid, 0, opcode) + payload


def connect_raw(port, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Closed(Exception):
    pass


def _recv_exact(sock, n, deadline):
    buf = b""
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        sock.settimeout(left)
        try:
            chunk = sock.recv(n - len(buf))
        except (ConnectionResetError, BrokenPipeError):
            raise Closed()
        if not chunk:
            raise Closed()
        buf += chunk
    return buf


def read_message(sock, timeout=5.0):
    """Reads one message: (requestID, responseTo, opcode, body bytes).
    Raises Closed when the peer closes, socket.timeout when nothing comes."""
    deadline = time.monotonic() + timeout
    h = _recv_exact(sock, 16, deadline)
    length, rid, response_to, opcode = struct.unpack("<iiii", h)
    if length < 16 or length > 48 * 1000 * 1000:
        raise AssertionError("the server sent a message with length %d" % length)
    return rid, response_to, opcode, _recv_exact(sock, length - 16, deadline)


def reply_document(opcode, body):
    if opcode == OP_MSG:
        flags, kind = struct.unpack("<IB", body[:5])
        assert kind == 0, "reply's first section is kind %d" % kind
        size = struct.unpack("<i", body[5:9])[0]
        return bson.decode(body[5:5 + size])
    if opcode == OP_REPLY:
        number_returned = struct.unpack("<i", body[16:20])[0]
        assert number_returned == 1, "OP_REPLY holds %d documents" % number_returned
        size = struct.unpack("<i", body[20:24])[0]
        return bson.decode(body[20:20 + size])
    raise AssertionError("reply with opcode %d" % opcode)


def raw_command(sock, body, timeout=10.0):
    rid, msg = op_msg(body)
    sock.sendall(msg)
    got_rid, response_to, opcode, data = read_message(sock, timeout)
    assert response_to == rid, "responseTo %d, expected %d" % (response_to, rid)
    return reply_document(opcode, data)


def wait_closed(sock, timeout):
    """Reads until the peer closes; returns the documents it sent first.
    Fails when the connection is still open after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    docs = []
    while True:
        try:
            _, _, opcode, data = read_message(sock, max(0.0, deadline - time.monotonic()))
        except Closed:
            return docs
        except socket.timeout:
            raise AssertionError("the connection is still open %.1f s later (got %r)" % (timeout, docs))
        docs.append(reply_document(opcode, data))


class CommandRecorder(monitoring.CommandListener):
    def __init__(self):
        self.events = []

    def started(self, event):
        self.events.append(("started", event.command_name, event.command))

    def succeeded(self, event):
        self.events.append(("succeeded", event.command_name, event.reply))

    def failed(self, event):
        self.events.append(("failed", event.command_name, event.failure))

    def named(self, kind, name):
        return [doc for (k, n, doc) in self.events if k == kind and n == name]


# --------------------------------------------------------------------------


class ServerTestCase(unittest.TestCase):
    """One gatedb serve per test class; it must stop with status 0."""

    server_args = ()
    stop_signal = signal.SIGTERM

    @classmethod
    def setUpClass(cls):
        cls.server = gatedb_server.GatedbServer(cls.server_args).start()
        cls.clients = []
        # Should the rest of a subclass's setUpClass fail, tearDownClass does
        # not run; this still ends the server.
        cls.addClassCleanup(cls.server.kill)

    @classmethod
    def tearDownClass(cls):
        for c in cls.clients:
            c.close()
        try:
            cls.server.stop(cls.stop_signal)
        finally:
            cls.server.kill()

    @classmethod
    def client(cls, form="replicaSet", **kwargs):
        opts = dict(serverSelectionTimeoutMS=10000, connectTimeoutMS=5000, socketTimeoutMS=30000)
        opts.update(kwargs)
        c = MongoClient(cls.server.uri(form), **opts)
        cls.clients.append(c)
        return c

    def assert_healthy(self):
        """The server is running and a fresh client can ping it."""
        self.assertTrue(self.server.alive(), "gatedb serve died:\n" + self.server.stderr())
        c = MongoClient(self.server.uri("direct"), serverSelectionTimeoutMS=10000, connectTimeoutMS=5000)
        try:
            self.assertEqual(c.admin.command("ping")["ok"], 1)
        finally:
            c.close()


class PymongoTest(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.recorder = CommandRecorder()
        cls.main = cls.client("replicaSet", event_listeners=[cls.recorder])
        cls.db = cls.main[DB]

    def test_connect_with_both_connection_string_forms(self):
        me = "127.0.0.1:%d" % self.server.port
        rs = self.client("replicaSet")
        self.assertEqual(rs.admin.command("ping")["ok"], 1)
        self.assertEqual(rs.primary, ("127.0.0.1", self.server.port))
        self.assertTrue(rs.is_primary)
        hello = rs.admin.command("isMaster")
        self.assertIs(hello["ismaster"], True)
        self.assertIs(hello["secondary"], False)
        self.assertEqual(hello["setName"], "gatedb")
        self.assertEqual(hello["hosts"], [me])
        self.assertEqual(hello["primary"], me)
        self.assertEqual(hello["maxWireVersion"], 21)
        self.assertEqual(hello["minWireVersion"], 0)
        self.assertEqual(hello["logicalSessionTimeoutMinutes"], 30)
        self.assertIn("version", rs.server_info())

        direct = self.client("direct")
        direct[DB].direct.insert_one({"_id": 1})
        self.assertEqual(direct[DB].direct.find_one({"_id": 1}), {"_id": 1, "version": 0})
        self.assertTrue(direct.is_primary)

    def test_crud_result_shapes_and_versions(self):
        coll = self.db.crud
        r = coll.insert_one({"_id": 1, "name": "ana", "version": 9})
        self.assertTrue(r.acknowledged)
        self.assertEqual(r.inserted_id, 1)
        r = coll.insert_one({"name": "bo"})
        self.assertIsInstance(r.inserted_id, bson.ObjectId)
        r = coll.insert_many([{"_id": "a", "g": 1}, {"_id": "b", "g": 1}, {"_id": "c", "g": 2}])
        self.assertEqual(r.inserted_ids, ["a", "b", "c"])
        self.assertEqual(coll.find_one({"_id": 1}), {"_id": 1, "name": "ana", "version": 0})

        r = coll.update_one({"_id": 1}, {"$set": {"name": "cy"}})
        self.assertEqual((r.matched_count, r.modified_count, r.upserted_id), (1, 1, None))
        self.assertEqual(r.raw_result["n"], 1)
        self.assertEqual(r.raw_result["nModified"], 1)
        r = coll.update_one({"_id": 1}, {"$set": {"name": "cy"}})
        self.assertEqual((r.matched_count, r.modified_count), (1, 0))
        self.assertEqual(coll.find_one({"_id": 1})["version"], 1)
        r = coll.update_one({"_id": "up"}, {"$set": {"x": 1}}, upsert=True)
        self.assertEqual((r.matched_count, r.modified_count, r.upserted_id), (0, 0, "up"))
        self.assertEqual(coll.find_one({"_id": "up"}), {"_id": "up", "x": 1, "version": 0})
        r = coll.update_many({"g": 1}, {"$inc": {"n": 1}})
        self.assertEqual((r.matched_count, r.modified_count), (2, 2))
        r = coll.replace_one({"_id": "c"}, {"g": 3})
        self.assertEqual((r.matched_count, r.modified_count), (1, 1))
        self.assertEqual(coll.find_one({"_id": "c"}), {"_id": "c", "g": 3, "version": 1})

        doc = coll.find_one_and_update({"_id": "a"}, {"$inc": {"n": 5}}, return_document=ReturnDocument.AFTER)
        self.assertEqual(doc, {"_id": "a", "g": 1, "n": 6, "version": 2})
        doc = coll.find_one_and_update({"_id": "a"}, {"$inc": {"n": 1}})
        self.assertEqual(doc["n"], 6)
        self.assertIsNone(coll.find_one_and_update({"_id": "missing"}, {"$set": {"n": 1}}))

        r = coll.delete_one({"_id": "b"})
        self.assertEqual(r.deleted_count, 1)
        r = coll.delete_many({"g": {"$exists": True}})
        self.assertEqual(r.deleted_count, 2)
        r = coll.delete_many({"g": {"$exists": True}})
        self.assertEqual(r.deleted_count, 0)

        r = coll.bulk_write([
            InsertOne({"_id": 10, "k": 1}),
            UpdateOne({"_id": 10}, {"$set": {"s": 1}}),
            UpdateMany({"k": 1}, {"$set": {"t": 1}}),
            UpdateOne({"_id": 11}, {"$set": {"k": 2}}, upsert=True),
            ReplaceOne({"_id": 1}, {"name": "dee"}),
            DeleteOne({"_id": "up"}),
            DeleteMany({"_id": {"$in": ["nothing"]}}),
        ])
        self.assertEqual(r.inserted_count, 1)
        self.assertEqual(r.matched_count, 3)
        self.assertEqual(r.modified_count, 3)
        self.assertEqual(r.upserted_count, 1)
        self.assertEqual(r.upserted_ids, {3: 11})
        self.assertEqual(r.deleted_count, 1)
        self.assertEqual(coll.find_one({"_id": 10}), {"_id": 10, "k": 1, "s": 1, "t": 1, "version": 2})

        with self.assertRaises(OperationFailure) as cm:
            coll.update_one({"_id": 10}, {"$set": {"version": 5}})
        self.assertEqual(cm.exception.code, 66)

    def test_cursor_pages_with_batch_size(self):
        coll = self.db.paging
        coll.insert_many([{"_id": i} for i in range(250)])
        start = len(self.recorder.events)
        ids = [d["_id"] for d in coll.find({}, sort=[("_id", 1)]).batch_size(10)]
        self.assertEqual(ids, list(range(250)))
        events = self.recorder.events[start:]
        finds = [d for (k, n, d) in events if k == "succeeded" and n == "find"]
        self.assertEqual(len(finds), 1)
        self.assertEqual(len(finds[0]["cursor"]["firstBatch"]), 10)
        self.assertNotEqual(finds[0]["cursor"]["id"], 0)
        got_mores = [d for (k, n, d) in events if k == "succeeded" and n == "getMore"]
        self.assertIn(len(got_mores), (24, 25))
        self.assertEqual(sum(len(g["cursor"]["nextBatch"]) for g in got_mores), 240)
        self.assertEqual([g["cursor"]["id"] == 0 for g in got_mores], [False] * (len(got_mores) - 1) + [True])
        for cmd in [d for (k, n, d) in events if k == "started" and n == "getMore"]:
            self.assertEqual(cmd["collection"], "paging")
            self.assertEqual(cmd["batchSize"], 10)
        # A cursor closed early is killed.
        cur = coll.find().batch_size(5)
        next(cur)
        cur.close()
        kills = [d for (k, n, d) in self.recorder.events if k == "succeeded" and n == "killCursors"]
        self.assertTrue(kills, "closing an open cursor sent no killCursors")
        self.assertEqual(len(kills[-1]["cursorsKilled"]), 1)

    def test_count_documents_with_skip_and_limit(self):
        coll = self.db.counting
        coll.insert_many([{"_id": i, "even": i % 2 == 0} for i in range(40)])
        self.assertEqual(coll.count_documents({}), 40)
        self.assertEqual(coll.count_documents({"even": True}), 20)
        self.assertEqual(coll.count_documents({"even": True}, skip=5), 15)
        self.assertEqual(coll.count_documents({"even": True}, skip=5, limit=4), 4)
        self.assertEqual(coll.count_documents({"even": True}, skip=25), 0)
        self.assertEqual(coll.estimated_document_count(), 40)
        self.assertEqual(sorted(coll.distinct("even")), [False, True])

    def test_with_transaction_retries_after_write_conflict(self):
        coll = self.db.txn
        coll.insert_one({"_id": "X", "n": 0})
        other = self.client("direct")
        attempts = []
        errors = []

        def callback(session):
            attempts.append(1)
            if len(attempts) > 5:
                raise RuntimeError("with_transaction kept retrying")
            x = coll.find_one({"_id": "X"}, session=session)
            if len(attempts) == 1:
                # Another client commits a write to X after this transaction's snapshot.
                other[DB].txn.update_one({"_id": "X"}, {"$inc": {"n": 10}})
            try:
                coll.update_one({"_id": "X"}, {"$set": {"n": x["n"] + 1}}, session=session)
            except OperationFailure as e:
                errors.append(e)
                raise

        with self.main.start_session() as session:
            session.with_transaction(callback)
        self.assertGreaterEqual(len(attempts), 2, "the callback was not retried")
        self.assertTrue(errors, "the first attempt's write did not fail")
        self.assertEqual(errors[0].code, 112, errors[0].details)
        self.assertTrue(errors[0].has_error_label("TransientTransactionError"), errors[0].details)
        self.assertEqual(coll.find_one({"_id": "X"}), {"_id": "X", "n": 11, "version": 2})

        # abort_transaction discards.
        with self.main.start_session() as session:
            session.start_transaction()
            coll.insert_one({"_id": "gone"}, session=session)
            self.assertEqual(coll.count_documents({"_id": "gone"}, session=session), 1)
            session.abort_transaction()
        self.assertIsNone(coll.find_one({"_id": "gone"}))

    def test_duplicate_key_error(self):
        coll = self.db.dups
        self.assertEqual(coll.create_index("email", unique=True), "email_1")
        coll.insert_one({"_id": 1, "email": "a@example.test"})
        with self.assertRaises(DuplicateKeyError) as cm:
            coll.insert_one({"_id": 2, "email": "a@example.test"})
        self.assertEqual(cm.exception.code, 11000)
        self.assertEqual(cm.exception.details["keyPattern"], {"email": 1})
        self.assertEqual(cm.exception.details["keyValue"], {"email": "a@example.test"})
        with self.assertRaises(DuplicateKeyError):
            coll.insert_one({"_id": 1})
        with self.assertRaises(BulkWriteError) as bw:
            coll.insert_many([{"_id": 3, "email": "b@example.test"}, {"_id": 4, "email": "b@example.test"}])
        details = bw.exception.details
        self.assertEqual(details["nInserted"], 1)
        self.assertEqual(details["writeErrors"][0]["index"], 1)
        self.assertEqual(details["writeErrors"][0]["code"], 11000)
        self.assertEqual(coll.count_documents({}), 2)

    def test_command_with_basis_version_and_write_context(self):
        self.db.gated.insert_one({"_id": "o1", "status": "open"})

        def update(basis, status, ctx):
            return self.db.command(SON([
                ("update", "gated"),
                ("updates", [SON([("q", {"_id": "o1"}), ("u", {"$set": {"status": status}}),
                                  ("basisVersion", basis)])]),
                ("writeContext", ctx),
            ]))

        r = update(0, "paid", {"agentId": "py-agent", "taskId": "py-task", "writeSeq": 1, "source": "pymongo"})
        self.assertEqual((r["ok"], r["n"], r["nModified"]), (1.0, 1, 1))
        self.assertNotIn("writeErrors", r)
        r = update(0, "void", {"agentId": "py-agent-2"})
        self.assertEqual((r["ok"], r["n"], r["nModified"]), (1.0, 0, 0))
        we = r["writeErrors"][0]
        self.assertEqual(we["codeName"], "VersionConflict")
        self.assertEqual(we["errInfo"]["basisVersion"], 0)
        self.assertEqual(we["errInfo"]["currentVersion"], 1)
        self.assertEqual(we["errInfo"]["lastWriter"]["agentId"], "py-agent")
        self.assertEqual(self.db.gated.find_one({"_id": "o1"}), {"_id": "o1", "status": "paid", "version": 1})

        j = self.db.command(SON([("journal", "gated"), ("afterSeq", 0)]))
        ops = [(e["op"], e.get("writeContext", {}).get("agentId")) for e in j["events"]]
        self.assertEqual(ops, [("insert", None), ("update", "py-agent"), ("conflict", "py-agent-2")])

        with self.assertRaises(OperationFailure) as cm:
            self.db.command("noSuchCommandForGatedb")
        self.assertEqual(cm.exception.code, 59)

    def test_op_query_handshake(self):
        # The legacy handshake drivers send first: OP_QUERY on admin.$cmd, answered by OP_REPLY.
        s = connect_raw(self.server.port)
        try:
            query = bson.encode(SON([("isMaster", 1), ("helloOk", True)]))
            payload = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + query
            rid, msg = raw_frame(OP_QUERY, payload)
            s.sendall(msg)
            _, response_to, opcode, body = read_message(s)
            self.assertEqual(opcode, OP_REPLY)
            self.assertEqual(response_to, rid)
            doc = reply_document(opcode, body)
            self.assertIs(doc["ismaster"], True)
            self.assertEqual(doc["maxWireVersion"], 21)
            self.assertIs(doc.get("helloOk"), True)
            # Then OP_MSG on the same connection.
            self.assertEqual(raw_command(s, {"ping": 1, "$db": "admin"})["ok"], 1)
        finally:
            s.close()


    def test_get_more_on_another_connection(self):
        # A cursor belongs to the server (and its session), not to the connection that opened it.
        self.db.other_conn.insert_many([{"_id": i} for i in range(5)])
        a, b = connect_raw(self.server.port), connect_raw(self.server.port)
        try:
            r = raw_command(a, SON([("find", "other_conn"), ("batchSize", 2), ("$db", DB)]))
            self.assertEqual([d["_id"] for d in r["cursor"]["firstBatch"]], [0, 1])
            cid = r["cursor"]["id"]
            self.assertNotEqual(cid, 0)
            a.close()
            m = raw_command(b, SON([("getMore", Int64(cid)), ("collection", "other_conn"), ("$db", DB)]))
            self.assertEqual([d["_id"] for d in m["cursor"]["nextBatch"]], [2, 3, 4])
            self.assertEqual(m["cursor"]["id"], 0)
            gone = raw_command(b, SON([("getMore", Int64(cid)), ("collection", "other_conn"), ("$db", DB)]))
            self.assertEqual((gone["ok"], gone.get("code")), (0, 43), gone)
        finally:
            a.close()
            b.close()


class RetryableWriteTest(ServerTestCase):
    """A retryable write is a command with lsid and txnNumber; the same pair
    again (a driver's retry after a lost reply) returns the first outcome
    without applying the write again, on any connection."""

    def setUp(self):
        self.lsid = {"id": Binary(uuid.uuid4().bytes, 4)}
        self.coll = self.client("direct")[DB]

    def command(self, *fields, txn):
        return SON(list(fields) + [("lsid", self.lsid), ("txnNumber", Int64(txn)), ("$db", DB)])

    def send_on_new_connection(self, cmd):
        s = connect_raw(self.server.port)
        try:
            return raw_command(s, cmd)
        finally:
            s.close()

    def test_insert_sent_twice_is_applied_once(self):
        cmd = self.command(("insert", "retry_insert"), ("documents", [{"_id": 1, "n": 0}]), txn=1)
        first = self.send_on_new_connection(cmd)
        self.assertEqual((first["ok"], first["n"]), (1.0, 1), first)
        self.assertNotIn("writeErrors", first)
        again = self.send_on_new_connection(cmd)
        self.assertEqual((again["ok"], again["n"]), (1.0, 1), again)
        self.assertNotIn("writeErrors", again, "the retry was run again (DuplicateKey) instead of replayed")
        self.assertEqual(list(self.coll.retry_insert.find()), [{"_id": 1, "n": 0, "version": 0}])

        # The next txnNumber on the same session is a new write.
        nxt = self.send_on_new_connection(self.command(("insert", "retry_insert"),
                                                       ("documents", [{"_id": 2}]), txn=2))
        self.assertEqual((nxt["ok"], nxt["n"]), (1.0, 1), nxt)
        self.assertEqual(self.coll.retry_insert.count_documents({}), 2)

    def test_update_sent_twice_is_applied_once(self):
        self.coll.retry_update.insert_one({"_id": "c", "n": 0})
        cmd = self.command(("update", "retry_update"),
                           ("updates", [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}]), txn=7)
        for _ in range(3):
            r = self.send_on_new_connection(cmd)
            self.assertEqual((r["ok"], r["n"], r["nModified"]), (1.0, 1, 1), r)
        self.assertEqual(self.coll.retry_update.find_one({"_id": "c"}), {"_id": "c", "n": 1, "version": 1})

    def test_an_older_txn_number_is_transaction_too_old(self):
        # MongoDB keeps one txnNumber per session: once 6 has started, 5 is
        # refused (TransactionTooOld, 225), as the same command or another one.
        first = self.command(("insert", "retry_old"), ("documents", [{"_id": 1}]), txn=5)
        self.assertEqual(self.send_on_new_connection(first)["n"], 1)
        nxt = self.command(("insert", "retry_old"), ("documents", [{"_id": 2}]), txn=6)
        self.assertEqual(self.send_on_new_connection(nxt)["n"], 1)
        other = self.command(("insert", "retry_old"), ("documents", [{"_id": 3}]), txn=5)
        for name, cmd in (("the same command", first), ("another command", other)):
            with self.subTest(name):
                r = self.send_on_new_connection(cmd)
                self.assertEqual(r["ok"], 0, r)
                self.assertEqual(r.get("codeName"), "TransactionTooOld", r)
                self.assertEqual(r.get("code"), 225, r)
        self.assertEqual(self.coll.retry_old.count_documents({}), 2)


class HostileInputTest(ServerTestCase):
    """Broken frames from raw sockets. For each, the server either closes the
    connection or answers ok: 0 and keeps the stream in step; it never hangs
    or dies; afterwards a fresh client pings."""

    def tearDown(self):
        self.assert_healthy()

    def assert_closed_or_refused(self, sock, must_close=False):
        """After a bad message: the server closes, or replies ok: 0 (and then,
        unless must_close, the same connection still answers a ping)."""
        try:
            _, _, opcode, body = read_message(sock, 5.0)
        except Closed:
            return "closed"
        except socket.timeout:
            self.fail("the server neither answered nor closed the connection within 5 s")
        doc = reply_document(opcode, body)
        self.assertEqual(doc.get("ok"), 0, doc)
        self.assertIsInstance(doc.get("code"), int, doc)
        if must_close:
            wait_closed(sock, 5.0)
            return "refused, closed"
        try:
            pong = raw_command(sock, {"ping": 1, "$db": "admin"}, timeout=5.0)
        except Closed:
            return "refused, closed"
        self.assertEqual(pong["ok"], 1, pong)
        return "refused"

    def test_declared_length_of_2_gb(self):
        for length in (0x7FFFFFFF, -0x80000000, 0x7FFFFFF0):
            with self.subTest(length=length):
                s = connect_raw(self.server.port)
                try:
                    _, frame = raw_frame(OP_MSG, b"\x00\x00\x00\x00\x00", length=length)
                    s.sendall(frame + b"x" * 1024)
                    self.assert_closed_or_refused(s, must_close=True)
                finally:
                    s.close()

    def test_length_shorter_than_a_header(self):
        for length in (0, 4, 15):
            with self.subTest(length=length):
                s = connect_raw(self.server.port)
                try:
                    s.sendall(header(length, 1, 0, OP_MSG))
                    self.assert_closed_or_refused(s, must_close=True)
                finally:
                    s.close()

    def test_unknown_opcode(self):
        s = connect_raw(self.server.port)
        try:
            _, frame = raw_frame(9999, b"\x00" * 24)
            s.sendall(frame)
            self.assert_closed_or_refused(s)
        finally:
            s.close()

    def test_truncated_op_msg_section(self):
        body = bson.encode({"ping": 1, "$db": "admin"})
        # The section's document claims its full size but the frame ends early.
        payload = struct.pack("<I", 0) + b"\x00" + body[:len(body) // 2]
        s = connect_raw(self.server.port)
        try:
            _, frame = raw_frame(OP_MSG, payload)
            s.sendall(frame)
            self.assert_closed_or_refused(s)
        finally:
            s.close()

    def test_flags_and_no_section(self):
        s = connect_raw(self.server.port)
        try:
            _, frame = raw_frame(OP_MSG, struct.pack("<I", 0))
            s.sendall(frame)
            self.assert_closed_or_refused(s)
        finally:
            s.close()

    def test_invalid_bson_body(self):
        good = bson.encode(SON([("insert", "hostile"), ("documents", [{"_id": 1}]), ("$db", DB)]))
        bad_type = bytearray(good)
        bad_type[4] = 0x55  # the first element's type byte: no such BSON type
        bad_size = bytearray(good)
        struct.pack_into("<i", bad_size, 0, len(good) + 50)  # claims more than it has
        no_terminator = bytearray(good)
        no_terminator[-1] = 0x01
        # (Invalid UTF-8 is left out: MongoDB does not check it, gatedb does.)
        for name, doc in (("bad type", bad_type), ("bad size", bad_size), ("no terminator", no_terminator)):
            with self.subTest(name):
                s = connect_raw(self.server.port)
                try:
                    _, frame = raw_frame(OP_MSG, struct.pack("<I", 0) + b"\x00" + bytes(doc))
                    s.sendall(frame)
                    self.assert_closed_or_refused(s)
                finally:
                    s.close()
        self.assertEqual(self.client("direct")[DB].hostile.count_documents({}), 0)

    def test_kind_1_section_overrunning_the_frame(self):
        body = bson.encode(SON([("insert", "hostile_seq"), ("$db", DB)]))
        docs = bson.encode({"_id": 1})
        seq = b"\x01" + struct.pack("<i", 100000) + b"documents\x00" + docs
        s = connect_raw(self.server.port)
        try:
            _, frame = raw_frame(OP_MSG, struct.pack("<I", 0) + b"\x00" + body + seq)
            s.sendall(frame)
            self.assert_closed_or_refused(s)
        finally:
            s.close()
        self.assertEqual(self.client("direct")[DB].hostile_seq.count_documents({}), 0)

    def test_bad_checksum_refused_good_checksum_accepted(self):
        s = connect_raw(self.server.port)
        try:
            rid, msg = op_msg({"ping": 1, "$db": "admin"}, checksum=True)
            s.sendall(msg)
            _, response_to, opcode, body = read_message(s)
            self.assertEqual(response_to, rid)
            self.assertEqual(reply_document(opcode, body)["ok"], 1)
        finally:
            s.close()
        s = connect_raw(self.server.port)
        try:
            _, msg = op_msg({"ping": 1, "$db": "admin"}, checksum=True)
            msg = msg[:-4] + struct.pack("<I", (crc32c(msg[:-4]) ^ 1))
            s.sendall(msg)
            self.assert_closed_or_refused(s)
        finally:
            s.close()

    def test_split_and_pipelined_messages(self):
        s = connect_raw(self.server.port)
        try:
            # One message a byte at a time.
            rid, msg = op_msg({"ping": 1, "$db": "admin"})
            for i in range(len(msg)):
                s.sendall(msg[i:i + 1])
                if i % 8 == 0:
                    time.sleep(0.005)
            _, response_to, opcode, body = read_message(s)
            self.assertEqual((response_to, reply_document(opcode, body)["ok"]), (rid, 1))
            # Three messages in one write, answered in order.
            msgs = [op_msg({"ping": 1, "$db": "admin"}) for _ in range(3)]
            s.sendall(b"".join(m for _, m in msgs))
            for rid, _ in msgs:
                _, response_to, opcode, body = read_message(s)
                self.assertEqual(response_to, rid)
            # moreToCome: no reply to the first, the next is answered.
            _, quiet = op_msg(SON([("insert", "more_to_come"), ("documents", [{"_id": 1}]),
                                   ("writeConcern", {"w": 0}), ("$db", DB)]), flags=2)
            rid, ping = op_msg({"ping": 1, "$db": "admin"})
            s.sendall(quiet + ping)
            _, response_to, _, _ = read_message(s)
            self.assertEqual(response_to, rid, "a moreToCome request was answered")
        finally:
            s.close()
        self.assertEqual(self.client("direct")[DB].more_to_come.count_documents({}), 1)

    def test_a_thousand_connections_opened_and_dropped(self):
        admin = self.client("direct").admin
        before = admin.command("serverStatus")["connections"]["current"]
        port = self.server.port
        rid, ping = op_msg({"ping": 1, "$db": "admin"})
        for round_ in range(20):
            socks = []
            for i in range(50):
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                socks.append(s)
                kind = (round_ * 50 + i) % 5
                if kind == 1:
                    s.sendall(ping[:7])  # half a header
                elif kind == 2:
                    s.sendall(ping)  # a whole request, never read
                elif kind == 3:
                    s.sendall(ping[:20])
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
                elif kind == 4:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            for s in socks:
                s.close()
        self.assert_healthy()
        # The server lets go of every dropped connection.
        deadline = time.monotonic() + 10
        while True:
            now = admin.command("serverStatus")["connections"]["current"]
            if now <= before + 1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertLessEqual(now, before + 1, "connections.current %d, %d before the storm" % (now, before))


class TimeoutTest(ServerTestCase):
    """--readTimeoutMs: a message begun must be finished in time; --idleTimeoutMs:
    a connection with no request for that long is closed."""

    READ_MS = 1000
    IDLE_MS = 3000
    server_args = ("--readTimeoutMs", str(READ_MS), "--idleTimeoutMs", str(IDLE_MS))

    def test_half_a_header_then_silence_is_closed(self):
        s = connect_raw(self.server.port)
        try:
            _, msg = op_msg({"ping": 1, "$db": "admin"})
            s.sendall(msg[:8])
            t0 = time.monotonic()
            wait_closed(s, self.READ_MS / 1000 + 4)
            took = time.monotonic() - t0
            self.assertGreaterEqual(took, self.READ_MS / 1000 * 0.5, "closed before the read timeout")
        finally:
            s.close()
        self.assert_healthy()

    def test_a_message_split_within_the_read_timeout_is_answered(self):
        s = connect_raw(self.server.port)
        try:
            rid, msg = op_msg({"ping": 1, "$db": "admin"})
            for part in (msg[:5], msg[5:20], msg[20:]):
                s.sendall(part)
                time.sleep(0.2)
            _, response_to, opcode, body = read_message(s)
            self.assertEqual((response_to, reply_document(opcode, body)["ok"]), (rid, 1))
        finally:
            s.close()

    def test_idle_connection_is_closed_after_the_idle_timeout(self):
        s = connect_raw(self.server.port)
        try:
            t0 = time.monotonic()
            time.sleep(self.IDLE_MS / 1000 * 0.6)  # idle, but not yet too long; longer than READ_MS
            self.assertEqual(raw_command(s, {"ping": 1, "$db": "admin"})["ok"], 1)
            t1 = time.monotonic()
            wait_closed(s, self.IDLE_MS / 1000 + 4)
            self.assertGreaterEqual(time.monotonic() - t1, self.IDLE_MS / 1000 * 0.5)
            self.assertLess(t1 - t0, self.IDLE_MS / 1000)
        finally:
            s.close()
        # A driver whose pooled connection the server closed reconnects by itself.
        c = self.client("direct", heartbeatFrequencyMS=500)
        self.assertEqual(c.admin.command("ping")["ok"], 1)
        time.sleep(self.IDLE_MS / 1000 + 1)
        self.assertEqual(c.admin.command("ping")["ok"], 1)


class RestartTest(unittest.TestCase):
    """Acknowledged writes survive a clean stop (SIGINT) and a restart on the same directory."""

    def test_restart_keeps_acknowledged_writes(self):
        import tempfile
        import shutil
        d = tempfile.mkdtemp(prefix="gatedb-client-restart-")
        srv = None
        try:
            srv = gatedb_server.GatedbServer(data_dir=d).start()
            c = MongoClient(srv.uri("direct"), serverSelectionTimeoutMS=10000)
            try:
                c[DB].durable.insert_many([{"_id": i} for i in range(100)])
                c[DB].durable.update_one({"_id": 7}, {"$set": {"x": 1}})
            finally:
                c.close()
            srv.stop(signal.SIGINT)
            srv = gatedb_server.GatedbServer(data_dir=d).start()
            c = MongoClient(srv.uri("direct"), serverSelectionTimeoutMS=10000)
            try:
                self.assertEqual(c[DB].durable.count_documents({}), 100)
                self.assertEqual(c[DB].durable.find_one({"_id": 7}), {"_id": 7, "x": 1, "version": 1})
            finally:
                c.close()
            srv.stop(signal.SIGTERM)
        finally:
            if srv is not None:
                srv.kill()
            shutil.rmtree(d, ignore_errors=True)

    def test_change_stream_resumes_after_a_restart(self):
        import tempfile
        import shutil
        d = tempfile.mkdtemp(prefix="gatedb-client-resume-")
        srv = None
        try:
            srv = gatedb_server.GatedbServer(data_dir=d).start()
            c = MongoClient(srv.uri("direct"), serverSelectionTimeoutMS=10000)
            try:
                coll = c[DB].feed
                coll.insert_one({"_id": 0})
                with coll.watch(max_await_time_ms=200) as stream:
                    coll.insert_one({"_id": 1})
                    coll.update_one({"_id": 1}, {"$set": {"x": 1}})
                    first = stream.next()
                    self.assertEqual((first["operationType"], first["documentKey"]), ("insert", {"_id": 1}))
                    token = stream.resume_token
                    self.assertEqual(token, first["_id"])
                coll.delete_one({"_id": 1})
            finally:
                c.close()
            srv.stop(signal.SIGINT)
            srv = gatedb_server.GatedbServer(data_dir=d).start()
            c = MongoClient(srv.uri("direct"), serverSelectionTimeoutMS=10000)
            try:
                with c[DB].feed.watch(resume_after=token, max_await_time_ms=200) as stream:
                    ops = [stream.next()["operationType"] for _ in range(2)]
                    self.assertEqual(ops, ["update", "delete"])
                    self.assertIsNone(stream.try_next())
            finally:
                c.close()
            srv.stop(signal.SIGTERM)
        finally:
            if srv is not None:
                srv.kill()
            shutil.rmtree(d, ignore_errors=True)


def main():
    argv = [sys.argv[0]]
    args = iter(sys.argv[1:])
    for a in args:
        if a == "--bin":
            gatedb_server.set_bin(next(args))
        elif a.startswith("--bin="):
            gatedb_server.set_bin(a.split("=", 1)[1])
        else:
            argv.append(a)
    faulthandler.dump_traceback_later(150, exit=True)  # the whole suite is bounded
    sys.stderr.write("pymongo %s, gatedb %s\n" % (pymongo.version, gatedb_server.gatedb_bin()))
    unittest.main(argv=argv, verbosity=2)


if __name__ == "__main__":
    main()
