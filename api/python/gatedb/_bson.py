"""The pure-Python BSON codec (standard library only).

This is on every call's path (a find_one by _id encodes a command and
decodes a reply), so the common types are written and read inline in the
document loops, with precompiled structs; the rest go through per-type
functions chosen by exact type (encoding) or type byte (decoding).

Python -> BSON: any Mapping (key order kept), list/tuple, str, bool, int
(int32 when it fits, else int64; Int64 always int64), float, None,
datetime (naive ones are UTC), bytes/bytearray/memoryview (binary subtype
0), Binary (its subtype), uuid.UUID (subtype 4), re.Pattern and Regex,
ObjectId, Decimal128 and decimal.Decimal, Timestamp, MinKey, MaxKey, Code
(with scope or not), DBPointer, DatetimeMS; pymongo's bson classes by their
``_type_marker``, DBRef as its document.  Anything else, a non-str key, a
key holding NUL, a string that is not valid UTF-8, an int beyond int64:
InvalidDocument, before anything is sent.

BSON -> Python: dict, list, str, int (int32), Int64 (int64), float, bool,
None (null and undefined), datetime in UTC (DatetimeMS outside datetime's
range), bytes (subtype 0) or Binary, ObjectId, Regex, Timestamp,
Decimal128, MinKey, MaxKey, Code, DBPointer; a symbol as str.  Malformed
bytes raise InvalidBSON, never anything else.
"""

import collections.abc
import datetime
import decimal
import re
import struct
import uuid

from ._decimal128 import decimal_to_bid
from .errors import InvalidBSON, InvalidDocument
from .types import (Binary, Code, DatetimeMS, DBPointer, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex,
                    Timestamp, flags_to_letters)

_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_timedelta = datetime.timedelta

_pack_i32 = struct.Struct("<i").pack
_pack_i64 = struct.Struct("<q").pack
_pack_f64 = struct.Struct("<d").pack
_pack_ts = struct.Struct("<II").pack
_pack_len_sub = struct.Struct("<iB").pack
_unpack_i32 = struct.Struct("<i").unpack_from
_unpack_i64 = struct.Struct("<q").unpack_from
_unpack_f64 = struct.Struct("<d").unpack_from
_unpack_ts = struct.Struct("<II").unpack_from
_unpack_len_sub = struct.Struct("<iB").unpack_from

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


# ------------------------------------------------------------------ encoding

_KEYS = {}  # field name -> its cstring; bounded, field names repeat
_INDEX = [b"%d\x00" % i for i in range(1000)]


def encode(doc):
    """One document (a Mapping) as BSON bytes."""
    if type(doc) is not dict and not isinstance(doc, collections.abc.Mapping):
        raise InvalidDocument("a BSON document is a Mapping, not %s" % type(doc).__name__)
    try:
        return _doc(doc)
    except UnicodeEncodeError as e:
        raise InvalidDocument("a string is not valid UTF-8: %s" % e) from None
    except struct.error as e:
        raise InvalidDocument("a value does not fit its BSON type (%s)" % e) from None
    except RecursionError:
        raise InvalidDocument("the document nests too deeply (or contains itself)") from None


def _key(k):
    if not isinstance(k, str):
        raise InvalidDocument("document keys must be str, not %s (%r)" % (type(k).__name__, k))
    b = str(k).encode()
    if b"\x00" in b:
        raise InvalidDocument("document key %r holds a NUL byte" % k)
    b += b"\x00"
    if len(_KEYS) < 8192:
        _KEYS[k] = b
    return b


def _doc(doc):
    if len(doc) > 32:
        return _long_doc(doc)
    body = b""  # small documents (the common case): concatenation beats a list and join
    keys = _KEYS
    for k, v in doc.items():
        name = keys.get(k)
        if name is None:
            name = _key(k)
        t = type(v)
        if t is str:
            b = v.encode()
            body += b"\x02" + name + _pack_i32(len(b) + 1) + b + b"\x00"
        elif t is int:
            if _INT32_MIN <= v <= _INT32_MAX:
                body += b"\x10" + name + _pack_i32(v)
            else:
                body += b"\x12" + name + _pack_i64(v)
        elif t is dict:
            body += b"\x03" + name + _doc(v)
        elif t is float:
            body += b"\x01" + name + _pack_f64(v)
        else:
            body += _element(name, v)
    return _pack_i32(len(body) + 5) + body + b"\x00"


def _long_doc(doc):
    """A document of many fields: joined once, so its cost stays linear."""
    parts = []
    add = parts.append
    keys = _KEYS
    for k, v in doc.items():
        name = keys.get(k)
        add(_element(name if name is not None else _key(k), v))
    body = b"".join(parts)
    return _pack_i32(len(body) + 5) + body + b"\x00"


def _array(seq):
    parts = []
    add = parts.append
    for i, v in enumerate(seq):
        add(_element(_INDEX[i] if i < 1000 else b"%d\x00" % i, v))
    body = b"".join(parts)
    return _pack_i32(len(body) + 5) + body + b"\x00"


def _element(name, v):
    """One element: a type byte, the name, the value."""
    enc = _ENCODERS.get(type(v))
    if enc is None:
        enc = _encoder_for(v)
    return enc(name, v)


def _cstring(s, what):
    if isinstance(s, bytes):
        s = s.decode()
    b = s.encode()
    if b"\x00" in b:
        raise InvalidDocument("%s %r holds a NUL byte" % (what, s))
    return b + b"\x00"


def _str_value(s):
    b = s.encode()
    return _pack_i32(len(b) + 1) + b + b"\x00"


def _enc_str(name, v):
    return b"\x02" + name + _str_value(str(v))


def _enc_int(name, v):
    v = int(v)
    if _INT32_MIN <= v <= _INT32_MAX:
        return b"\x10" + name + _pack_i32(v)
    return b"\x12" + name + _pack_i64(v)


def _enc_int64(name, v):
    return b"\x12" + name + _pack_i64(int(v))


def _enc_float(name, v):
    return b"\x01" + name + _pack_f64(float(v))


def _enc_bool(name, v):
    return b"\x08" + name + (b"\x01" if v else b"\x00")


def _enc_none(name, v):
    return b"\x0a" + name


def _enc_doc(name, v):
    return b"\x03" + name + _doc(v)


def _enc_array(name, v):
    return b"\x04" + name + _array(v)


def _enc_bytes(name, v):
    data = bytes(v)
    return b"\x05" + name + _pack_len_sub(len(data), 0) + data


def _enc_binary(name, v):
    data = bytes(v)
    subtype = v.subtype
    if subtype == 2:  # the old binary subtype repeats the length inside
        data = _pack_i32(len(data)) + data
    return b"\x05" + name + _pack_len_sub(len(data), subtype) + data


def _enc_uuid(name, v):
    return b"\x05" + name + _pack_len_sub(16, 4) + v.bytes


def _enc_datetime(name, v):
    delta = v - (_EPOCH_NAIVE if v.tzinfo is None or v.utcoffset() is None else _EPOCH)
    ms = (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    return b"\x09" + name + _pack_i64(ms)


def _enc_datetime_ms(name, v):
    return b"\x09" + name + _pack_i64(v.ms)


def _enc_int_date(name, v):
    return b"\x09" + name + _pack_i64(int(v))


def _enc_objectid(name, v):
    b = v.binary
    if len(b) != 12:
        raise InvalidDocument("an ObjectId is 12 bytes, not %d" % len(b))
    return b"\x07" + name + b


def _enc_regex(name, v):
    return (b"\x0b" + name + _cstring(v.pattern, "a regex pattern")
            + _cstring(flags_to_letters(v.flags), "regex options"))


def _enc_code(name, v):
    code = _str_value(str(v))
    if v.scope is None:
        return b"\x0d" + name + code
    body = code + _doc(v.scope)
    return b"\x0f" + name + _pack_i32(len(body) + 4) + body


def _enc_timestamp(name, v):
    return b"\x11" + name + _pack_ts(v.inc, v.time)


def _enc_decimal128(name, v):
    return b"\x13" + name + v.bid


def _enc_decimal(name, v):
    try:
        return b"\x13" + name + decimal_to_bid(v)
    except ValueError as e:
        raise InvalidDocument(str(e)) from None


def _enc_minkey(name, v):
    return b"\xff" + name


def _enc_maxkey(name, v):
    return b"\x7f" + name


def _enc_dbpointer(name, v):
    return b"\x0c" + name + _str_value(v.namespace) + _enc_objectid(b"", v.id)[1:]


def _enc_dbref(name, v):
    return b"\x03" + name + _doc(v.as_doc())


_ENCODERS = {
    str: _enc_str, int: _enc_int, float: _enc_float, bool: _enc_bool, type(None): _enc_none, dict: _enc_doc,
    list: _enc_array, tuple: _enc_array, bytes: _enc_bytes, bytearray: _enc_bytes, memoryview: _enc_bytes,
    datetime.datetime: _enc_datetime, uuid.UUID: _enc_uuid, decimal.Decimal: _enc_decimal, re.Pattern: _enc_regex,
    Int64: _enc_int64, ObjectId: _enc_objectid, Binary: _enc_binary, Regex: _enc_regex, Code: _enc_code,
    Timestamp: _enc_timestamp, Decimal128: _enc_decimal128, MinKey: _enc_minkey, MaxKey: _enc_maxkey,
    DBPointer: _enc_dbpointer, DatetimeMS: _enc_datetime_ms,
}

# pymongo's bson classes (and subclasses of ours) by their _type_marker
# (9 is pymongo 4's DatetimeMS, an int of milliseconds).
_MARKERS = {
    5: _enc_binary, 7: _enc_objectid, 9: _enc_int_date, 11: _enc_regex, 13: _enc_code, 17: _enc_timestamp,
    18: _enc_int64, 19: _enc_decimal128, 100: _enc_dbref, 127: _enc_maxkey, 255: _enc_minkey,
}

# Subclasses of the built-in types, in the order they must be tested.
_BASES = (
    (bool, _enc_bool), (int, _enc_int), (float, _enc_float), (str, _enc_str),
    (collections.abc.Mapping, _enc_doc), (list, _enc_array), (tuple, _enc_array),
    ((bytes, bytearray, memoryview), _enc_bytes), (datetime.datetime, _enc_datetime), (uuid.UUID, _enc_uuid),
    (decimal.Decimal, _enc_decimal),
)


def _encoder_for(v):
    """The encoder of a type not in _ENCODERS, remembered for next time."""
    t = type(v)
    marker = getattr(t, "_type_marker", None)
    enc = _MARKERS.get(marker) if isinstance(marker, int) else None
    if enc is None:
        for base, base_enc in _BASES:
            if isinstance(v, base):
                enc = base_enc
                break
    if enc is None:
        raise InvalidDocument("cannot encode a %s as BSON: %r" % (t.__name__, v))
    if len(_ENCODERS) < 256:
        _ENCODERS[t] = enc
    return enc


# ------------------------------------------------------------------ decoding

def decode(data):
    """BSON bytes (exactly one document) as a dict."""
    if type(data) is not bytes:
        data = bytes(data)
    n = len(data)
    if n < 5:
        raise InvalidBSON("a BSON document is at least 5 bytes, not %d" % n)
    doc, end = decode_at(data, 0)
    if end != n:
        raise InvalidBSON("the document declares %d bytes but %d were given" % (end, n))
    return doc


def decode_at(data, pos):
    """The document that starts at data[pos] (bytes), and where it ends."""
    try:
        return _doc_at(data, pos)
    except InvalidBSON:
        raise
    except (struct.error, IndexError, ValueError, OverflowError, TypeError) as e:
        raise InvalidBSON("malformed BSON: %s" % e) from None
    except RecursionError:
        raise InvalidBSON("the document nests too deeply") from None


# A find reply as libbson lays it out: {cursor: {firstBatch: [doc, ...], id, ns}, ok}.
CURSOR_KEY = b"\x03cursor\x00"  # at offset 4, the cursor document at 12
FIRST_BATCH_KEY = b"\x04firstBatch\x00"  # at offset 16, the array at 28, its first element at 32
FIRST_ELEMENT = b"\x030\x00"  # the element "0", its document at 35


def first_batch_document(reply):
    """cursor.firstBatch[0] of a find reply, or None: only that document is
    decoded when the reply has libbson's layout, the whole reply otherwise."""
    if reply.startswith(CURSOR_KEY, 4) and reply.startswith(FIRST_BATCH_KEY, 16):
        if reply[32] == 0:
            return None
        if reply.startswith(FIRST_ELEMENT, 32):
            return decode_at(reply, 35)[0]
    batch = decode(reply)["cursor"]["firstBatch"]
    return batch[0] if batch else None


def _doc_at(data, pos):
    (n,) = _unpack_i32(data, pos)
    end = pos + n
    last = end - 1
    if n < 5 or end > len(data) or data[last] != 0:
        raise InvalidBSON("a document's length %d does not fit" % n)
    out = {}
    i = pos + 4
    index = data.index
    while i < last:
        t = data[i]
        k_end = index(0, i + 1, last)
        key = data[i + 1:k_end].decode()
        p = k_end + 1
        if t == 0x02:
            (sn,) = _unpack_i32(data, p)
            i = p + 4 + sn
            if sn < 1 or i > last or data[i - 1] != 0:
                raise InvalidBSON("a string's length %d does not fit" % sn)
            out[key] = data[p + 4:i - 1].decode()
        elif t == 0x10:
            out[key] = _unpack_i32(data, p)[0]
            i = p + 4
        elif t == 0x12:
            out[key] = Int64(_unpack_i64(data, p)[0])
            i = p + 8
        elif t == 0x01:
            out[key] = _unpack_f64(data, p)[0]
            i = p + 8
        elif t == 0x03:
            out[key], i = _doc_at(data, p)
        elif t == 0x04:
            out[key], i = _array_at(data, p)
        else:
            out[key], i = _value_at(data, t, p, last)
    if i != last:
        raise InvalidBSON("an element runs past the end of its document")
    return out, end


def _array_at(data, pos):
    (n,) = _unpack_i32(data, pos)
    end = pos + n
    last = end - 1
    if n < 5 or end > len(data) or data[last] != 0:
        raise InvalidBSON("an array's length %d does not fit" % n)
    out = []
    add = out.append
    i = pos + 4
    index = data.index
    while i < last:
        t = data[i]
        p = index(0, i + 1, last) + 1
        if t == 0x02:
            (sn,) = _unpack_i32(data, p)
            i = p + 4 + sn
            if sn < 1 or i > last or data[i - 1] != 0:
                raise InvalidBSON("a string's length %d does not fit" % sn)
            add(data[p + 4:i - 1].decode())
        elif t == 0x03:
            v, i = _doc_at(data, p)
            add(v)
        elif t == 0x10:
            add(_unpack_i32(data, p)[0])
            i = p + 4
        else:
            v, i = _value_at(data, t, p, last)
            add(v)
    if i != last:
        raise InvalidBSON("an element runs past the end of its array")
    return out, end


def _string_at(data, p, last):
    (n,) = _unpack_i32(data, p)
    e = p + 4 + n
    if n < 1 or e > last or data[e - 1] != 0:
        raise InvalidBSON("a string's length %d does not fit" % n)
    return data[p + 4:e - 1].decode(), e


def _cstring_at(data, p, last):
    e = data.index(0, p, last)
    return data[p:e].decode(), e + 1


def _value_at(data, t, p, last):
    """The value of type byte t at data[p]: (value, end)."""
    if t == 0x02:
        return _string_at(data, p, last)
    if t == 0x10:
        return _unpack_i32(data, p)[0], p + 4
    if t == 0x12:
        return Int64(_unpack_i64(data, p)[0]), p + 8
    if t == 0x01:
        return _unpack_f64(data, p)[0], p + 8
    if t == 0x03:
        return _doc_at(data, p)
    if t == 0x04:
        return _array_at(data, p)
    if t == 0x08:
        b = data[p]
        if b > 1:
            raise InvalidBSON("a boolean is 0 or 1, not %d" % b)
        return b == 1, p + 1
    if t == 0x0A or t == 0x06:  # null; undefined (deprecated) reads as None
        return None, p
    if t == 0x07:
        if p + 12 > last:
            raise InvalidBSON("an ObjectId runs past its document")
        return ObjectId._from_bytes(data[p:p + 12]), p + 12
    if t == 0x09:
        ms = _unpack_i64(data, p)[0]
        try:
            return _EPOCH + _timedelta(milliseconds=ms), p + 8
        except OverflowError:
            return DatetimeMS(ms), p + 8
    if t == 0x05:
        n, sub = _unpack_len_sub(data, p)
        start = p + 5
        end = start + n
        if n < 0 or end > last:
            raise InvalidBSON("a binary's length %d does not fit" % n)
        if sub == 0:
            return data[start:end], end
        if sub == 2:
            if n < 4 or _unpack_i32(data, start)[0] != n - 4:
                raise InvalidBSON("an old binary (subtype 2) whose lengths disagree")
            start += 4
        return Binary(data[start:end], sub), end
    if t == 0x13:
        if p + 16 > last:
            raise InvalidBSON("a Decimal128 runs past its document")
        return Decimal128.from_bid(data[p:p + 16]), p + 16
    if t == 0x0B:
        pattern, e = _cstring_at(data, p, last)
        flags, e = _cstring_at(data, e, last)
        return Regex(pattern, flags), e
    if t == 0x11:
        inc, time = _unpack_ts(data, p)
        return Timestamp(time, inc), p + 8
    if t == 0x0D:
        s, e = _string_at(data, p, last)
        return Code(s), e
    if t == 0x0E:  # symbol (deprecated): its string
        return _string_at(data, p, last)
    if t == 0x0F:
        (total,) = _unpack_i32(data, p)
        s, e = _string_at(data, p + 4, last)
        scope, e = _doc_at(data, e)
        if e != p + total or e > last:
            raise InvalidBSON("a code with scope whose length does not fit")
        return Code(s, scope), e
    if t == 0x0C:
        ns, e = _string_at(data, p, last)
        if e + 12 > last:
            raise InvalidBSON("a DBPointer runs past its document")
        return DBPointer(ns, ObjectId._from_bytes(data[e:e + 12])), e + 12
    if t == 0xFF:
        return MinKey(), p
    if t == 0x7F:
        return MaxKey(), p
    raise InvalidBSON("unknown BSON type 0x%02x" % t)
