"""The pure-Python BSON codec against bytes libbson produced, and hostile input."""

import datetime
import decimal
import re
import uuid

import pytest

import gatedb
from gatedb import _bson, _ffi
from gatedb.types import Decimal128


@pytest.mark.parametrize("doc, hexbytes", [
    ({"a": 1}, "0c0000001061000100000000"),
    ({"a": gatedb.Int64(1)}, "10000000126100010000000000000000"),
    ({"s": "é"}, "0f00000002730003000000c3a90000"),
    ({"b": True, "n": None}, "0c00000008620001" + "0a6e00" + "00"),
    ({"d": 1.5}, "10000000016400000000000000f83f00"),
    ({"x": []}, "0d000000047800050000000000"),
])
def test_encodes_known_bytes(doc, hexbytes):
    assert _bson.encode_document(doc).hex() == hexbytes
    assert _bson.decode_document(bytes.fromhex(hexbytes)) == doc


@pytest.mark.parametrize("text, bid_hex", [
    ("0.3", "03000000000000000000000000003e30"),
    ("1", "01000000000000000000000000004030"),
])
def test_decimal128_known_bid_bytes(text, bid_hex):
    assert Decimal128(text).bid.hex() == bid_hex
    assert Decimal128(bytes.fromhex(bid_hex)).to_decimal() == decimal.Decimal(text)


DECIMALS = ["0.3", "-0", "0E+3", "Infinity", "-Infinity", "NaN", "9999999999999999999999999999999999",
            "9999999999999999999999999999999998", "1E+6144", "1E-6176", "-12345.6789E-10",
            "0.1000000000000000055511151231257827", "1.000000000000000000000000000000000E+6144"]


@pytest.mark.parametrize("text", DECIMALS)
def test_decimal128_bytes_agree_with_libbson(gdb, text):
    # libbson parses {"$numberDecimal": text} on the C side (the Extended
    # JSON door); the stored bytes come back through our decoder.
    rc, reply = _json_command(gdb, '{"insert": "dec", "documents": [{"_id": "%s", "d": {"$numberDecimal": "%s"}}], '
                                   '"$db": "t"}' % (text, text))
    assert rc == 0, reply
    stored = gdb["t"]["dec"].find_one({"_id": text})["d"]
    assert stored.bid == Decimal128(text).bid
    if text != "NaN":  # the value (1E+6144 is stored clamped, as 1.000...E+6144)
        assert stored.to_decimal() == decimal.Decimal(text)


def _json_command(gdb, text):
    import ctypes
    L = _ffi.lib()
    out = ctypes.c_void_p()
    rc = L.gatedb_command_json(gdb._handle, text.encode(), 0, ctypes.byref(out), None)
    return rc, _ffi.take_string(L, out)


def test_decimal128_refuses_inexact():
    with pytest.raises(ValueError):
        Decimal128("1.0000000000000000000000000000000001")  # 35 digits
    with pytest.raises(ValueError):
        Decimal128("1E+7000")


def test_every_type_round_trips_through_the_codec():
    doc = {
        "oid": gatedb.ObjectId(), "i32": 7, "i64": gatedb.Int64(7), "big": 2 ** 40, "f": 0.1,
        "s": "naïve", "t": True, "none": None,
        "dt": datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=datetime.timezone.utc),
        "far": gatedb.DatetimeMS(2 ** 62), "bin": b"\x00\x01", "bin5": gatedb.Binary(b"\x02", 5),
        "bin2": gatedb.Binary(b"old", 2), "u": uuid.UUID(int=5), "re": gatedb.Regex("a.b", "is"),
        "ts": gatedb.Timestamp(1700000000, 3), "dec": Decimal128("1.50"), "min": gatedb.MinKey(),
        "max": gatedb.MaxKey(), "code": gatedb.Code("return 1"), "cws": gatedb.Code("x", {"x": 1}),
        "dbp": gatedb.DBPointer("db.c", gatedb.ObjectId(b"\x01" * 12)),
        "nested": {"z": 1, "a": [1, {"b": [2]}], "m": {}},
    }
    back = _bson.decode_document(_bson.encode_document(doc))
    assert back == doc
    assert list(back["nested"]) == ["z", "a", "m"]
    assert type(back["i64"]) is gatedb.Int64 and type(back["i32"]) is int
    assert type(back["big"]) is gatedb.Int64


def test_python_values_map_as_pymongo_maps_them():
    back = _bson.decode_document(_bson.encode_document({
        "naive": datetime.datetime(2024, 1, 1), "pat": re.compile("^x", re.I | re.M), "t": (1, 2),
        "dec": decimal.Decimal("2.5")}))
    assert back["naive"] == datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    assert back["pat"] == gatedb.Regex("^x", "imu")  # a str pattern is re.UNICODE, as pymongo says
    assert back["t"] == [1, 2]
    assert back["dec"] == Decimal128("2.5")


@pytest.mark.parametrize("bad", [
    {1: "x"}, {"a\x00b": 1}, {"a": object()}, {"a": 2 ** 64}, {"s": "\ud800"},
    {"r": gatedb.Regex("a\x00", "")},
])
def test_unencodable_values_raise_invalid_document(bad):
    with pytest.raises(gatedb.InvalidDocument):
        _bson.encode_document(bad)


def test_too_deep_raises_invalid_document():
    doc = {}
    for _ in range(300):
        doc = {"a": doc}
    with pytest.raises(gatedb.InvalidDocument):
        _bson.encode_document(doc)


def test_hostile_bytes_raise_invalid_bson():
    good = _bson.encode_document({"a": "xyz", "b": {"c": [1, 2.5, None]}, "d": b"bin"})
    import random
    rng = random.Random(7)
    for _ in range(3000):
        b = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            _bson.decode_document(bytes(b))
        except gatedb.InvalidBSON:
            pass
    for n in range(len(good)):
        with pytest.raises(gatedb.InvalidBSON):
            _bson.decode_document(good[:n])
