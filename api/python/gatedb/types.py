"""gatedb's own classes for the BSON types Python has none for.

The pure codec (gatedb._bson) returns these.  Each keeps its value exactly
as BSON holds it, so a document read and written back is the same bytes.
They carry pymongo's ``_type_marker`` numbers, so pymongo's ``bson.encode``
(the "pymongo" codec) encodes them too; pymongo's own classes are accepted
by the pure codec in turn.
"""

import datetime
import decimal
import os
import re
import struct
import threading
import time
import uuid

from ._decimal128 import bid_to_decimal, decimal_to_bid

__all__ = [
    "ObjectId", "Int64", "Decimal128", "Binary", "Regex", "Timestamp", "MinKey", "MaxKey",
    "Code", "DBPointer", "DatetimeMS",
]


class Int64(int):
    """An int stored as BSON int64 (a plain int is stored as int32 when it fits)."""

    __slots__ = ()
    _type_marker = 18

    def __repr__(self):
        return "Int64(%d)" % int(self)


class ObjectId:
    """A 12-byte BSON ObjectId: 4 bytes of seconds, 5 random bytes per
    process, a 3-byte counter."""

    __slots__ = ("_bytes",)
    _type_marker = 7
    _lock = threading.Lock()
    _counter = int.from_bytes(os.urandom(3), "big")
    _random = os.urandom(5)
    _pid = os.getpid()

    def __init__(self, oid=None):
        if oid is None:
            self._bytes = self._generate()
        elif isinstance(oid, (bytes, bytearray)) and len(oid) == 12:
            self._bytes = bytes(oid)
        elif isinstance(oid, str) and len(oid) == 24:
            try:
                self._bytes = bytes.fromhex(oid)
            except ValueError:
                raise ValueError("%r is not a valid ObjectId: 24 hex digits expected" % oid) from None
        elif isinstance(getattr(oid, "binary", None), bytes) and len(oid.binary) == 12:
            self._bytes = oid.binary  # ours, or pymongo's
        else:
            raise ValueError("%r is not a valid ObjectId: 12 bytes or 24 hex digits expected" % (oid,))

    @classmethod
    def _from_bytes(cls, b):
        """The decoder's constructor: 12 bytes, no checks."""
        self = object.__new__(cls)
        self._bytes = b
        return self

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
    """Bytes with a BSON binary subtype.  Plain ``bytes`` are subtype 0 and
    decode as ``bytes``; every other subtype (4, UUID, included) decodes as
    a Binary, so nothing about the value is guessed."""

    _type_marker = 5

    def __new__(cls, data, subtype=0):
        if not isinstance(subtype, int) or not 0 <= subtype <= 255:
            raise ValueError("a binary subtype is 0 to 255, not %r" % (subtype,))
        self = super().__new__(cls, data)
        self._subtype = subtype
        return self

    @classmethod
    def from_uuid(cls, value):
        """A subtype 4 Binary of a uuid.UUID (RFC 4122 byte order)."""
        return cls(value.bytes, 4)

    def as_uuid(self):
        """The uuid.UUID of a 16-byte subtype 4 (or 3) Binary."""
        if self._subtype not in (3, 4) or len(self) != 16:
            raise ValueError("only a 16-byte Binary of subtype 3 or 4 is a UUID")
        return uuid.UUID(bytes=bytes(self))

    @property
    def subtype(self):
        return self._subtype

    def __eq__(self, other):
        sub = getattr(other, "subtype", None)
        if sub is not None:
            return sub == self._subtype and bytes(self) == bytes(other)
        return False

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((bytes(self), self._subtype))

    def __repr__(self):
        return "Binary(%r, %d)" % (bytes(self), self._subtype)


_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.LOCALE, "l"), (re.MULTILINE, "m"), (re.DOTALL, "s"),
                 (re.UNICODE, "u"), (re.VERBOSE, "x"))
_LETTER_FLAGS = {"i": re.IGNORECASE, "l": re.LOCALE, "m": re.MULTILINE, "s": re.DOTALL, "u": re.UNICODE,
                 "x": re.VERBOSE}


def flags_to_letters(flags):
    """A BSON regex's option letters (sorted, as BSON requires) from Python's
    re flags (an int) or a string of letters."""
    if isinstance(flags, str):
        return "".join(sorted(flags))
    return "".join(letter for bit, letter in _FLAG_LETTERS if flags & bit)


class Regex:
    """A BSON regular expression: a pattern and MongoDB's option letters
    (``Regex("^a", "im")``); ``re.Pattern`` objects encode as well."""

    __slots__ = ("pattern", "flags")

    def __init__(self, pattern, flags=""):
        if not isinstance(pattern, str):
            raise TypeError("a Regex pattern is a str, not %s" % type(pattern).__name__)
        self.pattern = pattern
        self.flags = flags_to_letters(flags)

    def try_compile(self):
        """The pattern compiled by Python's re (letters it does not know are left out)."""
        flags = 0
        for letter in self.flags:
            flags |= _LETTER_FLAGS.get(letter, 0)
        return re.compile(self.pattern, flags)

    def __eq__(self, other):
        if not isinstance(other, Regex):
            return NotImplemented
        return self.pattern == other.pattern and self.flags == other.flags

    def __hash__(self):
        return hash((self.pattern, self.flags))

    def __repr__(self):
        return "Regex(%r, %r)" % (self.pattern, self.flags)


class Timestamp:
    """A BSON timestamp: seconds and an increment, each unsigned 32 bits."""

    __slots__ = ("time", "inc")
    _type_marker = 17

    def __init__(self, time, inc):
        if not (isinstance(time, int) and isinstance(inc, int)
                and 0 <= time <= 0xFFFFFFFF and 0 <= inc <= 0xFFFFFFFF):
            raise ValueError("Timestamp time and inc are unsigned 32-bit ints")
        self.time = time
        self.inc = inc

    def __eq__(self, other):
        if not isinstance(other, Timestamp):
            return NotImplemented
        return (self.time, self.inc) == (other.time, other.inc)

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

    __slots__ = ()
    _type_marker = 255


class MaxKey(_Key):
    """BSON MaxKey: above every other value."""

    __slots__ = ()
    _type_marker = 127


class Code(str):
    """JavaScript code, with an optional scope document (code with scope)."""

    _type_marker = 13

    def __new__(cls, code, scope=None):
        self = super().__new__(cls, code)
        self._scope = scope
        return self

    @property
    def scope(self):
        return self._scope

    def __eq__(self, other):
        return isinstance(other, Code) and str(self) == str(other) and self._scope == other.scope

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(str(self))

    def __repr__(self):
        return "Code(%r, %r)" % (str(self), self._scope)


class DBPointer:
    """The deprecated BSON DBPointer: a namespace and an ObjectId."""

    __slots__ = ("namespace", "id")

    def __init__(self, namespace, id):
        self.namespace = namespace
        self.id = id

    def __eq__(self, other):
        if not isinstance(other, DBPointer):
            return NotImplemented
        return (self.namespace, self.id) == (other.namespace, other.id)

    def __hash__(self):
        return hash((self.namespace, self.id))

    def __repr__(self):
        return "DBPointer(%r, %r)" % (self.namespace, self.id)


class DatetimeMS:
    """A BSON date as milliseconds since the epoch: what the decoder returns
    for a date outside Python's datetime range (years 1-9999), so nothing is
    lost.  Encodes back as the same date."""

    __slots__ = ("ms",)

    def __init__(self, ms):
        self.ms = int(ms)

    def __eq__(self, other):
        if not isinstance(other, DatetimeMS):
            return NotImplemented
        return self.ms == other.ms

    def __hash__(self):
        return hash(self.ms)

    def __repr__(self):
        return "DatetimeMS(%d)" % self.ms


class Decimal128:
    """A BSON Decimal128, kept as its 16 bytes (little-endian BID).

    ``Decimal128("0.1")`` or ``Decimal128(decimal.Decimal(...))`` encode
    exactly or raise ValueError; ``to_decimal()`` gives the exact value
    back; ``bid`` is the bytes.
    """

    __slots__ = ("_bid",)
    _type_marker = 19

    def __init__(self, value):
        if isinstance(value, (bytes, bytearray)) and len(value) == 16:
            self._bid = bytes(value)
            return
        if isinstance(value, str):
            try:
                value = decimal.Decimal(value)
            except decimal.InvalidOperation:
                raise ValueError("%r is not a decimal number" % value) from None
        if not isinstance(value, decimal.Decimal):
            raise TypeError("Decimal128 takes a str, a decimal.Decimal or 16 bytes, not %s"
                            % type(value).__name__)
        self._bid = decimal_to_bid(value)

    @classmethod
    def from_bid(cls, bid):
        self = object.__new__(cls)
        self._bid = bytes(bid)
        return self

    @property
    def bid(self):
        return self._bid

    def to_decimal(self):
        return bid_to_decimal(self._bid)

    def __str__(self):
        return str(self.to_decimal())

    def __repr__(self):
        return "Decimal128('%s')" % self

    def __eq__(self, other):
        bid = getattr(other, "bid", None)
        if not isinstance(bid, bytes):
            return NotImplemented
        return bid == self._bid

    def __hash__(self):
        return hash(self._bid)
