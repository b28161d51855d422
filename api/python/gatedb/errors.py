"""Exceptions, named and shaped as pymongo's, carrying gatedb's codes.

Every failure gatedb replies with becomes an ``OperationFailure`` (or a
subclass) whose ``code``, ``code_name``, ``details`` (the whole reply, or
the writeErrors entry), ``err_info`` and ``error_labels`` are what the
library said; nothing is reworded or dropped.
"""

__all__ = [
    "PyMongoError", "InvalidDocument", "InvalidBSON", "InvalidOperation", "OperationFailure",
    "WriteError", "DuplicateKeyError", "VersionConflictError", "BulkWriteError",
]

DUPLICATE_KEY = 11000
VERSION_CONFLICT = "VersionConflict"


class PyMongoError(Exception):
    """The base of every gatedb exception (pymongo's name, so except clauses carry over)."""

    def __init__(self, message="", error_labels=None):
        super().__init__(message)
        self._message = message
        self._error_labels = frozenset(error_labels or ())

    @property
    def error_labels(self):
        return self._error_labels

    def has_error_label(self, label):
        return label in self._error_labels


class InvalidDocument(PyMongoError, ValueError):
    """A value that cannot be encoded as BSON (raised before anything is sent)."""


class InvalidBSON(PyMongoError, ValueError):
    """Bytes that are not well-formed BSON."""


class InvalidOperation(PyMongoError):
    """A call that cannot be made in this state (a closed database, a finished transaction)."""


class OperationFailure(PyMongoError):
    """A command or a write that gatedb refused, with its MongoDB code.

    ``details`` is the reply (or the writeErrors entry) as gatedb sent it."""

    def __init__(self, message, code=None, details=None, error_labels=None):
        details = details if details is not None else {}
        if error_labels is None:
            error_labels = details.get("errorLabels")
        super().__init__(message, error_labels)
        self.code = code
        self.details = details

    @property
    def code_name(self):
        return self.details.get("codeName")

    @property
    def err_info(self):
        return self.details.get("errInfo")

    def __str__(self):
        return "%s, full error: %r" % (self._message, self.details) if self.details else self._message


class WriteError(OperationFailure):
    """One statement's write error (``details`` is its writeErrors entry, or
    the reply of a findAndModify)."""


class DuplicateKeyError(WriteError):
    """DuplicateKey (11000): ``details`` has keyPattern and keyValue."""


class VersionConflictError(WriteError):
    """VersionConflict: the write's basis is stale.  ``err_info`` holds
    ``current`` (the document as it is now), ``currentVersion``,
    ``basisVersion``, ``conflictingFields``, ``lastWriter``, ``reason``,
    ``suggestedAction`` (PROTOCOL.md), so the writer can decide again
    without another read."""

    @property
    def current(self):
        return (self.err_info or {}).get("current")

    @property
    def current_version(self):
        return (self.err_info or {}).get("currentVersion")


class BulkWriteError(OperationFailure):
    """A multi-statement write with write errors; ``details`` is the reply
    (``writeErrors``, ``n``, ...), as pymongo's BulkWriteError."""


def _write_error_class(code, code_name):
    if code == DUPLICATE_KEY:
        return DuplicateKeyError
    if code_name == VERSION_CONFLICT:
        return VersionConflictError
    return WriteError


def write_error(entry):
    """The exception for one writeErrors entry."""
    cls = _write_error_class(entry.get("code"), entry.get("codeName"))
    return cls(entry.get("errmsg", "write error"), entry.get("code"), entry)


def command_error(reply):
    """The exception for a reply with ok: 0.  DuplicateKey and VersionConflict
    are their WriteError subclasses here too (findAndModify refuses its one
    statement at the top level), as pymongo raises DuplicateKeyError."""
    code = reply.get("code")
    cls = _write_error_class(code, reply.get("codeName"))
    if cls is WriteError:
        cls = OperationFailure
    return cls(reply.get("errmsg", "command failed"), code, reply)
