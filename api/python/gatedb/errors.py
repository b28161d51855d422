"""Exceptions, named and shaped as pymongo's, carrying MongoDB's codes.

Every failure gatedb replies with becomes an ``OperationFailure`` (or a
subclass) whose ``code``, ``code_name``, ``details`` (the whole reply or
write error), ``err_info`` and ``error_labels`` are what the server said.
"""

__all__ = [
    "PyMongoError", "InvalidDocument", "InvalidBSON", "InvalidOperation", "OperationFailure",
    "WriteError", "DuplicateKeyError", "VersionConflictError", "BulkWriteError",
]


class PyMongoError(Exception):
    """The base of every gatedb exception (pymongo's name, so except clauses carry over)."""

    def __init__(self, message="", error_labels=None):
        super().__init__(message)
        self._message = message
        self._error_labels = set(error_labels or ())

    @property
    def error_labels(self):
        return frozenset(self._error_labels)

    def has_error_label(self, label):
        return label in self._error_labels


class InvalidDocument(PyMongoError, ValueError):
    """A value that cannot be encoded as BSON (raised before anything is sent)."""


class InvalidBSON(PyMongoError, ValueError):
    """Bytes that are not well-formed BSON."""


class InvalidOperation(PyMongoError):
    """A call that cannot be made in this state (a closed database, a finished cursor)."""


class OperationFailure(PyMongoError):
    """A command or a write that gatedb refused, with its MongoDB code."""

    def __init__(self, message, code=None, details=None, error_labels=None):
        if error_labels is None and details:
            error_labels = details.get("errorLabels")
        super().__init__(message, error_labels)
        self.code = code
        self.details = details or {}

    @property
    def code_name(self):
        return self.details.get("codeName")

    @property
    def err_info(self):
        return self.details.get("errInfo")

    def __str__(self):
        return "%s, full error: %r" % (self._message, self.details) if self.details else self._message


class WriteError(OperationFailure):
    """One statement's write error (the ``writeErrors`` entry is ``details``)."""


class DuplicateKeyError(WriteError):
    """DuplicateKey (11000)."""


class VersionConflictError(WriteError):
    """VersionConflict: the write's basis is stale; ``err_info`` holds
    ``current``, ``currentVersion``, ``conflictingFields``, ``lastWriter``,
    ``suggestedAction`` (PROTOCOL.md)."""


class BulkWriteError(OperationFailure):
    """A multi-statement write with write errors; ``details`` is the reply."""


def write_error(entry):
    """The exception for one writeErrors entry."""
    code = entry.get("code")
    message = entry.get("errmsg", "write error")
    if code == 11000 or code == 11001:
        return DuplicateKeyError(message, code, entry)
    if entry.get("codeName") == "VersionConflict":
        return VersionConflictError(message, code, entry)
    return WriteError(message, code, entry)
