"""BSON encoding and decoding in the standard library (struct), fast enough
for the per-call budget (a find_one by _id converts in a few microseconds).

Python -> BSON: dict (any Mapping, key order kept), list/tuple, str, bool,
int (int32 when it fits, else int64; ``Int64`` is always int64), float,
None, datetime (naive ones are taken as UTC), bytes/Binary, uuid.UUID
(binary subtype 4), re.Pattern/Regex, ObjectId, Decimal128 (also
decimal.Decimal), Timestamp, MinKey, MaxKey, Code, DBPointer, DatetimeMS;
and pymongo's ``bson`` classes of the same names when it is installed.

BSON -> Python: the same types back (``Types`` says whose classes), so a
document read and written back is unchanged.
"""

import collections.abc
import datetime
import decimal
import re
import struct
import uuid

from . import types as T
from .errors import InvalidBSON, InvalidDocument

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_UTC = datetime.timezone.utc
_INT32 = struct.Struct("<i")
_INT64 = struct.Struct("<q")
_UINT64 = struct.Struct("<Q")
_DOUBLE = struct.Struct("<d")
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_RE_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"))
MAX_DEPTH = 200  # MongoDB's incoming nesting limit


class Types:
    """The classes the decoder builds: gatedb's own, or pymongo's."""

    def __init__(self, module):
        self.module_name = module.__name__
        self.ObjectId = module.ObjectId
        self.Int64 = module.Int64
        self.Decimal128 = module.Decimal128
        self.Binary = module.Binary
        self.Regex = module.Regex
        self.Timestamp = module.Timestamp
        self.MinKey = module.MinKey
        self.MaxKey = module.MaxKey
        self.Code = module.Code
        self.DBPointer = getattr(module, "DBPointer", T.DBPointer)
        self.DatetimeMS = getattr(module, "DatetimeMS", T.DatetimeMS)
        self.from_bid = module.Decimal128.from_bid


GATEDB_TYPES = Types(T)


def pymongo_types():
    """Types over pymongo's bson module, or None when it is not installed."""
    try:
        import bson  # Debian's python3-bson
        from bson import (ObjectId, Int64, Decimal128, Binary, Regex, Timestamp,  # noqa: F401
                          MinKey, MaxKey, Code)
    except ImportError:
        return None

    class _Module:
        pass

    m = _Module()
    m.__name__ = "bson"
    for name in ("ObjectId", "Int64", "Decimal128", "Binary", "Regex", "Timestamp", "MinKey", "MaxKey", "Code"):
        setattr(m, name, getattr(bson, name))
    dbp = getattr(bson, "DBPointer", None)
    if dbp is not None:
        m.DBPointer = dbp
    return Types(m)


# ----------------------------------------------------------------- encoding

_KEY_CACHE = {}
_INDEX_KEYS = [b"%d\x00" % i for i in range(1024)]


def _key(k):
    """A field name as a BSON cstring; the common ones are cached."""
    b = _KEY_CACHE.get(k) if type(k) is str else None
    if b is not None:
        return b
    b = _key_bytes(k)
    if len(_KEY_CACHE) < 4096:
        _KEY_CACHE[k] = b
    return b


def _key_bytes(k):
    if not isinstance(k, str):
        raise InvalidDocument("document keys must be str, not %r" % (k,))
    try:
        b = k.encode()
    except UnicodeEncodeError as e:
        raise InvalidDocument("document key is not valid UTF-8: %s" % e) from None
    if b"\x00" in b:
        raise InvalidDocument("document key %r holds a NUL byte" % k)
    return b + b"\x00"


def _cstring(s, what):
    b = s.encode()
    if b"\x00" in b:
        raise InvalidDocument("%s %r holds a NUL byte" % (what, s))
    return b + b"\x00"


def _str(s):
    try:
        b = s.encode()
    except UnicodeEncodeError as e:
        raise InvalidDocument("string is not valid UTF-8: %s" % e) from None
    return _INT32.pack(len(b) + 1) + b + b"\x00"


def _datetime_ms(dt):
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_UTC)
    delta = dt - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _regex_flags(flags):
    if isinstance(flags, int):
        out = "".join(letter for bit, letter in _RE_FLAGS if flags & bit)
        return out + ("u" if flags & re.UNICODE and not flags & re.ASCII else "")
    return "".join(sorted(flags))


_pack_i32 = _INT32.pack
_pack_i64 = _INT64.pack
_pack_f64 = _DOUBLE.pack


def encode_document(doc, depth=0):
    """One document (a Mapping) as BSON bytes.  str, int, float and dict
    values are written inline: this loop is most of a command's cost."""
    if depth > MAX_DEPTH:
        raise InvalidDocument("document nested deeper than %d levels" % MAX_DEPTH)
    out = bytearray(b"\x00\x00\x00\x00")
    cache = _KEY_CACHE
    for k, v in doc.items():
        name = cache.get(k) if type(k) is str else None
        if name is None:
            name = _key(k)
        t = type(v)
        if t is str:
            try:
                sb = v.encode()
            except UnicodeEncodeError as e:
                raise InvalidDocument("string is not valid UTF-8: %s" % e) from None
            out += b"\x02" + name + _pack_i32(len(sb) + 1) + sb + b"\x00"
        elif t is dict:
            out += b"\x03" + name + encode_document(v, depth + 1)
        elif t is int and _INT32_MIN <= v <= _INT32_MAX:
            out += b"\x10" + name + _pack_i32(v)
        elif t is float:
            out += b"\x01" + name + _pack_f64(v)
        else:
            _element(out, name, v, depth)
    out += b"\x00"
    out[0:4] = _pack_i32(len(out))
    return bytes(out)


def _array(seq, depth):
    out = bytearray(b"\x00\x00\x00\x00")
    if depth > MAX_DEPTH:
        raise InvalidDocument("array nested deeper than %d levels" % MAX_DEPTH)
    for i, v in enumerate(seq):
        _element(out, _INDEX_KEYS[i] if i < 1024 else b"%d\x00" % i, v, depth)
    out += b"\x00"
    out[0:4] = _INT32.pack(len(out))
    return out


def _element(out, name, v, depth):
    t = type(v)
    if t is str:
        out += b"\x02" + name + _str(v)
    elif t is int:
        if _INT32_MIN <= v <= _INT32_MAX:
            out += b"\x10" + name + _INT32.pack(v)
        elif _INT64_MIN <= v <= _INT64_MAX:
            out += b"\x12" + name + _INT64.pack(v)
        else:
            raise InvalidDocument("%d does not fit in BSON's 64-bit integer" % v)
    elif t is dict:
        out += b"\x03" + name + encode_document(v, depth + 1)
    elif t is float:
        out += b"\x01" + name + _DOUBLE.pack(v)
    elif t is bool:
        out += b"\x08" + name + (b"\x01" if v else b"\x00")
    elif v is None:
        out += b"\x0a" + name
    elif t is list or t is tuple:
        out += b"\x04" + name + _array(v, depth + 1)
    else:
        _other(out, name, v, depth)


def _other(out, name, v, depth):
    """The less common types, by class (ours, pymongo's, or the stdlib's)."""
    if isinstance(v, bool):
        out += b"\x08" + name + (b"\x01" if v else b"\x00")
    elif isinstance(v, (T.Int64,)) or type(v).__name__ == "Int64" and isinstance(v, int):
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise InvalidDocument("%d does not fit in BSON's 64-bit integer" % v)
        out += b"\x12" + name + _INT64.pack(int(v))
    elif isinstance(v, (T.Code,)) or (type(v).__name__ == "Code" and isinstance(v, str)):
        scope = getattr(v, "scope", None)
        if scope is None:
            out += b"\x0d" + name + _str(str(v))
        else:
            body = _str(str(v)) + encode_document(scope, depth + 1)
            out += b"\x0f" + name + _INT32.pack(len(body) + 4) + body
    elif isinstance(v, str):
        out += b"\x02" + name + _str(str(v))
    elif isinstance(v, int):
        _element(out, name, int(v), depth)
    elif isinstance(v, float):
        out += b"\x01" + name + _DOUBLE.pack(float(v))
    elif isinstance(v, datetime.datetime):
        out += b"\x09" + name + _INT64.pack(_datetime_ms(v))
    elif isinstance(v, T.DatetimeMS) or type(v).__name__ == "DatetimeMS":
        out += b"\x09" + name + _INT64.pack(int(v.ms) if hasattr(v, "ms") else int(v))
    elif isinstance(v, (bytes, bytearray, memoryview)):
        data = bytes(v)
        subtype = getattr(v, "subtype", 0)
        if subtype == 2:  # the old binary subtype wraps its bytes in a length
            data = _INT32.pack(len(data)) + data
        out += b"\x05" + name + _INT32.pack(len(data)) + bytes([subtype]) + data
    elif isinstance(v, uuid.UUID):
        out += b"\x05" + name + _INT32.pack(16) + b"\x04" + v.bytes
    elif hasattr(v, "binary") and isinstance(getattr(v, "binary"), bytes) and len(v.binary) == 12:  # ObjectId
        out += b"\x07" + name + v.binary
    elif isinstance(v, (T.Decimal128,)) or hasattr(v, "bid"):
        out += b"\x13" + name + v.bid
    elif isinstance(v, decimal.Decimal):
        out += b"\x13" + name + T.Decimal128(v).bid
    elif isinstance(v, re.Pattern):
        pattern = v.pattern if isinstance(v.pattern, str) else v.pattern.decode()
        out += b"\x0b" + name + _cstring(pattern, "regex") + _cstring(_regex_flags(v.flags), "regex options")
    elif isinstance(v, T.Regex) or (hasattr(v, "pattern") and hasattr(v, "flags")):
        pattern = v.pattern if isinstance(v.pattern, str) else v.pattern.decode()
        out += b"\x0b" + name + _cstring(pattern, "regex") + _cstring(_regex_flags(v.flags), "regex options")
    elif isinstance(v, T.Timestamp) or (hasattr(v, "time") and hasattr(v, "inc") and not callable(v.time)):
        out += b"\x11" + name + _UINT64.pack((v.time << 32) | v.inc)
    elif isinstance(v, T.MinKey) or type(v).__name__ == "MinKey":
        out += b"\xff" + name
    elif isinstance(v, T.MaxKey) or type(v).__name__ == "MaxKey":
        out += b"\x7f" + name
    elif isinstance(v, T.DBPointer):
        out += b"\x0c" + name + _str(v.namespace) + v.id.binary
    elif isinstance(v, collections.abc.Mapping):
        out += b"\x03" + name + encode_document(v, depth + 1)
    elif isinstance(v, (list, tuple)):
        out += b"\x04" + name + _array(v, depth + 1)
    else:
        raise InvalidDocument("cannot encode a %s as BSON: %r" % (type(v).__name__, v))


# ----------------------------------------------------------------- decoding

def decode_document(data, types=GATEDB_TYPES):
    """BSON bytes (one document) as a dict."""
    data = bytes(data)
    if len(data) < 5:
        raise InvalidBSON("a BSON document is at least 5 bytes, not %d" % len(data))
    (n,) = _INT32.unpack_from(data, 0)
    if n != len(data):
        raise InvalidBSON("the document declares %d bytes but %d were given" % (n, len(data)))
    try:
        doc, end = _read_document(data, 0, types, 0, True)
    except (struct.error, IndexError, UnicodeDecodeError, ValueError) as e:
        raise InvalidBSON("malformed BSON: %s" % e) from None
    return doc


def _cstr_at(data, pos):
    return data.index(b"\x00", pos)


_unpack_i32 = _INT32.unpack_from
_unpack_i64 = _INT64.unpack_from
_unpack_f64 = _DOUBLE.unpack_from


def _read_document(data, pos, types, depth, as_dict):
    """The document (or array) at pos; the common types are read inline,
    since this loop is most of a reply's cost."""
    if depth > MAX_DEPTH:
        raise InvalidBSON("nested deeper than %d levels" % MAX_DEPTH)
    (n,) = _unpack_i32(data, pos)
    end = pos + n
    if n < 5 or end > len(data) or data[end - 1] != 0:
        raise InvalidBSON("a document's length %d does not fit" % n)
    out = {} if as_dict else []
    i = pos + 4
    last = end - 1
    index = data.index
    while i < last:
        t = data[i]
        ks = i + 1
        k_end = index(b"\x00", ks, last)
        p = k_end + 1
        if t == 0x02:
            (sn,) = _unpack_i32(data, p)
            e = p + 4 + sn
            if sn < 1 or e > last or data[e - 1] != 0:
                raise InvalidBSON("a string's length %d does not fit" % sn)
            value = data[p + 4:e - 1].decode()
            i = e
        elif t == 0x10:
            value = _unpack_i32(data, p)[0]
            i = p + 4
        elif t == 0x12:
            value = types.Int64(_unpack_i64(data, p)[0])
            i = p + 8
        elif t == 0x01:
            value = _unpack_f64(data, p)[0]
            i = p + 8
        elif t == 0x03:
            value, i = _read_document(data, p, types, depth + 1, True)
        elif t == 0x04:
            value, i = _read_document(data, p, types, depth + 1, False)
        else:
            value, i = _read_value(data, p, t, types, depth, last)
        if i > last:
            raise InvalidBSON("an element runs past its document")
        if as_dict:
            out[data[ks:k_end].decode()] = value
        else:
            out.append(value)
    if i != last:
        raise InvalidBSON("an element runs past its document")
    return out, end


def _string_at(view, pos, limit):
    (n,) = _INT32.unpack_from(view, pos)
    start = pos + 4
    if n < 1 or start + n > limit + 1 or view[start + n - 1] != 0:
        raise InvalidBSON("a string's length %d does not fit" % n)
    return view[start:start + n - 1].decode(), start + n


def _read_value(view, p, t, types, depth, limit):
    if t == 0x02:
        return _string_at(view, p, limit)
    if t == 0x10:
        return _INT32.unpack_from(view, p)[0], p + 4
    if t == 0x12:
        return types.Int64(_INT64.unpack_from(view, p)[0]), p + 8
    if t == 0x01:
        return _DOUBLE.unpack_from(view, p)[0], p + 8
    if t == 0x03:
        return _read_document(view, p, types, depth + 1, True)
    if t == 0x04:
        return _read_document(view, p, types, depth + 1, False)
    if t == 0x08:
        b = view[p]
        if b > 1:
            raise InvalidBSON("a boolean is 0 or 1, not %d" % b)
        return b == 1, p + 1
    if t == 0x0A or t == 0x06:
        return None, p
    if t == 0x07:
        return types.ObjectId(bytes(view[p:p + 12])), p + 12
    if t == 0x09:
        ms = _INT64.unpack_from(view, p)[0]
        try:
            return _EPOCH + datetime.timedelta(milliseconds=ms), p + 8
        except OverflowError:
            return types.DatetimeMS(ms), p + 8
    if t == 0x05:
        (n,) = _INT32.unpack_from(view, p)
        sub = view[p + 4]
        start = p + 5
        if n < 0 or start + n > limit:
            raise InvalidBSON("a binary's length %d does not fit" % n)
        data = bytes(view[start:start + n])
        if sub == 2 and n >= 4:
            data = data[4:]
        if sub == 0:
            return data, start + n
        if sub == 4 and n == 16:
            return uuid.UUID(bytes=data), start + n
        return types.Binary(data, sub), start + n
    if t == 0x13:
        return types.from_bid(bytes(view[p:p + 16])), p + 16
    if t == 0x0B:
        e1 = _cstr_at(view, p)
        e2 = _cstr_at(view, e1 + 1)
        if e2 >= limit:
            raise InvalidBSON("a regex runs past its document")
        return types.Regex(view[p:e1].decode(), view[e1 + 1:e2].decode()), e2 + 1
    if t == 0x11:
        v = _UINT64.unpack_from(view, p)[0]
        return types.Timestamp(v >> 32, v & 0xFFFFFFFF), p + 8
    if t == 0x0D:
        s, e = _string_at(view, p, limit)
        return types.Code(s), e
    if t == 0x0E:
        return _string_at(view, p, limit)
    if t == 0x0F:
        (total,) = _INT32.unpack_from(view, p)
        s, e = _string_at(view, p + 4, limit)
        scope, e = _read_document(view, e, types, depth + 1, True)
        if e != p + total:
            raise InvalidBSON("a code-with-scope's length does not fit")
        return types.Code(s, scope), e
    if t == 0x0C:
        ns, e = _string_at(view, p, limit)
        return types.DBPointer(ns, types.ObjectId(bytes(view[e:e + 12]))), e + 12
    if t == 0xFF:
        return types.MinKey(), p
    if t == 0x7F:
        return types.MaxKey(), p
    raise InvalidBSON("unknown BSON type 0x%02x" % t)
