"""The codecs against libbson itself: a document of every BSON type written
as canonical Extended JSON (parsed by libbson inside the library, through
gatedb_command_json) must come back, as BSON, byte for byte what our
encoder writes for the same values; and what our encoder writes must read
back, through libbson's canonical JSON, as the same JSON."""

import datetime
import json

import pytest

from gatedb import _bson, types as T

UTC = datetime.timezone.utc

CANONICAL = {
    "_id": {"$numberInt": "1"},
    "i32": {"$numberInt": "-7"},
    "i64": {"$numberLong": "7"},
    "i64big": {"$numberLong": "-9223372036854775808"},
    "dbl": {"$numberDouble": "2.5"},
    "s": "\u00e9\u4e2d\U0001f600",
    "doc": {"z": {"$numberInt": "1"}, "a": {"b": {"$numberInt": "2"}}},
    "arr": [{"$numberInt": "1"}, "x", [], {}],
    "bin0": {"$binary": {"base64": "AAE=", "subType": "00"}},
    "bin2": {"$binary": {"base64": "AAE=", "subType": "02"}},
    "bin4": {"$binary": {"base64": "c//SZESzTGmQ6OfR38A11A==", "subType": "04"}},
    "bin80": {"$binary": {"base64": "/w==", "subType": "80"}},
    "oid": {"$oid": "5f1d7a1a1a1a1a1a1a1a1a1a"},
    "t": True,
    "f": False,
    "dt": {"$date": {"$numberLong": "1700000000123"}},
    "dtneg": {"$date": {"$numberLong": "-1"}},
    "far": {"$date": {"$numberLong": "-62135596800001"}},
    "nul": None,
    "re": {"$regularExpression": {"pattern": "^a", "options": "imsx"}},
    "code": {"$code": "x"},
    "cws": {"$code": "x", "$scope": {"a": {"$numberInt": "1"}}},
    "ts": {"$timestamp": {"t": 5, "i": 6}},
    "dec": {"$numberDecimal": "0.3"},
    "decneg": {"$numberDecimal": "-1.5E-10"},
    "min": {"$minKey": 1},
    "max": {"$maxKey": 1},
    "dbp": {"$dbPointer": {"$ref": "a.b", "$id": {"$oid": "5f1d7a1a1a1a1a1a1a1a1a1b"}}},
    "version": {"$numberLong": "0"},
}

PYTHON = {
    "_id": 1, "i32": -7, "i64": T.Int64(7), "i64big": T.Int64(-2 ** 63), "dbl": 2.5, "s": "é中😀",
    "doc": {"z": 1, "a": {"b": 2}}, "arr": [1, "x", [], {}], "bin0": b"\x00\x01", "bin2": T.Binary(b"\x00\x01", 2),
    "bin4": T.Binary(bytes.fromhex("73ffd26444b34c6990e8e7d1dfc035d4"), 4), "bin80": T.Binary(b"\xff", 0x80),
    "oid": T.ObjectId("5f1d7a1a1a1a1a1a1a1a1a1a"), "t": True, "f": False,
    "dt": datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC),
    "dtneg": datetime.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), "far": T.DatetimeMS(-62135596800001),
    "nul": None, "re": T.Regex("^a", "imsx"), "code": T.Code("x"), "cws": T.Code("x", {"a": 1}),
    "ts": T.Timestamp(5, 6), "dec": T.Decimal128("0.3"), "decneg": T.Decimal128("-1.5E-10"), "min": T.MinKey(),
    "max": T.MaxKey(), "dbp": T.DBPointer("a.b", T.ObjectId("5f1d7a1a1a1a1a1a1a1a1a1b")), "version": T.Int64(0),
}


def _stored_bytes(db, raw, coll, _id):
    """The stored document's BSON as the library returns it (libbson's bytes)."""
    rc, reply = raw(db.client, {"find": coll, "filter": {"_id": _id}, "$db": db.name})
    assert rc == 0
    start = 35  # reply = {cursor: {firstBatch: [doc]...}}: the layout codec.first_batch_document relies on
    assert reply[4:11] == b"\x03cursor" and reply[16:28] == b"\x04firstBatch\x00"
    n = int.from_bytes(reply[start:start + 4], "little")
    return reply[start:start + n]


def _json_insert(db, coll, doc_json):
    out = json.loads(db.client.command_json(json.dumps({"insert": coll, "documents": [doc_json], "$db": db.name})))
    assert out["ok"] == 1 and out["n"] == 1, out


def test_libbson_bytes_equal_ours(pdb, raw):
    _json_insert(pdb, "every", {k: v for k, v in CANONICAL.items() if k != "version"})
    stored = _stored_bytes(pdb, raw, "every", 1)
    assert stored == _bson.encode(PYTHON)
    assert _bson.decode(stored) == PYTHON


def test_our_bytes_read_back_as_libbsons_canonical_json(pdb):
    pdb["mine"].insert_one({k: v for k, v in PYTHON.items() if k != "version"})
    reply = json.loads(pdb.client.command_json('{"find": "mine", "$db": "%s"}' % pdb.name, canonical=True))
    assert reply["cursor"]["firstBatch"] == [CANONICAL]


def test_both_codecs_agree_with_libbson(db, raw):
    skip = set() if db.client.codec.name == "pure" else {"far", "dbp"}  # pymongo 3.11: no date before year 1, no DBPointer
    _json_insert(db, "every", {k: v for k, v in CANONICAL.items() if k not in skip | {"version"}})
    stored = _stored_bytes(db, raw, "every", 1)
    codec, types = db.client.codec, db.client.types
    back = codec.decode(stored)
    assert codec.encode(back) == stored
    assert back["i64"] == 7 and type(back["i64"]) is types.Int64
    assert back["i32"] == -7 and type(back["i32"]) is int
    assert back["bin4"] == types.Binary(PYTHON["bin4"], 4)
    assert back["dt"] == PYTHON["dt"] and back["dt"].utcoffset() == datetime.timedelta(0)


def test_symbol_and_undefined_read_as_str_and_none(pdb, raw):
    _json_insert(pdb, "old", {"_id": 2, "sym": {"$symbol": "s"}, "undef": {"$undefined": True}})
    assert _bson.decode(_stored_bytes(pdb, raw, "old", 2)) == {"_id": 2, "sym": "s", "undef": None,
                                                                "version": T.Int64(0)}


DECIMALS = ["0", "-0", "0.3", "-0.0", "1E+3", "0E+3", "0.001234", "1234567890123456789012345678901234",
            "9.999999999999999999999999999999999E+6144", "1E+6144", "1E-6176", "-1E-6176", "1E+6112",
            "-12345.6789E-10", "0.1000000000000000055511151231257827", "Infinity", "-Infinity", "NaN",
            "1.000000000000000000000000000000000E+6144"]


@pytest.mark.parametrize("text", DECIMALS)
def test_decimal128_bid_bytes_agree_with_libbson(pdb, raw, text):
    _json_insert(pdb, "dec", {"_id": text, "d": {"$numberDecimal": text}})
    stored = _bson.decode(_stored_bytes(pdb, raw, "dec", text))["d"]
    assert stored.bid == T.Decimal128(text).bid
    reply = json.loads(pdb.client.command_json(json.dumps({"find": "dec", "filter": {"_id": text}, "$db": pdb.name}),
                                               canonical=True))
    assert reply["cursor"]["firstBatch"][0]["d"] == {"$numberDecimal": str(stored)}  # libbson's text is ours
