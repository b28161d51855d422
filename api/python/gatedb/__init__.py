"""gatedb for Python: the embedded document store with version gating.

    import gatedb
    with gatedb.Database("./agents-data") as db:
        orders = db["shop"]["orders"]
        orders.insert_one({"_id": "o1", "total": 0})
        orders.with_version_gate({"_id": "o1"}, lambda doc: {"$inc": {"total": 5}},
                                 write_context={"agentId": "pricing"})

Standard library only: ctypes over libgatedb's C ABI (gatedb/gatedb_c.h),
and a BSON codec of its own. pymongo's method names, result types and
exception names; pymongo's bson types are accepted, and returned when
installed (``Database(types=...)``).
"""

from . import errors
from .client import (Collection, Cursor, Database, DatabaseHandle, DeleteResult, InsertManyResult,
                     InsertOneResult, ReturnDocument, Session, UpdateResult, WriteContext, utcnow)
from .errors import (BulkWriteError, DuplicateKeyError, InvalidBSON, InvalidDocument, InvalidOperation,
                     OperationFailure, PyMongoError, VersionConflictError, WriteError)
from .types import (Binary, Code, DatetimeMS, DBPointer, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex,
                    Timestamp)


def library_version():
    """The loaded libgatedb's version ("0.2.0")."""
    from . import _ffi
    return _ffi.lib().gatedb_version().decode()


__version__ = "0.2.0"
