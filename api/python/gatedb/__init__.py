"""gatedb for Python: the embedded document store with version gating.

    import gatedb
    with gatedb.Database("./agents-data") as db:
        orders = db["shop"]["orders"]
        orders.insert_one({"_id": "o1", "total": 0})
        orders.with_version_gate({"_id": "o1"}, lambda doc: {"$inc": {"total": 5}},
                                 write_context={"agentId": "pricing"})

Standard library only: ctypes over libgatedb's C ABI (gatedb/gatedb_c.h)
and a BSON codec of its own; pymongo's method names, result types and
exception names.

The BSON classes exported here (ObjectId, Int64, Decimal128, Binary, Regex,
Timestamp, MinKey, MaxKey, Code) are those of the default codec: pymongo's
(bson.ObjectId, ...) when pymongo's bson with its C extension is importable
and GATEDB_PYTHON_PURE is not "1", otherwise gatedb's own (gatedb.types).
``gatedb.CODEC`` names which.  DBPointer and DatetimeMS are always
gatedb's.  Both codecs accept both families when encoding.
"""

from . import codec as _codec
from . import errors, types
from .client import Database, library_version
from .codec import Codec
from .collection import Collection
from .cursor import Cursor
from .database import DatabaseHandle
from .errors import (BulkWriteError, DuplicateKeyError, InvalidBSON, InvalidDocument, InvalidOperation,
                     OperationFailure, PyMongoError, VersionConflictError, WriteError)
from .results import (DeleteResult, InsertManyResult, InsertOneResult, ReturnDocument, UpdateResult,
                      WriteContext)
from .session import Session
from .types import DatetimeMS, DBPointer

CODEC = _codec.get().name
_default_types = _codec.get().types
ObjectId = _default_types.ObjectId
Int64 = _default_types.Int64
Decimal128 = _default_types.Decimal128
Binary = _default_types.Binary
Regex = _default_types.Regex
Timestamp = _default_types.Timestamp
MinKey = _default_types.MinKey
MaxKey = _default_types.MaxKey
Code = _default_types.Code
del _default_types

__version__ = "0.2.0"

__all__ = [
    "Database", "DatabaseHandle", "Collection", "Cursor", "Session", "Codec", "CODEC", "library_version",
    "ReturnDocument", "WriteContext", "InsertOneResult", "InsertManyResult", "UpdateResult", "DeleteResult",
    "PyMongoError", "OperationFailure", "WriteError", "DuplicateKeyError", "VersionConflictError",
    "BulkWriteError", "InvalidDocument", "InvalidBSON", "InvalidOperation",
    "ObjectId", "Int64", "Decimal128", "Binary", "Regex", "Timestamp", "MinKey", "MaxKey", "Code",
    "DBPointer", "DatetimeMS", "errors", "types",
]
