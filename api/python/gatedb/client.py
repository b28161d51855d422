"""Database, database handles, collections, cursors and sessions: pymongo's
names over gatedb's commands (PROTOCOL.md), run through the C ABI.

Every method builds one command document, runs it through the engine's
dispatcher (the same one the wire server and the C++ API use) and turns the
reply into pymongo's result types or exceptions; nothing is decided here.
"""

import collections.abc
import datetime
import os
import threading
import uuid

from . import _bson, _ffi
from .errors import (BulkWriteError, InvalidOperation, OperationFailure, VersionConflictError,
                     write_error)

__all__ = ["Database", "DatabaseHandle", "Collection", "Cursor", "Session", "ReturnDocument",
           "WriteContext", "InsertOneResult", "InsertManyResult", "UpdateResult", "DeleteResult"]


class ReturnDocument:
    BEFORE = False
    AFTER = True


class WriteContext:
    """Who writes and why (PROTOCOL.md's writeContext); a dict works as well."""

    __slots__ = ("agent_id", "task_id", "write_seq", "source", "read_at")

    def __init__(self, agent_id=None, task_id=None, write_seq=None, source=None, read_at=None):
        self.agent_id, self.task_id, self.write_seq = agent_id, task_id, write_seq
        self.source, self.read_at = source, read_at

    def to_document(self):
        d = {}
        for field, key in (("agent_id", "agentId"), ("task_id", "taskId"), ("write_seq", "writeSeq"),
                           ("source", "source"), ("read_at", "readAt")):
            v = getattr(self, field)
            if v is not None:
                d[key] = v
        return d


def _write_context(wc):
    if wc is None:
        return None
    if isinstance(wc, WriteContext):
        return wc.to_document()
    if isinstance(wc, collections.abc.Mapping):
        return dict(wc)
    raise TypeError("write_context is a dict or a gatedb.WriteContext, not %s" % type(wc).__name__)


class _Result:
    __slots__ = ("raw_result",)
    acknowledged = True

    def __init__(self, raw):
        self.raw_result = raw

    @property
    def replayed(self):
        """True when an idempotent retry got the original reply (nothing ran again)."""
        return bool(self.raw_result.get("replayed", False))

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.raw_result)


class InsertOneResult(_Result):
    __slots__ = ("inserted_id",)

    def __init__(self, inserted_id, raw):
        super().__init__(raw)
        self.inserted_id = inserted_id


class InsertManyResult(_Result):
    __slots__ = ("inserted_ids",)

    def __init__(self, inserted_ids, raw):
        super().__init__(raw)
        self.inserted_ids = inserted_ids


class UpdateResult(_Result):
    __slots__ = ()

    @property
    def matched_count(self):
        return self.raw_result.get("n", 0) - len(self.raw_result.get("upserted", ()))

    @property
    def modified_count(self):
        return self.raw_result.get("nModified", 0)

    @property
    def upserted_id(self):
        up = self.raw_result.get("upserted")
        return up[0]["_id"] if up else None

    @property
    def version_conflicts(self):
        """The MongoDB idiom's misses: statements whose version equality matched nothing."""
        return self.raw_result.get("versionConflicts", [])


class DeleteResult(_Result):
    __slots__ = ()

    @property
    def deleted_count(self):
        return self.raw_result.get("n", 0)


def _raise_for(reply):
    if not reply.get("ok"):
        raise OperationFailure(reply.get("errmsg", "command failed"), reply.get("code"), reply)


class Database:
    """An opened data directory: pymongo's MongoClient role.

    ``Database(path, **options)`` opens (by default creating) it; options are
    gatedb::Options' (``sync``, ``lock_timeout_ms``, ...). ``types`` chooses
    the classes returned for ObjectId, Int64, Decimal128, ...: "gatedb"
    (this package's), "pymongo" (Debian's python3-bson), or "auto" (pymongo's
    when installed; ``GATEDB_PYTHON_PURE=1`` forces gatedb's).
    ``db["app"]["tasks"]`` is a collection. Thread-safe; close() waits for
    calls in flight.
    """

    def __init__(self, path, *, types="auto", **options):
        self._types = _choose_types(types)
        self._lib = _ffi.lib()
        rc, handle, message = _ffi.open_db(path, options)
        if rc != 0:
            raise OperationFailure(message or "gatedb_open failed", rc, {"ok": 0, "code": rc, "errmsg": message})
        self._handle = handle
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._closing = False
        self._inflight = 0

    # -- lifetime
    def close(self):
        with self._lock:
            handle, self._handle = getattr(self, "_handle", None), None
            self._closing = True
            busy = self._inflight > 0
        if busy:
            self._idle.wait()
        if handle:
            self._lib.gatedb_close(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # -- commands
    @property
    def types(self):
        """The classes decoded values have (gatedb.types, or pymongo's bson)."""
        return self._types

    def _run_bytes(self, data):
        # The handle is read once; close() swaps it out under the lock and
        # waits for the calls counted in flight to finish.
        lock = self._lock
        with lock:
            handle = self._handle
            if handle is None:
                raise InvalidOperation("the database is closed")
            self._inflight += 1
        try:
            rc, reply = _ffi.command(self._lib, handle, data)
        finally:
            with lock:
                self._inflight -= 1
                if self._closing and self._inflight == 0:
                    self._idle.set()
        if reply is None:
            raise OperationFailure("gatedb_command failed without a reply", rc)
        return _bson.decode_document(reply, self._types)

    def _run(self, cmd, session=None):
        if session is not None:
            session._apply(cmd)
        reply = self._run_bytes(_bson.encode_document(cmd))
        if session is not None:
            session._saw(reply)
        _raise_for(reply)
        return reply

    def command(self, cmd, *, session=None):
        """Runs a command document as given (its "$db", else "admin"); returns the reply."""
        cmd = dict(cmd)
        cmd.setdefault("$db", "admin")
        return self._run(cmd, session)

    def __getitem__(self, name):
        return DatabaseHandle(self, name)

    def get_database(self, name):
        return DatabaseHandle(self, name)

    def list_database_names(self):
        return [d["name"] for d in self.command({"listDatabases": 1})["databases"]]

    # -- sessions and transactions
    def start_session(self, write_context=None):
        return Session(self, write_context)

    def transaction(self, write_context=None):
        """``with db.transaction() as s: coll.insert_one(doc, session=s)``: commits
        at the end of the block, aborts if it raises."""
        s = Session(self, write_context, owned=True)
        s.start_transaction()
        return s

    def with_transaction(self, fn, write_context=None, max_attempts=10):
        """Runs fn(session) in a transaction and commits, retrying the whole
        transaction on a TransientTransactionError (a write conflict)."""
        for attempt in range(max_attempts):
            s = self.transaction(write_context)
            try:
                with s:
                    result = fn(s)
                return result
            except OperationFailure as e:
                if not e.has_error_label("TransientTransactionError") or attempt + 1 == max_attempts:
                    raise
        raise AssertionError("unreachable")


def _choose_types(types):
    if types == "gatedb" or (types == "auto" and os.environ.get("GATEDB_PYTHON_PURE") == "1"):
        return _bson.GATEDB_TYPES
    if types in ("auto", "pymongo"):
        t = _bson.pymongo_types()
        if t is not None:
            return t
        if types == "pymongo":
            raise ImportError("types='pymongo' needs pymongo's bson module (Debian: python3-bson)")
        return _bson.GATEDB_TYPES
    raise ValueError("types is 'auto', 'gatedb' or 'pymongo', not %r" % (types,))


class DatabaseHandle:
    """One database (a name) of an opened data directory: pymongo's Database."""

    def __init__(self, client, name):
        self.client = client
        self.name = name

    def __getitem__(self, name):
        return Collection(self, name)

    def get_collection(self, name):
        return Collection(self, name)

    def command(self, cmd, *, session=None):
        cmd = dict(cmd)
        cmd["$db"] = self.name
        return self.client._run(cmd, session)

    def list_collection_names(self):
        reply = self.command({"listCollections": 1, "nameOnly": True})
        return [c["name"] for c in _drain(self, reply)]

    def create_collection(self, name, **options):
        """create with options passed through: conflictPolicy, versionField,
        validator, maxBasisAgeMs, ..."""
        cmd = {"create": name}
        cmd.update(options)
        self.command(cmd)
        return Collection(self, name)

    def drop_collection(self, name):
        try:
            self.command({"drop": name})
        except OperationFailure as e:
            if e.code != 26:  # NamespaceNotFound: already gone, as pymongo
                raise

    def transaction(self, write_context=None):
        return self.client.transaction(write_context)


def _drain(db, reply):
    """Every document of a cursor reply, following getMore."""
    cur = reply["cursor"]
    out = list(cur.get("firstBatch", ()))
    cid = cur.get("id", 0)
    coll = cur.get("ns", "").split(".", 1)[-1]
    while cid:
        r = db.command({"getMore": db.client.types.Int64(cid), "collection": coll})
        out.extend(r["cursor"]["nextBatch"])
        cid = r["cursor"]["id"]
    return out


def _sort_doc(sort):
    if sort is None or isinstance(sort, collections.abc.Mapping):
        return sort
    if isinstance(sort, str):
        return {sort: 1}
    return {k: d for k, d in sort}


class Collection:
    """One collection, with pymongo's methods plus gatedb's ``basis_version``,
    ``write_context`` and ``with_version_gate``."""

    def __init__(self, database, name):
        self.database = database
        self.name = name
        self._client = database.client
        self._version_field = None

    @property
    def full_name(self):
        return "%s.%s" % (self.database.name, self.name)

    def _cmd(self, cmd, session):
        cmd["$db"] = self.database.name
        return self._client._run(cmd, session)

    def _write(self, cmd, session, write_context):
        wc = _write_context(write_context)
        if wc is None and session is not None:
            wc = session._write_context
        if wc:
            cmd["writeContext"] = wc
        return self._cmd(cmd, session)

    @staticmethod
    def _single(reply):
        errors = reply.get("writeErrors")
        if errors:
            raise write_error(errors[0])
        return reply

    # -- inserts
    def insert_one(self, document, *, write_context=None, session=None, bypass_document_validation=False):
        if "_id" not in document:
            document = dict(document)
            document["_id"] = self._client.types.ObjectId()
        cmd = {"insert": self.name, "documents": [document]}
        if bypass_document_validation:
            cmd["bypassDocumentValidation"] = True
        reply = self._single(self._write(cmd, session, write_context))
        return InsertOneResult(document["_id"], reply)

    def insert_many(self, documents, ordered=True, *, write_context=None, session=None,
                    bypass_document_validation=False):
        docs = []
        for d in documents:
            if "_id" not in d:
                d = dict(d)
                d["_id"] = self._client.types.ObjectId()
            docs.append(d)
        if not docs:
            raise InvalidOperation("insert_many needs at least one document")
        cmd = {"insert": self.name, "documents": docs, "ordered": ordered}
        if bypass_document_validation:
            cmd["bypassDocumentValidation"] = True
        reply = self._write(cmd, session, write_context)
        if reply.get("writeErrors"):
            raise BulkWriteError("batch op errors occurred", 65, reply)
        return InsertManyResult([d["_id"] for d in docs], reply)

    # -- reads
    def find(self, filter=None, projection=None, *, sort=None, skip=0, limit=0, batch_size=0, hint=None,
             session=None, **kwargs):
        """A Cursor over the matching documents; batches arrive through getMore."""
        cmd = {"find": self.name, "filter": filter or {}}
        if projection is not None:
            cmd["projection"] = projection if isinstance(projection, collections.abc.Mapping) else {
                k: 1 for k in projection}
        if sort is not None:
            cmd["sort"] = _sort_doc(sort)
        if skip:
            cmd["skip"] = skip
        if limit:
            cmd["limit"] = abs(limit)
            if limit < 0:
                cmd["singleBatch"] = True
        if batch_size:
            cmd["batchSize"] = batch_size
        if hint is not None:
            cmd["hint"] = hint
        for k, v in kwargs.items():  # gatedb's own find fields (fieldVersions, ...)
            cmd[k] = v
        return Cursor(self, cmd, batch_size, session)

    def find_one(self, filter=None, projection=None, *, session=None, **kwargs):
        if filter is not None and not isinstance(filter, collections.abc.Mapping):
            filter = {"_id": filter}
        cmd = {"find": self.name, "filter": filter or {}, "limit": 1, "singleBatch": True}
        if projection is not None:
            cmd["projection"] = projection if isinstance(projection, collections.abc.Mapping) else {
                k: 1 for k in projection}
        for k, v in kwargs.items():
            cmd["sort" if k == "sort" else k] = _sort_doc(v) if k == "sort" else v
        batch = self._cmd(cmd, session)["cursor"]["firstBatch"]
        return batch[0] if batch else None

    def count_documents(self, filter, *, skip=0, limit=0, session=None):
        pipeline = [{"$match": filter}]
        if skip:
            pipeline.append({"$skip": skip})
        if limit:
            pipeline.append({"$limit": limit})
        pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
        batch = self._cmd({"aggregate": self.name, "pipeline": pipeline, "cursor": {}}, session)["cursor"]["firstBatch"]
        return batch[0]["n"] if batch else 0

    def aggregate(self, pipeline, *, batch_size=0, session=None):
        return Cursor(self, {"aggregate": self.name, "pipeline": list(pipeline),
                             "cursor": {"batchSize": batch_size} if batch_size else {}}, batch_size, session)

    def distinct(self, key, filter=None, *, session=None):
        return self._cmd({"distinct": self.name, "key": key, "query": filter or {}}, session)["values"]

    # -- updates and deletes
    def _update(self, filter, update, multi, upsert, basis_version, write_context, session, extra):
        stmt = {"q": filter, "u": update, "multi": multi, "upsert": upsert}
        if basis_version is not None:
            stmt["basisVersion"] = self._client.types.Int64(basis_version)
        stmt.update(extra)
        reply = self._single(self._write({"update": self.name, "updates": [stmt]}, session, write_context))
        return UpdateResult(reply)

    def update_one(self, filter, update, upsert=False, *, basis_version=None, write_context=None, session=None,
                   array_filters=None, hint=None):
        _check_operators(update, True)
        return self._update(filter, update, False, upsert, basis_version, write_context, session,
                            _extras(array_filters, hint))

    def update_many(self, filter, update, upsert=False, *, write_context=None, session=None, array_filters=None,
                    hint=None):
        _check_operators(update, True)
        return self._update(filter, update, True, upsert, None, write_context, session, _extras(array_filters, hint))

    def replace_one(self, filter, replacement, upsert=False, *, basis_version=None, write_context=None,
                    session=None, hint=None):
        _check_operators(replacement, False)
        return self._update(filter, replacement, False, upsert, basis_version, write_context, session,
                            _extras(None, hint))

    def _delete(self, filter, limit, basis_version, write_context, session):
        stmt = {"q": filter, "limit": limit}
        if basis_version is not None:
            stmt["basisVersion"] = self._client.types.Int64(basis_version)
        reply = self._single(self._write({"delete": self.name, "deletes": [stmt]}, session, write_context))
        return DeleteResult(reply)

    def delete_one(self, filter, *, basis_version=None, write_context=None, session=None):
        return self._delete(filter, 1, basis_version, write_context, session)

    def delete_many(self, filter, *, write_context=None, session=None):
        return self._delete(filter, 0, None, write_context, session)

    def _find_and_modify(self, filter, fields, projection, sort, upsert, return_document, basis_version,
                         write_context, session):
        cmd = {"findAndModify": self.name, "query": filter}
        cmd.update(fields)
        if projection is not None:
            cmd["fields"] = projection
        if sort is not None:
            cmd["sort"] = _sort_doc(sort)
        if upsert:
            cmd["upsert"] = True
        if return_document:
            cmd["new"] = True
        if basis_version is not None:
            cmd["basisVersion"] = self._client.types.Int64(basis_version)
        reply = self._write(cmd, session, write_context)
        return reply.get("value")

    def find_one_and_update(self, filter, update, projection=None, sort=None, upsert=False,
                            return_document=ReturnDocument.BEFORE, *, basis_version=None, write_context=None,
                            session=None):
        _check_operators(update, True)
        return self._find_and_modify(filter, {"update": update}, projection, sort, upsert, return_document,
                                     basis_version, write_context, session)

    def find_one_and_replace(self, filter, replacement, projection=None, sort=None, upsert=False,
                             return_document=ReturnDocument.BEFORE, *, basis_version=None, write_context=None,
                             session=None):
        _check_operators(replacement, False)
        return self._find_and_modify(filter, {"update": replacement}, projection, sort, upsert, return_document,
                                     basis_version, write_context, session)

    def find_one_and_delete(self, filter, projection=None, sort=None, *, basis_version=None, write_context=None,
                            session=None):
        return self._find_and_modify(filter, {"remove": True}, projection, sort, False, False, basis_version,
                                     write_context, session)

    # -- indexes
    def create_index(self, keys, **options):
        key = _sort_doc(keys)
        spec = {"key": key, "name": options.pop("name", "_".join("%s_%s" % (k, v) for k, v in key.items()))}
        spec.update(options)
        self._cmd({"createIndexes": self.name, "indexes": [spec]}, None)
        return spec["name"]

    def drop_index(self, name):
        self._cmd({"dropIndexes": self.name, "index": name}, None)

    def list_indexes(self):
        return _drain(self.database, self._cmd({"listIndexes": self.name}, None))

    def drop(self):
        self.database.drop_collection(self.name)

    # -- the version gate
    def version_field(self):
        """The collection's version field ("version" unless created with versionField)."""
        if self._version_field is None:
            reply = self.database.command({"listCollections": 1, "filter": {"name": self.name}})
            batch = reply["cursor"]["firstBatch"]
            self._version_field = (batch[0].get("options", {}).get("versionField") if batch else None) or "version"
        return self._version_field

    def with_version_gate(self, filter, decide, *, write_context=None, max_attempts=100, session=None):
        """Read, decide, write on that basis; on a VersionConflict decide again.

        ``decide(doc)`` returns an update (operators or a replacement) or None
        to write nothing. The write carries ``basis_version`` = the version
        decide saw; when it is refused because someone wrote first, the
        conflict's ``errInfo.current`` (the document as it is now) goes to
        decide again: no stale snapshot is ever reused. Returns the
        UpdateResult, or None when decide declined. Raises OperationFailure
        NoMatchingDocument (47) when nothing matches, and the last
        VersionConflictError after max_attempts.
        """
        vf = self.version_field()
        doc = self.find_one(filter, session=session)
        if doc is None:
            raise OperationFailure("no document matches %r" % (filter,), 47,
                                   {"ok": 0, "code": 47, "codeName": "NoMatchingDocument"})
        last = None
        for _ in range(max_attempts):
            update = decide(doc)
            if update is None:
                return None
            target = {"_id": doc["_id"]}
            basis = doc.get(vf, 0)
            try:
                if any(k.startswith("$") for k in update):
                    return self.update_one(target, update, basis_version=basis, write_context=write_context,
                                           session=session)
                return self.replace_one(target, update, basis_version=basis, write_context=write_context,
                                        session=session)
            except VersionConflictError as e:
                last = e
                current = (e.err_info or {}).get("current")
                if current is None:  # deleted meanwhile
                    raise
                doc = current
        raise last


def _extras(array_filters, hint):
    extra = {}
    if array_filters is not None:
        extra["arrayFilters"] = array_filters
    if hint is not None:
        extra["hint"] = hint
    return extra


def _check_operators(update, want_operators):
    if isinstance(update, list):  # a pipeline update: the server decides
        return
    if not update:
        raise ValueError("an update document must not be empty")
    first = next(iter(update))
    if want_operators and not first.startswith("$"):
        raise ValueError("update only works with $ operators (use replace_one for a replacement)")
    if not want_operators and first.startswith("$"):
        raise ValueError("replacement cannot hold $ operators (use update_one)")


class Cursor:
    """The documents of a find or aggregate, fetched a batch at a time.

    Iterating pulls batches with getMore; close() (or leaving a ``with``
    block, or exhausting it) kills the server cursor."""

    def __init__(self, collection, cmd, batch_size, session):
        self._coll = collection
        self._cmd = cmd
        self._batch_size = batch_size
        self._session = session
        self._buffer = None
        self._pos = 0
        self._id = 0
        self._started = False
        self._killed = False
        self.batches = 0

    def __iter__(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def cursor_id(self):
        return self._id

    def _fetch(self):
        if not self._started:
            self._started = True
            cur = self._coll._cmd(dict(self._cmd), self._session)["cursor"]
            self._buffer = cur["firstBatch"]
        else:
            cmd = {"getMore": self._coll._client.types.Int64(self._id), "collection": self._coll.name}
            if self._batch_size:
                cmd["batchSize"] = self._batch_size
            cur = self._coll._cmd(cmd, self._session)["cursor"]
            self._buffer = cur["nextBatch"]
        self._pos = 0
        self._id = cur.get("id", 0)
        self.batches += 1

    def __next__(self):
        while self._buffer is None or self._pos >= len(self._buffer):
            if self._killed or (self._started and not self._id):
                raise StopIteration
            self._fetch()
        doc = self._buffer[self._pos]
        self._pos += 1
        return doc

    def to_list(self):
        return list(self)

    def close(self):
        if self._id and not self._killed:
            self._killed = True
            cid, self._id = self._id, 0
            try:
                self._coll._cmd({"killCursors": self._coll.name, "cursors": [self._coll._client.types.Int64(cid)]},
                                None)
            except (OperationFailure, InvalidOperation):
                pass
        self._killed = True

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Session:
    """A logical session (lsid); in a transaction every command carries
    txnNumber and autocommit: false, the first one startTransaction."""

    def __init__(self, client, write_context=None, owned=False):
        self._client = client
        self._lsid = {"id": uuid.uuid4()}
        self._txn_number = 0
        self._in_txn = False
        self._first = False
        self._ran = False
        self._owned = owned
        self._write_context = _write_context(write_context)

    @property
    def session_id(self):
        return self._lsid

    @property
    def in_transaction(self):
        return self._in_txn

    def start_transaction(self):
        if self._in_txn:
            raise InvalidOperation("a transaction is already in progress")
        self._txn_number += 1
        self._in_txn = True
        self._first = True
        self._ran = False

    def _apply(self, cmd):
        cmd["lsid"] = self._lsid
        if self._in_txn:
            cmd["txnNumber"] = self._client.types.Int64(self._txn_number)
            cmd["autocommit"] = False
            if self._first:
                cmd["startTransaction"] = True

    def _saw(self, reply):
        if self._in_txn and self._first:
            self._first = False
            self._ran = True

    def _end(self, name):
        if not self._in_txn:
            raise InvalidOperation("no transaction is in progress")
        self._in_txn = False
        if not self._ran:
            return  # nothing was sent: nothing to commit or abort
        cmd = {name: 1, "$db": "admin", "lsid": self._lsid,
               "txnNumber": self._client.types.Int64(self._txn_number), "autocommit": False}
        if name == "commitTransaction" and self._write_context:
            cmd["writeContext"] = self._write_context
        reply = self._client._run_bytes(_bson.encode_document(cmd))
        _raise_for(reply)

    def commit_transaction(self):
        self._end("commitTransaction")

    def abort_transaction(self):
        self._end("abortTransaction")

    def end_session(self):
        if self._in_txn:
            self.abort_transaction()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._in_txn:
            if exc_type is None:
                self.commit_transaction()
            else:
                try:
                    self.abort_transaction()
                except OperationFailure:
                    pass  # the transaction may already be gone; the original error matters
        return False


def utcnow():
    """The current time as BSON stores it (UTC, millisecond precision)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
