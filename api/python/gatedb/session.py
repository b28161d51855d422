"""Sessions and snapshot transactions, driven by MongoDB's session fields
(PROTOCOL.md, "Snapshot transactions"): every command of a session carries
``lsid`` ({id: a random UUID as Binary subtype 4}); inside a transaction
also ``txnNumber`` (Int64, one higher for each transaction) and
``autocommit: false``, the first one ``startTransaction: true``; the end is
``commitTransaction`` or ``abortTransaction`` on admin.
"""

import uuid

from .errors import InvalidOperation, PyMongoError
from .results import write_context_document

_NONE, _STARTING, _IN_PROGRESS = range(3)


class Session:
    """A logical session; pass it as ``session=`` to collection methods.

    ``with db.transaction() as s:`` starts a transaction, commits at the
    end of the block and aborts if the block raises.  pymongo's shape works
    too: ``with db.start_session() as s: with s.start_transaction(): ...``.
    ``write_context`` is the default for the session's writes and is sent
    with commitTransaction.  Leaving a ``with`` block of the session itself
    ends it: a transaction still open is committed when the session came
    from transaction(), aborted otherwise (pymongo's end_session).
    """

    def __init__(self, client, write_context=None, commit_on_exit=False):
        self._client = client
        self._commit_on_exit = commit_on_exit
        self._lsid = {"id": client.codec.types.Binary(uuid.uuid4().bytes, 4)}
        self._txn_number = 0
        self._state = _NONE
        self.write_context = write_context_document(write_context)

    @property
    def session_id(self):
        return self._lsid

    @property
    def in_transaction(self):
        return self._state != _NONE

    def start_transaction(self):
        """Starts a transaction; returns a context manager that commits it
        at the end of its block (aborts when the block raises)."""
        if self._state != _NONE:
            raise InvalidOperation("a transaction is already in progress")
        self._txn_number += 1
        self._state = _STARTING
        return _TransactionBlock(self)

    def _apply(self, cmd):
        """Adds the session's fields to a command document about to be sent."""
        cmd["lsid"] = self._lsid
        if self._state != _NONE:
            cmd["txnNumber"] = self._client.codec.types.Int64(self._txn_number)
            if self._state == _STARTING:
                cmd["startTransaction"] = True
            cmd["autocommit"] = False

    def _sent(self):
        """A command of the session reached the library (so did its transaction)."""
        if self._state == _STARTING:
            self._state = _IN_PROGRESS

    def _finish(self, name):
        if self._state == _NONE:
            raise InvalidOperation("no transaction is in progress")
        sent = self._state == _IN_PROGRESS
        self._state = _NONE
        if not sent:
            return  # no command went out: the library never saw this transaction
        cmd = {name: 1, "lsid": self._lsid, "txnNumber": self._client.codec.types.Int64(self._txn_number),
               "autocommit": False, "$db": "admin"}
        if name == "commitTransaction" and self.write_context:
            cmd["writeContext"] = self.write_context
        self._client._run(cmd)

    def commit_transaction(self):
        self._finish("commitTransaction")

    def abort_transaction(self):
        self._finish("abortTransaction")

    def end_session(self):
        """Aborts a transaction still open."""
        if self._state != _NONE:
            self._abort_quietly()

    def _abort_quietly(self):
        try:
            self.abort_transaction()
        except PyMongoError:
            pass  # the transaction may already be gone; the error that got us here matters

    def _end_block(self, failed):
        if self._state == _NONE:
            return
        if failed:
            self._abort_quietly()
        else:
            self.commit_transaction()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._commit_on_exit:
            self._end_block(exc_type is not None)
        else:
            self.end_session()
        return False


class _TransactionBlock:
    """What Session.start_transaction returns: ``with`` commits or aborts."""

    def __init__(self, session):
        self._session = session

    def __enter__(self):
        return self._session

    def __exit__(self, exc_type, exc, tb):
        self._session._end_block(exc_type is not None)
        return False


def with_transaction(start, fn, max_attempts):
    """Runs fn(session) in a transaction from start() and commits, retrying
    the whole transaction while it fails with TransientTransactionError
    (a write conflict with another transaction)."""
    for attempt in range(1, max_attempts + 1):
        session = start()
        try:
            with session:
                return fn(session)
        except PyMongoError as e:
            if attempt == max_attempts or not e.has_error_label("TransientTransactionError"):
                raise
