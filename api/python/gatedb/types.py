"""gatedb's own BSON value types, for the BSON types Python has no class for.

Each keeps its value exactly as BSON holds it, so that a document read from
gatedb and written back is byte for byte the same. When Debian's
python3-bson (pymongo's ``bson``) is installed, its classes are accepted
wherever these are, and returned instead of these (``Database(types=...)``).
"""

import datetime
import decimal
import os
import struct
import threading
import time

__all__ = [
    "ObjectId", "Int64", "Decimal128", "Binary", "Regex", "Timestamp", "MinKey", "MaxKey",
    "Code", "DBPointer", "DatetimeMS",
]


class Int64(int):
    """An int stored as BSON int64 (a plain int is stored as int32 when it fits)."""

    __slots__ = ()

    def __repr__(self):
        return "Int64(%d)" % int(self)


class ObjectId:
    """A 12-byte BSON ObjectId: 4 bytes of seconds, 5 random bytes, a 3-byte counter."""

    __slots__ = ("_bytes",)
    _lock = threading.Lock()
    _counter = int.from_bytes(os.urandom(3), "big")
    _random = os.urandom(5)
    _pid = os.getpid()

    def __init__(self, oid=None):
        if oid is None:
            self._bytes = self._generate()
        elif isinstance(oid, ObjectId):
            self._bytes = oid._bytes
        elif isinstance(oid, (bytes, bytearray)) and len(oid) == 12:
            self._bytes = bytes(oid)
        elif isinstance(oid, str) and len(oid) == 24:
            try:
                self._bytes = bytes.fromhex(oid)
            except ValueError:
                raise ValueError("%r is not a valid ObjectId: 24 hex digits expected" % oid) from None
        else:
            raise ValueError("%r is not a valid ObjectId: 12 bytes or 24 hex digits expected" % (oid,))

    @classmethod
    def _generate(cls):
        with cls._lock:
            if os.getpid() != cls._pid:  # a forked child must not repeat its parent's ids
                cls._pid = os.getpid()
                cls._random = os.urandom(5)
            cls._counter = (cls._counter + 1) & 0xFFFFFF
            counter = cls._counter
        return struct.pack(">I", int(time.time()) & 0xFFFFFFFF) + cls._random + counter.to_bytes(3, "big")

    @property
    def binary(self):
        return self._bytes

    @property
    def generation_time(self):
        seconds = struct.unpack(">I", self._bytes[:4])[0]
        return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)

    def __str__(self):
        return self._bytes.hex()

    def __repr__(self):
        return "ObjectId('%s')" % self._bytes.hex()

    def __eq__(self, other):
        b = getattr(other, "binary", None)
        return isinstance(b, bytes) and len(b) == 12 and b == self._bytes

    def __lt__(self, other):
        return self._bytes < other.binary

    def __hash__(self):
        return hash(self._bytes)


class Binary(bytes):
    """Bytes with a BSON binary subtype (plain ``bytes`` are subtype 0)."""

    def __new__(cls, data, subtype=0):
        if not 0 <= subtype <= 255:
            raise ValueError("a binary subtype is 0 to 255, not %r" % (subtype,))
        self = super().__new__(cls, data)
        self._subtype = subtype
        return self

    @property
    def subtype(self):
        return self._subtype

    def __eq__(self, other):
        if isinstance(other, Binary) or hasattr(other, "subtype"):
            return bytes(self) == bytes(other) and self._subtype == other.subtype
        return self._subtype == 0 and bytes(self) == other

    def __hash__(self):
        return hash((bytes(self), self._subtype))

    def __repr__(self):
        return "Binary(%r, %d)" % (bytes(self), self._subtype)


class Regex:
    """A BSON regular expression: a pattern and MongoDB's option letters."""

    __slots__ = ("pattern", "flags")

    def __init__(self, pattern, flags=""):
        if not isinstance(pattern, str) or not isinstance(flags, str):
            raise TypeError("Regex(pattern, flags) takes two strings")
        self.pattern = pattern
        self.flags = flags

    def __eq__(self, other):
        return (isinstance(other, Regex) or hasattr(other, "pattern")) and (
            self.pattern == other.pattern and self.flags == getattr(other, "flags", None))

    def __hash__(self):
        return hash((self.pattern, self.flags))

    def __repr__(self):
        return "Regex(%r, %r)" % (self.pattern, self.flags)


class Timestamp:
    """A BSON timestamp: seconds and an increment, each 32 bits."""

    __slots__ = ("time", "inc")

    def __init__(self, time, inc):
        if not (0 <= time <= 0xFFFFFFFF and 0 <= inc <= 0xFFFFFFFF):
            raise ValueError("Timestamp time and inc are unsigned 32-bit values")
        self.time = time
        self.inc = inc

    def __eq__(self, other):
        return isinstance(other, Timestamp) and (self.time, self.inc) == (other.time, other.inc)

    def __hash__(self):
        return hash((self.time, self.inc))

    def __repr__(self):
        return "Timestamp(%d, %d)" % (self.time, self.inc)


class _Key:
    __slots__ = ()

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self).__name__)

    def __repr__(self):
        return type(self).__name__ + "()"


class MinKey(_Key):
    """BSON MinKey: below every other value."""


class MaxKey(_Key):
    """BSON MaxKey: above every other value."""


class Code(str):
    """JavaScript code, with an optional scope document."""

    def __new__(cls, code, scope=None):
        self = super().__new__(cls, code)
        self.scope = scope
        return self

    def __eq__(self, other):
        return str(self) == str(other) and self.scope == getattr(other, "scope", None)

    def __hash__(self):
        return hash(str(self))

    def __repr__(self):
        return "Code(%r, %r)" % (str(self), self.scope)


class DBPointer:
    """The deprecated BSON DBPointer: a namespace and an ObjectId."""

    __slots__ = ("namespace", "id")

    def __init__(self, namespace, id):
        self.namespace = namespace
        self.id = id

    def __eq__(self, other):
        return isinstance(other, DBPointer) and (self.namespace, self.id) == (other.namespace, other.id)

    def __hash__(self):
        return hash((self.namespace, self.id))

    def __repr__(self):
        return "DBPointer(%r, %r)" % (self.namespace, self.id)


class DatetimeMS:
    """A BSON date outside Python's datetime range, as milliseconds since the epoch."""

    __slots__ = ("ms",)

    def __init__(self, ms):
        self.ms = int(ms)

    def __eq__(self, other):
        return isinstance(other, DatetimeMS) and self.ms == other.ms

    def __hash__(self):
        return hash(self.ms)

    def __repr__(self):
        return "DatetimeMS(%d)" % self.ms


# --- Decimal128 (IEEE 754-2008 decimal128, binary integer decimal encoding) ---

_D128_BIAS = 6176
_D128_EXP_MAX = 6111
_D128_EXP_MIN = -6176
_D128_MAX_DIGITS = 34


class Decimal128:
    """A BSON Decimal128, kept as its 16 bytes (little-endian BID).

    ``Decimal128("0.1")`` or ``Decimal128(decimal.Decimal(...))`` encode
    exactly or raise; ``to_decimal()`` gives the exact value back.
    """

    __slots__ = ("_bid",)

    def __init__(self, value):
        if isinstance(value, (bytes, bytearray)) and len(value) == 16:
            self._bid = bytes(value)
            return
        if isinstance(value, str):
            value = decimal.Decimal(value)
        if not isinstance(value, decimal.Decimal):
            raise TypeError("Decimal128 takes a str, a decimal.Decimal or 16 bytes, not %r" % type(value).__name__)
        self._bid = _decimal_to_bid(value)

    @classmethod
    def from_bid(cls, bid):
        return cls(bytes(bid))

    @property
    def bid(self):
        return self._bid

    def to_decimal(self):
        return _bid_to_decimal(self._bid)

    def __str__(self):
        return str(self.to_decimal())

    def __repr__(self):
        return "Decimal128('%s')" % self

    def __eq__(self, other):
        return getattr(other, "bid", None) == self._bid

    def __hash__(self):
        return hash(self._bid)


def _decimal_to_bid(value):
    sign, digits, exponent = value.as_tuple()
    high_sign = 1 << 63 if sign else 0
    if value.is_nan():
        return struct.pack("<QQ", 0, high_sign | (0x7E00 << 48 if value.is_snan() else 0x7C00 << 48))
    if value.is_infinite():
        return struct.pack("<QQ", 0, high_sign | (0x7800 << 48))
    coefficient = int("".join(map(str, digits))) if digits else 0
    # Move the exponent into range by adding or removing trailing zeros,
    # which keeps the value exact; anything else does not fit.
    while exponent > _D128_EXP_MAX and coefficient and len(str(coefficient)) < _D128_MAX_DIGITS:
        coefficient *= 10
        exponent -= 1
    if coefficient == 0:
        exponent = max(_D128_EXP_MIN, min(_D128_EXP_MAX, exponent))
    while exponent < _D128_EXP_MIN and coefficient % 10 == 0 and coefficient:
        coefficient //= 10
        exponent += 1
    if exponent > _D128_EXP_MAX or exponent < _D128_EXP_MIN or len(str(coefficient)) > _D128_MAX_DIGITS:
        raise ValueError("%s cannot be represented exactly as a Decimal128" % value)
    biased = exponent + _D128_BIAS
    high = high_sign | (biased << 49) | (coefficient >> 64)
    low = coefficient & 0xFFFFFFFFFFFFFFFF
    return struct.pack("<QQ", low, high)


def _bid_to_decimal(bid):
    low, high = struct.unpack("<QQ", bid)
    sign = high >> 63
    if (high >> 61) & 3 == 3:
        if (high >> 58) & 0x1F == 0x1E:
            return decimal.Decimal("-Infinity" if sign else "Infinity")
        if (high >> 58) & 0x1F == 0x1F:
            return decimal.Decimal("sNaN" if (high >> 57) & 1 else "NaN")
        # The second combination form holds a coefficient over 10^34, which
        # IEEE 754 makes non-canonical: its value is zero.
        exponent = ((high >> 47) & 0x3FFF) - _D128_BIAS
        coefficient = 0
    else:
        exponent = ((high >> 49) & 0x3FFF) - _D128_BIAS
        coefficient = ((high & 0x1FFFFFFFFFFFF) << 64) | low
        if coefficient >= 10 ** _D128_MAX_DIGITS:
            coefficient = 0
    return decimal.Decimal((sign, tuple(int(d) for d in str(coefficient)), exponent))
