"""Collection: pymongo's methods over gatedb's commands, plus gatedb's
``basis_version=``, ``write_context=`` and ``with_version_gate``.

Each method builds one command and turns the reply into pymongo's result
or exception; nothing is decided here that the library decides.  The hot
single-document calls (find_one, the *_one writes) assemble their command
from pre-encoded pieces: the command-name element and the "$db" element
are encoded once per collection, and only the caller's documents go
through the codec.
"""

import collections.abc
import struct

from .cursor import Cursor
from .errors import (BulkWriteError, InvalidDocument, OperationFailure, VersionConflictError, command_error,
                     write_error)
from .results import (DeleteResult, InsertManyResult, InsertOneResult, ReturnDocument, UpdateResult,
                      write_context_document)

_pack_i32 = struct.Struct("<i").pack
_pack_i64 = struct.Struct("<q").pack
_FIND_ONE_FLAGS = b"\x10limit\x00" + _pack_i32(1) + b"\x08singleBatch\x00\x01"
_BYPASS = b"\x08bypassDocumentValidation\x00\x01"
_NO_MATCH = 47  # NoMatchingDocument


def _cstring(s):
    b = s.encode()
    if b"\x00" in b:
        raise ValueError("a name holds a NUL byte: %r" % s)
    return b + b"\x00"


def _string_element(name, value):
    b = value.encode()
    return b"\x02" + _cstring(name) + _pack_i32(len(b) + 1) + b + b"\x00"


def _single_doc_array(name, doc):
    """An array element holding one encoded document: name: [doc]."""
    return b"\x04" + name + _pack_i32(len(doc) + 8) + b"\x030\x00" + doc + b"\x00"


def sort_document(key_or_list, direction=1):
    """pymongo's sort arguments ("a", [("a", 1), ("b", -1)], or a Mapping) as a document."""
    if key_or_list is None or isinstance(key_or_list, collections.abc.Mapping):
        return key_or_list
    if isinstance(key_or_list, str):
        return {key_or_list: direction}
    return {k: d for k, d in key_or_list}


def _projection(projection):
    if projection is None or isinstance(projection, collections.abc.Mapping):
        return projection
    return {k: 1 for k in projection}


def _check_update(update, operators):
    """An update (operators) or a replacement (none), as pymongo checks them."""
    if type(update) is not dict:
        if isinstance(update, list):
            if operators:
                return  # a pipeline update: the library decides
            raise TypeError("a replacement is a document, not a pipeline")
        if not isinstance(update, collections.abc.Mapping):
            raise TypeError("an update is a document, not %s" % type(update).__name__)
    if not update:
        raise ValueError("an update document must not be empty")
    first = next(iter(update))
    if isinstance(first, str) and first.startswith("$") is not operators:
        raise ValueError("update only works with $ operators (replace_one takes a replacement)" if operators
                         else "a replacement cannot hold $ operators (update_one takes those)")


def _is_update(update):
    return isinstance(update, list) or next(iter(update), "").startswith("$")


class Collection:
    """One collection of a database handle: ``db["app"]["tasks"]``."""

    def __init__(self, database, name):
        if not isinstance(name, str) or not name or "\x00" in name:
            raise ValueError("a collection name is a non-empty str without NUL, not %r" % (name,))
        self.database = database
        self.name = name
        self._client = database.client
        self._codec = self._client.codec
        self._handle = self._client._handle
        self._version_field = None
        self._heads = {}
        self._tail = _string_element("$db", database.name)

    def __repr__(self):
        return "Collection(%r, %r)" % (self.database, self.name)

    def __eq__(self, other):
        return isinstance(other, Collection) and (self.database, self.name) == (other.database, other.name)

    def __hash__(self):
        return hash((self.database.name, self.name))

    @property
    def full_name(self):
        return "%s.%s" % (self.database.name, self.name)

    # -- running commands
    def _head(self, command):
        """The first element, {command: <this collection>}, encoded once."""
        h = self._heads[command] = _string_element(command, self.name)
        return h

    def _send(self, command, body, session):
        """Runs {command: <this collection>, <body elements>, <session fields>, $db};
        returns the library's code and the reply bytes."""
        if session is not None:
            fields = {}
            session._apply(fields)
            body += self._codec.encode(fields)[4:-1]
        head = self._heads.get(command) or self._head(command)
        tail = self._tail
        rc, reply = self._handle.command(
            b"".join((_pack_i32(len(head) + len(body) + len(tail) + 5), head, body, tail, b"\x00")))
        if session is not None:
            session._sent()
        if reply is None:
            raise OperationFailure("gatedb_command returned no reply", rc)
        return rc, reply

    def _run(self, command, body, session):
        """_send, decoded; raises on ok: 0."""
        rc, reply = self._send(command, body, session)
        reply = self._codec.decode_reply(reply)
        if rc != 0:
            raise command_error(reply)
        return reply

    def _write_body(self, body, write_context, session):
        wc = write_context_document(write_context)
        if wc is None and session is not None:
            wc = session.write_context
        if wc:
            body += b"\x03writeContext\x00" + self._codec.encode(wc)
        return body

    def _single_write(self, command, array, stmt, write_context, session, flags=b""):
        """One statement (its encoded bytes) of insert/update/delete; raises its write error."""
        body = _single_doc_array(array, stmt) + flags
        if write_context is not None or session is not None:
            body = self._write_body(body, write_context, session)
        reply = self._run(command, body, session)
        if "writeErrors" in reply:
            raise write_error(reply["writeErrors"][0])
        return reply

    def _statement(self, filter, body, basis_version, extra):
        """A statement document: q, what the caller put in body, basisVersion, extra fields."""
        if filter is None or (type(filter) is not dict and not isinstance(filter, collections.abc.Mapping)):
            raise TypeError("a filter is a document, not %s" % type(filter).__name__)
        stmt = b"\x03q\x00" + self._codec.encode(filter) + body
        if basis_version is not None:
            stmt += b"\x12basisVersion\x00" + _int64_bytes(basis_version)
        if extra:
            stmt += self._codec.encode(extra)[4:-1]
        return _pack_i32(len(stmt) + 5) + stmt + b"\x00"

    def _command(self, cmd, session=None):
        """A command document addressed to this collection's database."""
        return self.database._command(cmd, session)

    # -- inserts
    def insert_one(self, document, *, write_context=None, session=None, bypass_document_validation=False):
        """Inserts one document; an ObjectId _id is added to it (in place, as
        pymongo does) when it has none."""
        if "_id" not in document:
            document["_id"] = self._codec.types.ObjectId()
        reply = self._single_write("insert", b"documents\x00", self._codec.encode(document), write_context, session,
                                   _BYPASS if bypass_document_validation else b"")
        return InsertOneResult(document["_id"], reply)

    def insert_many(self, documents, ordered=True, *, write_context=None, session=None,
                    bypass_document_validation=False):
        """Inserts the documents in one command; BulkWriteError lists the
        statements that failed (ordered: the first failure stops the rest)."""
        docs = list(documents)
        if not docs:
            raise TypeError("insert_many needs a non-empty list of documents")
        ObjectId = self._codec.types.ObjectId
        for d in docs:
            if "_id" not in d:
                d["_id"] = ObjectId()
        encode = self._codec.encode
        parts = [b"\x03%d\x00" % i + encode(d) for i, d in enumerate(docs)]
        array = b"".join(parts)
        body = b"\x04documents\x00" + _pack_i32(len(array) + 5) + array + b"\x00"
        body += b"\x08ordered\x00" + (b"\x01" if ordered else b"\x00")
        if bypass_document_validation:
            body += _BYPASS
        reply = self._run("insert", self._write_body(body, write_context, session), session)
        if reply.get("writeErrors"):
            raise BulkWriteError("batch op errors occurred", 65, reply)
        return InsertManyResult([d["_id"] for d in docs], reply)

    # -- reads
    def find(self, filter=None, projection=None, *, sort=None, skip=0, limit=0, batch_size=0, hint=None,
             session=None, **fields):
        """A Cursor over the matching documents; batches arrive through getMore.
        Other keywords are passed as find fields (fieldVersions, max_time_ms as maxTimeMS, ...)."""
        cmd = {"find": self.name, "filter": {} if filter is None else filter}
        if projection is not None:
            cmd["projection"] = _projection(projection)
        if sort is not None:
            cmd["sort"] = sort_document(sort)
        if skip:
            cmd["skip"] = skip
        if limit:
            cmd["limit"] = abs(limit)
            if limit < 0:
                cmd["singleBatch"] = True
        if batch_size:
            cmd["batchSize"] = batch_size
        if hint is not None:
            cmd["hint"] = sort_document(hint) if not isinstance(hint, str) else hint
        cmd.update(_command_fields(fields))
        return Cursor(self.database, cmd, batch_size, session)

    def find_one(self, filter=None, projection=None, *, session=None, **fields):
        """The first matching document, or None.  A filter that is not a
        Mapping is an _id, as in pymongo."""
        if filter is None:
            filter = {}
        elif type(filter) is not dict and not isinstance(filter, collections.abc.Mapping):
            filter = {"_id": filter}
        body = b"\x03filter\x00" + self._codec.encode(filter) + _FIND_ONE_FLAGS
        if projection is not None or fields:
            extra = {}
            if projection is not None:
                extra["projection"] = _projection(projection)
            if "sort" in fields:
                fields["sort"] = sort_document(fields["sort"])
            extra.update(_command_fields(fields))
            body += self._codec.encode(extra)[4:-1]
        rc, reply = self._send("find", body, session)
        if rc != 0:
            raise command_error(self._codec.decode(reply))
        return self._codec.first_batch_document(reply)

    def count_documents(self, filter, *, skip=0, limit=0, session=None):
        """How many documents match (an aggregate $match/$group, as pymongo counts)."""
        pipeline = [{"$match": filter}]
        if skip:
            pipeline.append({"$skip": skip})
        if limit:
            pipeline.append({"$limit": limit})
        pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
        reply = self._command({"aggregate": self.name, "pipeline": pipeline, "cursor": {}}, session)
        batch = reply["cursor"]["firstBatch"]
        return batch[0]["n"] if batch else 0

    def estimated_document_count(self, *, session=None):
        """The collection's size (the count command without a query)."""
        return self._command({"count": self.name}, session)["n"]

    def aggregate(self, pipeline, *, batch_size=0, session=None, **fields):
        """A Cursor over an aggregation pipeline's results."""
        cmd = {"aggregate": self.name, "pipeline": list(pipeline),
               "cursor": {"batchSize": batch_size} if batch_size else {}}
        cmd.update(_command_fields(fields))
        return Cursor(self.database, cmd, batch_size, session)

    def distinct(self, key, filter=None, *, session=None):
        return self._command({"distinct": self.name, "key": key, "query": filter or {}}, session)["values"]

    # -- updates and deletes
    def _update(self, filter, update, multi, upsert, basis_version, write_context, session, extra):
        if type(update) is dict or isinstance(update, collections.abc.Mapping):
            body = b"\x03u\x00" + self._codec.encode(update)
        else:
            body = self._codec.encode({"u": update})[4:-1]  # a pipeline: a list of stages
        if multi:
            body += b"\x08multi\x00\x01"
        if upsert:
            body += b"\x08upsert\x00\x01"
        stmt = self._statement(filter, body, basis_version, extra)
        return UpdateResult(self._single_write("update", b"updates\x00", stmt, write_context, session))

    def update_one(self, filter, update, upsert=False, *, basis_version=None, write_context=None, session=None,
                   array_filters=None, hint=None):
        """Updates the first matching document.  ``basis_version``: the version
        the writer read; a document that moved on since raises
        VersionConflictError (or is merged, by the collection's policy)."""
        if (type(update) is dict and type(filter) is dict and basis_version is not None and not upsert
                and write_context is None and session is None and array_filters is None and hint is None):
            first = next(iter(update), None)
            if type(first) is str and first[:1] == "$":
                return self._gated_update_one(filter, update, basis_version)
        _check_update(update, True)
        return self._update(filter, update, False, upsert, basis_version, write_context, session,
                            _statement_fields(array_filters, hint))

    def _gated_update_one(self, filter, update, basis_version):
        """update_one's common gated call (documents, a basis version, nothing
        else) with its command assembled in one join: what _update,
        _statement, _single_write and _send build, in fewer steps (the agent
        loop's hot path; the tests check both give the same bytes)."""
        encode = self._codec.encode
        q = encode(filter)
        u = encode(update)
        n = len(q) + len(u) + 33  # the statement: q, u, basisVersion (an int64), its length and end
        head = self._heads.get("update") or self._head("update")
        tail = self._tail
        rc, reply = self._handle.command(b"".join((
            _pack_i32(len(head) + len(tail) + n + 22), head, b"\x04updates\x00", _pack_i32(n + 8), b"\x030\x00",
            _pack_i32(n), b"\x03q\x00", q, b"\x03u\x00", u, b"\x12basisVersion\x00", _int64_bytes(basis_version),
            b"\x00\x00", tail, b"\x00")))
        if reply is None:
            raise OperationFailure("gatedb_command returned no reply", rc)
        reply = self._codec.decode_reply(reply)
        if rc != 0:
            raise command_error(reply)
        if "writeErrors" in reply:
            raise write_error(reply["writeErrors"][0])
        return UpdateResult(reply)

    def update_many(self, filter, update, upsert=False, *, write_context=None, session=None, array_filters=None,
                    hint=None):
        _check_update(update, True)
        return self._update(filter, update, True, upsert, None, write_context, session,
                            _statement_fields(array_filters, hint))

    def replace_one(self, filter, replacement, upsert=False, *, basis_version=None, write_context=None,
                    session=None, hint=None):
        _check_update(replacement, False)
        return self._update(filter, replacement, False, upsert, basis_version, write_context, session,
                            _statement_fields(None, hint))

    def _delete(self, filter, limit, basis_version, write_context, session, hint):
        stmt = self._statement(filter, b"\x10limit\x00" + _pack_i32(limit), basis_version,
                               {"hint": hint} if hint is not None else None)
        return DeleteResult(self._single_write("delete", b"deletes\x00", stmt, write_context, session))

    def delete_one(self, filter, *, basis_version=None, write_context=None, session=None, hint=None):
        return self._delete(filter, 1, basis_version, write_context, session, hint)

    def delete_many(self, filter, *, write_context=None, session=None, hint=None):
        return self._delete(filter, 0, None, write_context, session, hint)

    def _find_and_modify(self, filter, fields, projection, sort, upsert, return_document, basis_version,
                         write_context, session):
        cmd = {"findAndModify": self.name, "query": filter}
        cmd.update(fields)
        if projection is not None:
            cmd["fields"] = _projection(projection)
        if sort is not None:
            cmd["sort"] = sort_document(sort)
        if upsert:
            cmd["upsert"] = True
        if return_document:
            cmd["new"] = True
        if basis_version is not None:
            cmd["basisVersion"] = self._codec.types.Int64(basis_version)
        wc = write_context_document(write_context)
        if wc is None and session is not None:
            wc = session.write_context
        if wc:
            cmd["writeContext"] = wc
        return self._command(cmd, session).get("value")

    def find_one_and_update(self, filter, update, projection=None, sort=None, upsert=False,
                            return_document=ReturnDocument.BEFORE, *, basis_version=None, write_context=None,
                            session=None):
        """findAndModify: the document before the update (or after, with
        return_document=ReturnDocument.AFTER), None when nothing matched."""
        _check_update(update, True)
        return self._find_and_modify(filter, {"update": update}, projection, sort, upsert, return_document,
                                     basis_version, write_context, session)

    def find_one_and_replace(self, filter, replacement, projection=None, sort=None, upsert=False,
                             return_document=ReturnDocument.BEFORE, *, basis_version=None, write_context=None,
                             session=None):
        _check_update(replacement, False)
        return self._find_and_modify(filter, {"update": replacement}, projection, sort, upsert, return_document,
                                     basis_version, write_context, session)

    def find_one_and_delete(self, filter, projection=None, sort=None, *, basis_version=None, write_context=None,
                            session=None):
        return self._find_and_modify(filter, {"remove": True}, projection, sort, False, False, basis_version,
                                     write_context, session)

    # -- indexes
    def create_index(self, keys, *, session=None, **options):
        """createIndexes with one index; returns its name (MongoDB's default
        name, a_1_b_-1, unless ``name=`` is given)."""
        key = sort_document(keys)
        spec = {"key": key, "name": options.pop("name", "_".join("%s_%s" % kv for kv in key.items()))}
        spec.update(options)
        self._command({"createIndexes": self.name, "indexes": [spec]}, session)
        return spec["name"]

    def drop_index(self, index, *, session=None):
        """dropIndexes by name, or by the keys create_index was given."""
        name = index if isinstance(index, str) else "_".join("%s_%s" % kv for kv in sort_document(index).items())
        self._command({"dropIndexes": self.name, "index": name}, session)

    def list_indexes(self, *, session=None):
        return Cursor(self.database, {"listIndexes": self.name}, 0, session)

    def drop(self, *, session=None):
        self.database.drop_collection(self.name, session=session)

    # -- the version gate
    def version_field(self):
        """The collection's version field ("version" unless created with
        versionField), read once from listCollections."""
        if self._version_field is None:
            reply = self._command({"listCollections": 1, "filter": {"name": self.name},
                                   "authorizedCollections": True})
            batch = reply["cursor"]["firstBatch"]
            options = batch[0].get("options", {}) if batch else {}
            self._version_field = options.get("versionField") or "version"
        return self._version_field

    def with_version_gate(self, filter, decide, *, write_context=None, max_attempts=100, session=None):
        """Read, decide, write on that basis; on a VersionConflict decide again.

        Reads the document matching ``filter`` and calls ``decide(doc)``,
        which returns an update (operators, or a replacement) or None to
        write nothing.  The write goes to that document's _id with
        basis_version = the version decide saw.  When it is refused because
        someone wrote first, the conflict's ``errInfo.current`` (the
        document as it is now) goes to decide again, without another read.

        Returns the UpdateResult (``attempts`` says how many writes it
        took), or None when decide declined.  Raises OperationFailure 47
        (NoMatchingDocument) when nothing matches or the document was
        deleted meanwhile, the last VersionConflictError when max_attempts
        writes were all refused, and any other refusal (StaleBasis,
        LeaseHeld, ...) as it came.
        """
        vf = self.version_field()
        doc = self.find_one(filter, session=session)
        if doc is None:
            raise OperationFailure("no document matches %r" % (filter,), _NO_MATCH,
                                   {"ok": 0.0, "code": _NO_MATCH, "codeName": "NoMatchingDocument"})
        for attempt in range(1, max_attempts + 1):
            update = decide(doc)
            if update is None:
                return None
            target = {"_id": doc["_id"]}
            basis = doc.get(vf, 0)
            try:
                if _is_update(update):
                    result = self.update_one(target, update, basis_version=basis, write_context=write_context,
                                             session=session)
                else:
                    result = self.replace_one(target, update, basis_version=basis, write_context=write_context,
                                              session=session)
            except VersionConflictError as e:
                doc = e.current
                if doc is None or attempt == max_attempts:
                    raise
                continue
            result.attempts = attempt
            return result


def _int64_bytes(v):
    """A version number (an int or an Int64; never a bool or a float) as BSON int64."""
    if type(v) is not int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("basis_version is an int, not %s" % type(v).__name__)
        v = int(v)
    try:
        return _pack_i64(v)
    except struct.error:
        raise InvalidDocument("basis_version %d does not fit in int64" % v) from None


def _statement_fields(array_filters, hint):
    extra = {}
    if array_filters is not None:
        extra["arrayFilters"] = array_filters
    if hint is not None:
        extra["hint"] = hint
    return extra


_PYMONGO_NAMES = {"max_time_ms": "maxTimeMS", "allow_disk_use": "allowDiskUse", "field_versions": "fieldVersions"}


def _command_fields(fields):
    """Keyword arguments as command fields: pymongo's snake_case names for the
    common ones, anything else passed under its own name."""
    return {_PYMONGO_NAMES.get(k, k): v for k, v in fields.items()}
