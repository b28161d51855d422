"""The pure BSON codec against known bytes (the BSON spec's layouts and
bson-corpus vectors), its refusals, and hostile input; pymongo's codec
against the same bytes when it is installed.  No library needed."""

import collections
import datetime
import decimal
import random
import re
import uuid

import pytest

import gatedb
from gatedb import _bson, codec, types as T

UTC = datetime.timezone.utc
OID = T.ObjectId("5f1d7a1a1a1a1a1a1a1a1a1a")

# (document, its BSON bytes as hex); each decodes to exactly the document.
KNOWN = [
    ({"a": 1}, "0c000000" "10" "6100" "01000000" "00"),
    ({"a": -2 ** 31}, "0c000000" "10" "6100" "00000080" "00"),
    ({"a": 2 ** 31 - 1}, "0c000000" "10" "6100" "ffffff7f" "00"),
    ({"a": T.Int64(1)}, "10000000" "12" "6100" "0100000000000000" "00"),
    ({"a": T.Int64(-1)}, "10000000" "12" "6100" "ffffffffffffffff" "00"),
    ({"d": 1.5}, "10000000" "01" "6400" "000000000000f83f" "00"),
    ({"d": -0.0}, "10000000" "01" "6400" "0000000000000080" "00"),
    ({"s": "é"}, "0f000000" "02" "7300" "03000000" "c3a900" "00"),
    ({"s": "a\x00b"}, "10000000" "02" "7300" "04000000" "610062" "00" "00"),
    ({"b": True, "n": None}, "0c000000" "08" "6200" "01" "0a" "6e00" "00"),
    ({"x": []}, "0d000000" "04" "7800" "0500000000" "00"),
    ({"x": [True, "y"]}, "1a000000" "04" "7800" "12000000" "08" "3000" "01" "02" "3100" "02000000" "7900" "00" "00"),
    ({"o": {}}, "0d000000" "03" "6f00" "0500000000" "00"),
    ({"_id": OID}, "16000000" "07" "5f696400" "5f1d7a1a1a1a1a1a1a1a1a1a" "00"),
    ({"t": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)}, "10000000" "09" "7400" "e803000000000000" "00"),
    ({"t": datetime.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)},
     "10000000" "09" "7400" "ffffffffffffffff" "00"),
    ({"t": T.DatetimeMS(-62135596800001)}, "10000000" "09" "7400" "ff27d3ed7cc7ffff" "00"),
    ({"b": b"\x01\x02"}, "0f000000" "05" "6200" "02000000" "00" "0102" "00"),
    ({"b": T.Binary(b"\x01", 2)}, "12000000" "05" "6200" "05000000" "02" "01000000" "01" "00"),
    ({"b": T.Binary(b"\xff", 0x80)}, "0e000000" "05" "6200" "01000000" "80" "ff" "00"),
    ({"b": T.Binary(uuid.UUID(int=1).bytes, 4)},
     "1d000000" "05" "6200" "10000000" "04" "00000000000000000000000000000001" "00"),
    ({"r": T.Regex("a", "is")}, "0d000000" "0b" "7200" "6100" "697300" "00"),
    ({"c": T.Code("x")}, "0e000000" "0d" "6300" "02000000" "7800" "00"),
    ({"c": T.Code("x", {"a": 1})}, "1e000000" "0f" "6300" "16000000" "02000000" "7800" "0c0000001061000100000000" "00"),
    ({"ts": T.Timestamp(1, 2)}, "11000000" "11" "747300" "02000000" "01000000" "00"),
    ({"m": T.MinKey()}, "08000000" "ff" "6d00" "00"),
    ({"m": T.MaxKey()}, "08000000" "7f" "6d00" "00"),
    ({"d": T.Decimal128("0.3")}, "18000000" "13" "6400" "03000000000000000000000000003e30" "00"),
    ({"p": T.DBPointer("a.b", OID)}, "1c000000" "0c" "7000" "04000000" "612e6200" "5f1d7a1a1a1a1a1a1a1a1a1a" "00"),
    ({"z": 1, "a": {"y": 2, "b": 3}}, "22000000" "107a0001000000" "0361001300000010790002000000106200030000000000"),
]


@pytest.mark.parametrize("doc, hexbytes", KNOWN)
def test_pure_codec_writes_and_reads_known_bytes(doc, hexbytes):
    data = bytes.fromhex(hexbytes)
    assert _bson.encode(doc) == data
    back = _bson.decode(data)
    assert back == doc
    assert [type(v) for v in back.values()] == [type(v) for v in doc.values()]
    assert list(back) == list(doc)


def test_deprecated_types_decode():
    assert _bson.decode(bytes.fromhex("0e000000" "0e" "7300" "02000000" "7800" "00")) == {"s": "x"}  # symbol
    assert _bson.decode(bytes.fromhex("08000000" "06" "7500" "00")) == {"u": None}  # undefined


# (text, the 16 BID bytes as hex), from the BSON corpus (decimal128-1.json,
# decimal128-2.json): each vector also round trips the value.
DECIMALS = [
    ("0", "00000000000000000000000000004030"),
    ("-0", "000000000000000000000000000040b0"),
    ("-0.0", "00000000000000000000000000003eb0"),
    ("1", "01000000000000000000000000004030"),
    ("0.3", "03000000000000000000000000003e30"),
    ("0.001234", "d2040000000000000000000000003430"),
    ("1234567890123456789012345678901234", "f2af967ed05c82de3297ff6fde3c4030"),
    ("9.999999999999999999999999999999999E+6144", "ffffffff638e8d37c087adbe09edff5f"),
    ("1E-6176", "01000000000000000000000000000000"),
    ("-1E-6176", "01000000000000000000000000000080"),
    ("1.0E+6112", "0a00000000000000000000000000fe5f"),
    ("1.000000000000000000000000000000000E+6144", "000000000a5bc138938d44c64d31fe5f"),
    ("Infinity", "00000000000000000000000000000078"),
    ("-Infinity", "000000000000000000000000000000f8"),
    ("NaN", "0000000000000000000000000000007c"),
    ("-NaN", "000000000000000000000000000000fc"),
    ("sNaN", "0000000000000000000000000000007e"),
]


@pytest.mark.parametrize("text, bid_hex", DECIMALS)
def test_decimal128_known_bid_bytes(text, bid_hex):
    d = T.Decimal128(text)
    assert d.bid.hex() == bid_hex
    back = T.Decimal128.from_bid(bytes.fromhex(bid_hex)).to_decimal()
    if back.is_nan():
        assert str(back) == text
    else:
        assert back == decimal.Decimal(text) and str(back) == text


def test_decimal128_clamps_and_refuses_like_ieee():
    assert T.Decimal128("1E+6144").bid == T.Decimal128("1.000000000000000000000000000000000E+6144").bid
    assert T.Decimal128("0E+9999").to_decimal().as_tuple().exponent == 6111  # zero: the exponent clamps
    assert T.Decimal128("0E-9999").to_decimal().as_tuple().exponent == -6176
    assert T.Decimal128("1000E-6179").bid == T.Decimal128("1E-6176").bid  # exact: trailing zeros go
    for inexact in ("1.0000000000000000000000000000000001", "1E+6145", "1E-6177", "12345678901234567890123456789012345"):
        with pytest.raises(ValueError):
            T.Decimal128(inexact)
    # The "11" combination form with a coefficient over 10^34 is non-canonical: zero.
    assert T.Decimal128.from_bid(bytes.fromhex("ffffffffffffffffffffffffffffff6f")).to_decimal() == 0


def test_decimal128_agrees_with_pymongo_on_random_values():
    bson = codec.pymongo_bson()
    if bson is None:
        pytest.skip("pymongo's bson is not installed")
    rng = random.Random(17)
    for _ in range(2000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 34)))
        text = "%s%sE%d" % (rng.choice(["", "-"]), digits, rng.randint(-6176, 6111 - len(digits) + 1))
        ours = T.Decimal128(text)
        assert ours.bid == bson.Decimal128(text).bid, text
        assert ours.to_decimal() == bson.Decimal128(text).to_decimal(), text


def test_python_values_map_as_pymongo_maps_them():
    back = _bson.decode(_bson.encode({
        "naive": datetime.datetime(2024, 1, 1, 12, 30, 0, 999999),
        "aware": datetime.datetime(2024, 1, 1, 14, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
        "pat": re.compile("^x", re.I | re.M), "tuple": (1, 2), "dec": decimal.Decimal("2.5"),
        "uuid": uuid.UUID(int=5), "big": 2 ** 40, "od": collections.OrderedDict([("b", 1), ("a", 2)]),
        "ba": bytearray(b"\x01"), "true": True}))
    assert back["naive"] == datetime.datetime(2024, 1, 1, 12, 30, 0, 999000, tzinfo=UTC)  # ms, UTC
    assert back["aware"] == datetime.datetime(2024, 1, 1, 12, 30, tzinfo=UTC)
    assert back["aware"].tzinfo is UTC
    assert back["pat"] == T.Regex("^x", "imu")  # a str pattern carries re.UNICODE, as pymongo writes it
    assert back["tuple"] == [1, 2]
    assert back["dec"] == T.Decimal128("2.5")
    assert back["uuid"] == T.Binary(uuid.UUID(int=5).bytes, 4) and back["uuid"].as_uuid() == uuid.UUID(int=5)
    assert back["big"] == 2 ** 40 and type(back["big"]) is T.Int64
    assert list(back["od"]) == ["b", "a"] and type(back["od"]) is dict
    assert back["ba"] == b"\x01" and type(back["ba"]) is bytes
    assert back["true"] is True


def test_dates_outside_datetime_range_are_kept():
    for ms in (-2 ** 63, 2 ** 63 - 1, 253402300800000, -62135596800001):
        back = _bson.decode(_bson.encode({"t": T.DatetimeMS(ms)}))["t"]
        assert back == T.DatetimeMS(ms)
    edge = _bson.decode(_bson.encode({"t": T.DatetimeMS(253402300799999)}))["t"]  # 9999-12-31T23:59:59.999
    assert edge == datetime.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)


class Opaque:
    pass


@pytest.mark.parametrize("bad", [
    {1: "x"}, {None: 1}, {"a\x00b": 1}, {"a": Opaque()}, {"a": 2 ** 63}, {"a": -2 ** 63 - 1}, {"s": "\ud800"},
    {"k\ud800": 1}, {"r": T.Regex("a\x00", "")}, {"n": {"deep": [{"x": {1, 2}}]}}, {"d": decimal.Decimal("1E+7000")},
    {"c": T.Code("x", {"bad": object()})},
])
def test_unencodable_values_raise_invalid_document(bad):
    with pytest.raises(gatedb.InvalidDocument):
        _bson.encode(bad)


def test_encode_takes_only_mappings_and_stops_cycles():
    with pytest.raises(gatedb.InvalidDocument):
        _bson.encode([("a", 1)])
    loop = {}
    loop["self"] = loop
    with pytest.raises(gatedb.InvalidDocument):
        _bson.encode(loop)


def test_pymongo_classes_encode_with_the_pure_codec():
    bson = codec.pymongo_bson()
    if bson is None:
        pytest.skip("pymongo's bson is not installed")
    doc = {"o": bson.ObjectId(OID.binary), "i": bson.Int64(1), "d": bson.Decimal128("0.3"),
           "b": bson.Binary(b"\xff", 0x80), "r": bson.Regex("a", "is"), "c": bson.Code("x", {"a": 1}),
           "ts": bson.Timestamp(1, 2), "mn": bson.MinKey(), "mx": bson.MaxKey()}
    ours = {"o": OID, "i": T.Int64(1), "d": T.Decimal128("0.3"), "b": T.Binary(b"\xff", 0x80),
            "r": T.Regex("a", "is"), "c": T.Code("x", {"a": 1}), "ts": T.Timestamp(1, 2), "mn": T.MinKey(),
            "mx": T.MaxKey()}
    assert _bson.encode(doc) == _bson.encode(ours)


@pytest.mark.parametrize("doc, hexbytes", [k for k in KNOWN if not isinstance(next(iter(k[0].values())),
                                                                            (T.DBPointer, T.DatetimeMS))])
def test_pymongo_codec_writes_the_same_bytes_from_our_classes(doc, hexbytes):
    if codec.pymongo_bson() is None:
        pytest.skip("pymongo's bson is not installed")
    pm = codec.get("pymongo")
    assert pm.encode(doc) == bytes.fromhex(hexbytes)
    back = pm.decode(bytes.fromhex(hexbytes))
    assert _bson.encode(back) == bytes.fromhex(hexbytes)  # and the pure codec takes pymongo's values back


def test_pymongo_codec_refusals_are_invalid_document():
    if codec.pymongo_bson() is None:
        pytest.skip("pymongo's bson is not installed")
    pm = codec.get("pymongo")
    for bad in ({1: "x"}, {"a\x00": 1}, {"a": Opaque()}, {"a": 2 ** 64}, {"s": "\ud800"}, {"p": T.DBPointer("a.b", OID)}):
        with pytest.raises(gatedb.InvalidDocument):
            pm.encode(bad)
    with pytest.raises(gatedb.InvalidBSON):
        pm.decode(b"\x05\x00\x00\x00\x01")


def test_hostile_bytes_raise_invalid_bson_only():
    good = _bson.encode({"a": "xyz", "b": {"c": [1, 2.5, None, T.Int64(3)]}, "d": b"bin", "e": OID,
                         "f": T.Code("x", {"y": 1}), "g": T.Regex("p", "i"), "h": T.Binary(b"12", 2),
                         "i": T.Decimal128("1.5"), "j": datetime.datetime(2020, 1, 1, tzinfo=UTC),
                         "k": T.DBPointer("a.b", OID), "l": True, "m": T.Timestamp(3, 4)})
    rng = random.Random(7)
    for _ in range(4000):
        b = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            _bson.decode(bytes(b))
        except gatedb.InvalidBSON:
            pass
    for n in range(len(good)):
        with pytest.raises(gatedb.InvalidBSON):
            _bson.decode(good[:n])
    with pytest.raises(gatedb.InvalidBSON):
        _bson.decode(good + b"\x00")
    deep = b"\x05\x00\x00\x00\x00"
    for _ in range(3000):  # well-formed, but nested far beyond Python's recursion limit
        inner = b"\x03a\x00" + deep
        deep = (len(inner) + 5).to_bytes(4, "little") + inner + b"\x00"
    with pytest.raises(gatedb.InvalidBSON):
        _bson.decode(deep)


def test_codec_choice(monkeypatch):
    assert codec.get("pure").name == "pure" and codec.get(codec.get("pure")) is codec.get("pure")
    with pytest.raises(ValueError):
        codec.get("fast")
    assert gatedb.CODEC == codec.get().name and gatedb.ObjectId is codec.get().types.ObjectId
    bson = codec.pymongo_bson()
    if bson is None:
        assert codec.get().name == "pure"
        with pytest.raises(ImportError):
            codec.get("pymongo")
        return
    # The default is pymongo's codec only when its C extension is there, and never under GATEDB_PYTHON_PURE=1.
    monkeypatch.delenv("GATEDB_PYTHON_PURE", raising=False)
    assert codec.get().name == ("pymongo" if bson.has_c() else "pure")
    monkeypatch.setattr(bson, "has_c", lambda: True)
    assert codec.get().name == "pymongo"
    monkeypatch.setenv("GATEDB_PYTHON_PURE", "1")
    assert codec.get().name == "pure"
