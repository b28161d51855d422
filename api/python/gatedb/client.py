"""Database: an opened data directory, in pymongo's MongoClient role."""

import os

from . import _ffi
from . import codec as _codec
from . import session as _session
from .database import DatabaseHandle
from .errors import OperationFailure, command_error


class Database:
    """``gatedb.Database(path, **options)`` opens (by default creating) the
    data directory at ``path``; ``db["app"]["tasks"]`` is a collection.

    Options are gatedb::Options' (gatedb/options.h): create_if_missing,
    error_if_exists, sync, lock_timeout_ms, block_cache_bytes,
    journal_retention_ms, journal_max_events, idempotency_retention_sec,
    ttl_interval_ms, transaction_lifetime_ms, cursor_timeout_ms,
    sort_memory_bytes, unauthenticated_root.  ``user`` (and ``user_db``,
    default "admin"): every call runs as that user, checked against its
    roles; ``as_user`` gives more handles acting as others.  ``codec`` is
    "pure", "pymongo" or None (gatedb.codec says which is chosen and which
    classes each returns).

    Thread-safe: any number of threads may run commands at once; close()
    waits for the calls in flight, and a call after it raises
    InvalidOperation.  One process may open a directory once (RocksDB's lock).
    """

    def __init__(self, path, *, codec=None, user=None, user_db="admin", **options):
        self.codec = _codec.get(codec)
        self.path = os.fspath(path)
        self.user = user
        self._handle = _ffi.Handle(path, options, (user, user_db) if user else None)

    def as_user(self, user, user_db="admin"):
        """A Database on the same store acting as ``user`` (a user made with
        createUser): its calls are checked against that user's roles and its
        writes name it as the agent.  Close it on its own; the store stays
        open while any of them is.  Raises OperationFailure (UserNotFound)."""
        other = Database.__new__(Database)
        other.codec = self.codec
        other.path = self.path
        other.user = user
        other._handle = _ffi.Handle.as_user(self._handle, user, user_db)
        return other

    def __repr__(self):
        return "gatedb.Database(%r, codec=%r)" % (self.path, self.codec.name)

    @property
    def types(self):
        """The classes this database's values decode to (ObjectId, Int64, ...)."""
        return self.codec.types

    # -- lifetime
    @property
    def closed(self):
        return self._handle.closed

    def close(self):
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        handle = self.__dict__.get("_handle")
        if handle is not None:
            handle.close()

    # -- commands
    def _run(self, cmd, session=None):
        """Runs a command document of ours (session fields are added to it)."""
        if session is not None:
            session._apply(cmd)
        rc, reply = self._handle.command(self.codec.encode(cmd))
        if session is not None:
            session._sent()
        if reply is None:
            raise OperationFailure("gatedb_command returned no reply", rc)
        reply = self.codec.decode_reply(reply)
        if rc != 0:
            raise command_error(reply)
        return reply

    def command(self, cmd, *, session=None):
        """Runs a command document as given, on its "$db" (else admin);
        returns the reply, raises OperationFailure on ok: 0."""
        cmd = dict(cmd)
        cmd.setdefault("$db", "admin")
        return self._run(cmd, session)

    def command_json(self, command, canonical=False):
        """Runs a command given as Extended JSON (gatedb_command_json);
        returns the reply as Extended JSON text, relaxed or canonical."""
        rc, reply = self._handle.command_json(command, _ffi.JSON_CANONICAL if canonical else _ffi.JSON_RELAXED)
        if reply is None:
            raise OperationFailure("gatedb_command_json returned no reply", rc)
        return reply

    def __getitem__(self, name):
        return DatabaseHandle(self, name)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return DatabaseHandle(self, name)

    def get_database(self, name):
        return DatabaseHandle(self, name)

    def list_database_names(self):
        return [d["name"] for d in self.command({"listDatabases": 1})["databases"]]

    # -- sessions and transactions
    def start_session(self, write_context=None):
        """A session for ``session=`` arguments (pymongo's start_session)."""
        return _session.Session(self, write_context)

    def transaction(self, write_context=None):
        """``with db.transaction() as s: coll.insert_one(doc, session=s)``:
        a session with a transaction started, committed at the end of the
        block (with ``write_context`` on commitTransaction), aborted if the
        block raises."""
        s = _session.Session(self, write_context, commit_on_exit=True)
        s.start_transaction()
        return s

    def with_transaction(self, fn, write_context=None, max_attempts=10):
        """Runs fn(session) in a transaction and commits; retries the whole
        transaction on TransientTransactionError.  Returns fn's result."""
        return _session.with_transaction(lambda: self.transaction(write_context), fn, max_attempts)


def library_version():
    """The loaded libgatedb's version ("0.2.0")."""
    return _ffi.version()
