"""Write results (pymongo's classes and attribute names) with gatedb's reply
extras, the write context, and ReturnDocument."""

import collections.abc
import dataclasses
import datetime

__all__ = ["ReturnDocument", "WriteContext", "InsertOneResult", "InsertManyResult", "UpdateResult",
           "DeleteResult"]


class ReturnDocument:
    """find_one_and_*: return the document as it was before the write, or after."""
    BEFORE = False
    AFTER = True


@dataclasses.dataclass(frozen=True)
class WriteContext:
    """Who writes and why (PROTOCOL.md's writeContext).  A dict with the
    protocol's names (agentId, taskId, writeSeq, source, readAt) works as well.

    task_id with write_seq is the idempotency key: the same key again
    returns the stored reply (``result.replayed``) without writing twice."""

    agent_id: str = None
    task_id: str = None
    write_seq: int = None
    source: str = None
    read_at: datetime.datetime = None

    _NAMES = (("agent_id", "agentId"), ("task_id", "taskId"), ("write_seq", "writeSeq"), ("source", "source"),
              ("read_at", "readAt"))

    def to_document(self):
        return {key: getattr(self, attr) for attr, key in self._NAMES if getattr(self, attr) is not None}


def write_context_document(wc):
    """The writeContext document of a WriteContext or a Mapping (None stays None)."""
    if wc is None:
        return None
    if isinstance(wc, WriteContext):
        return wc.to_document()
    if isinstance(wc, collections.abc.Mapping):
        return dict(wc)
    raise TypeError("write_context is a dict or a gatedb.WriteContext, not %s" % type(wc).__name__)


class _WriteResult:
    """The reply behind a result stays in ``raw_result``."""

    __slots__ = ("raw_result",)
    acknowledged = True

    def __init__(self, raw_result):
        self.raw_result = raw_result

    @property
    def replayed(self):
        """True when an idempotent retry (same taskId and writeSeq) got the
        stored reply of the first run; nothing was written again."""
        return bool(self.raw_result.get("replayed", False))

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.raw_result)


class InsertOneResult(_WriteResult):
    __slots__ = ("inserted_id",)

    def __init__(self, inserted_id, raw_result):
        super().__init__(raw_result)
        self.inserted_id = inserted_id


class InsertManyResult(_WriteResult):
    __slots__ = ("inserted_ids",)

    def __init__(self, inserted_ids, raw_result):
        super().__init__(raw_result)
        self.inserted_ids = inserted_ids


class UpdateResult(_WriteResult):
    """matched_count, modified_count, upserted_id as pymongo's; gatedb adds
    ``version_conflicts`` (statements whose version equality alone matched
    nothing) and, from with_version_gate, ``attempts``."""

    __slots__ = ("attempts",)

    def __init__(self, raw_result, attempts=1):
        self.raw_result = raw_result
        self.attempts = attempts

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
        return self.raw_result.get("versionConflicts", [])


class DeleteResult(_WriteResult):
    __slots__ = ()

    @property
    def deleted_count(self):
        return self.raw_result.get("n", 0)

    @property
    def version_conflicts(self):
        return self.raw_result.get("versionConflicts", [])
