"""The two BSON codecs a Database can use, and how one is chosen.

- "pure": gatedb._bson, this package's codec; values decode to gatedb.types
  (gatedb.ObjectId, gatedb.Int64, ...).  pymongo's bson classes are
  accepted when encoding.
- "pymongo": pymongo's ``bson.encode`` / ``bson.decode`` (Debian's
  python3-bson) with tz-aware UTC datetimes; values decode to pymongo's
  classes (bson.ObjectId, bson.Int64, ...).  gatedb's own classes are
  accepted when encoding.  Binary subtype 4 stays a Binary (pymongo's
  UuidRepresentation.UNSPECIFIED, as pymongo 4's default), so a native
  uuid.UUID must be wrapped (``Binary.from_uuid``); dates outside
  datetime's range cannot be decoded (pymongo 3.11 has no DatetimeMS).

``Database(path, codec=None)`` takes "pymongo" when pymongo's bson is
importable with its C extension (``bson.has_c()``) and ``GATEDB_PYTHON_PURE``
is not "1"; otherwise "pure".  Without the C extension pymongo's codec is
pure Python as well, and slower than ours.
"""

import datetime
import os
import types as _pytypes

from . import _bson
from . import types as _gtypes
from .errors import InvalidBSON, InvalidDocument

_TYPE_NAMES = ("ObjectId", "Int64", "Decimal128", "Binary", "Regex", "Timestamp", "MinKey", "MaxKey", "Code")

_MEMO_BYTES = 96  # {n: 1, nModified: 1, ok: 1.0} and the like
_MEMO_ENTRIES = 512


class Codec:
    """Encode (a Mapping -> BSON bytes) and decode (bytes -> dict), with the
    classes ``types`` the decoded values have."""

    name = None

    def __init__(self, types):
        self.types = types
        self._memo = {}
        self._scalars = (int, float, str, bool, type(None), types.Int64)

    def decode_reply(self, data):
        """A command reply.  A write's reply is nearly always one of a few
        small documents of scalars, so those are decoded once and copied
        after (the copy is the caller's to change)."""
        if len(data) > _MEMO_BYTES:
            return self.decode(data)
        reply = self._memo.get(data)
        if reply is None:
            reply = self.decode(data)
            scalars = self._scalars
            if len(self._memo) >= _MEMO_ENTRIES or any(type(v) not in scalars for v in reply.values()):
                return reply
            self._memo[data] = reply
        return dict(reply)

    def encode(self, doc):
        raise NotImplementedError

    def decode(self, data):
        raise NotImplementedError

    def decode_at(self, data, pos):
        """The document starting at data[pos], and where it ends."""
        raise NotImplementedError

    def first_batch_document(self, reply):
        """cursor.firstBatch[0] of a find reply (or None), decoding only that
        document when the reply has libbson's usual layout."""
        if reply.startswith(_bson.CURSOR_KEY, 4) and reply.startswith(_bson.FIRST_BATCH_KEY, 16):
            if reply[32] == 0:
                return None
            if reply.startswith(_bson.FIRST_ELEMENT, 32):
                return self.decode_at(reply, 35)[0]
        batch = self.decode(reply)["cursor"]["firstBatch"]
        return batch[0] if batch else None

    def __repr__(self):
        return "<gatedb codec %s>" % self.name


class PureCodec(Codec):
    name = "pure"

    def __init__(self):
        super().__init__(_pytypes.SimpleNamespace(**{n: getattr(_gtypes, n) for n in _TYPE_NAMES},
                                                  DBPointer=_gtypes.DBPointer, DatetimeMS=_gtypes.DatetimeMS))
        self.encode = _bson.encode
        self.decode = _bson.decode
        self.decode_at = _bson.decode_at
        self.first_batch_document = _bson.first_batch_document


class PymongoCodec(Codec):
    name = "pymongo"

    def __init__(self, bson):
        from bson.binary import UuidRepresentation
        from bson.codec_options import CodecOptions, TypeRegistry
        super().__init__(_pytypes.SimpleNamespace(**{n: getattr(bson, n) for n in _TYPE_NAMES},
                                                  DBPointer=None, DatetimeMS=getattr(bson, "DatetimeMS", None)))
        self._bson = bson
        self._errors = (bson.errors.InvalidDocument, bson.errors.InvalidStringData, OverflowError,
                        UnicodeEncodeError, ValueError, TypeError, RecursionError)
        self._options = CodecOptions(
            tz_aware=True, tzinfo=datetime.timezone.utc, uuid_representation=UuidRepresentation.UNSPECIFIED,
            type_registry=TypeRegistry(fallback_encoder=self._fallback))
        self._unpack_i32 = _bson._unpack_i32

    def _fallback(self, value):
        """gatedb's classes pymongo does not know by their _type_marker."""
        b = self._bson
        if isinstance(value, _gtypes.Regex):
            return b.Regex(value.pattern, value.flags)
        if isinstance(value, _gtypes.Decimal128):
            return b.Decimal128.from_bid(value.bid)
        raise InvalidDocument("cannot encode a %s with pymongo's codec: %r" % (type(value).__name__, value))

    def encode(self, doc):
        try:
            return self._bson.encode(doc, codec_options=self._options)
        except InvalidDocument:
            raise
        except self._errors as e:
            raise InvalidDocument(str(e)) from None

    def decode(self, data):
        try:
            return self._bson.decode(data, codec_options=self._options)
        except self._bson.errors.InvalidBSON as e:
            raise InvalidBSON(str(e)) from None

    def decode_at(self, data, pos):
        try:
            (n,) = self._unpack_i32(data, pos)
        except Exception:
            raise InvalidBSON("a document's length does not fit") from None
        if n < 5 or pos + n > len(data):
            raise InvalidBSON("a document's length %d does not fit" % n)
        return self.decode(data[pos:pos + n]), pos + n


_pymongo_codec = None
_pure_codec = PureCodec()


def pymongo_bson(require_c=False):
    """pymongo's bson module, or None when it is not importable (or, with
    require_c, has no C extension)."""
    try:
        import bson
        from bson.codec_options import CodecOptions  # noqa: F401 -- not some other "bson" package
    except ImportError:
        return None
    if require_c and not bson.has_c():
        return None
    return bson


def get(codec=None):
    """The Codec for ``Database(codec=...)``: "pure", "pymongo", or None
    (the default choice, see the module's docstring); a Codec passes through."""
    global _pymongo_codec
    if isinstance(codec, Codec):
        return codec
    if codec is None:
        if os.environ.get("GATEDB_PYTHON_PURE") == "1" or pymongo_bson(require_c=True) is None:
            return _pure_codec
        codec = "pymongo"
    if codec == "pure":
        return _pure_codec
    if codec == "pymongo":
        if _pymongo_codec is None:
            bson = pymongo_bson()
            if bson is None:
                raise ImportError("codec='pymongo' needs pymongo's bson module (Debian: python3-bson)")
            _pymongo_codec = PymongoCodec(bson)
        return _pymongo_codec
    raise ValueError("codec is 'pure', 'pymongo' or None, not %r" % (codec,))
