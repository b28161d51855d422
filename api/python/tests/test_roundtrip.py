"""Every BSON type through the store, with each codec: insert, find_one,
and the value and its exact type come back."""

import datetime

import pytest

UTC = datetime.timezone.utc


def _every_type(t, codec_name):
    doc = {
        "_id": t.ObjectId(), "i32": 7, "i32neg": -2 ** 31, "i64": t.Int64(7), "i64big": t.Int64(2 ** 62),
        "f": 2.5, "fneg0": -0.0, "s": "ÉLAN 中 😀", "b": False, "bt": True, "none": None,
        "dt": datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC),
        "raw": b"\x00\xff", "bin2": t.Binary(b"old", 2), "bin3": t.Binary(b"0123456789abcdef", 3),
        "bin4": t.Binary(b"0123456789abcdef", 4), "bin5": t.Binary(b"\x01", 5), "bin80": t.Binary(b"\x01\x02", 0x80),
        "re": t.Regex("^a.c$", "im"), "ts": t.Timestamp(1700000000, 2), "dec": t.Decimal128("1.10"),
        "decnan": t.Decimal128("NaN"), "min": t.MinKey(), "max": t.MaxKey(), "code": t.Code("return 1"),
        "cws": t.Code("return x", {"x": 1}),
        "nested": {"z": 1, "a": [1, {"b": "c", "a": [[]]}], "m": {}},
    }
    if codec_name == "pure":
        doc["far"] = t.DatetimeMS(2 ** 62)
        doc["dbp"] = t.DBPointer("db.c", t.ObjectId(b"\x01" * 12))
    return doc


def test_every_type_round_trips_through_the_store(db):
    t = db.client.types
    doc = _every_type(t, db.client.codec.name)
    coll = db["types"]
    coll.insert_one(dict(doc))
    back = coll.find_one({"_id": doc["_id"]})
    version = back.pop("version")
    assert version == 0 and type(version) is t.Int64
    assert back == doc
    assert list(back) == list(doc)
    assert list(back["nested"]) == ["z", "a", "m"] and list(back["nested"]["a"][1]) == ["b", "a"]
    for k, v in doc.items():
        assert type(back[k]) is type(v), k
    assert back["bin4"].subtype == 4 and back["bin80"].subtype == 0x80
    assert back["dec"].bid == doc["dec"].bid  # "1.10" keeps its trailing zero
    assert str(back["dec"]) == "1.10"
    assert back["dt"].tzinfo is not None and back["dt"].utcoffset() == datetime.timedelta(0)
    assert back["re"].flags == doc["re"].flags


def test_datetimes_keep_milliseconds_in_utc(db):
    coll = db["dates"]
    naive = datetime.datetime(2024, 2, 29, 23, 59, 59, 999999)
    coll.insert_one({"_id": 1, "naive": naive, "aware": datetime.datetime(
        2024, 3, 1, 1, 0, 0, 500, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))})
    back = coll.find_one(1)
    assert back["naive"] == datetime.datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=UTC)
    assert back["aware"] == datetime.datetime(2024, 3, 1, 0, 0, 0, 0, tzinfo=UTC)


def test_int_widths(db):
    t = db.client.types
    coll = db["ints"]
    coll.insert_one({"_id": 1, "small": 5, "wide": 2 ** 31, "forced": t.Int64(5), "neg": -(2 ** 31) - 1})
    back = coll.find_one(1)
    assert type(back["small"]) is int
    assert type(back["wide"]) is t.Int64 and back["wide"] == 2 ** 31
    assert type(back["forced"]) is t.Int64 and back["forced"] == 5
    assert type(back["neg"]) is t.Int64
    # A filter matches by value across widths (PROTOCOL.md).
    assert coll.find_one({"forced": 5})["_id"] == 1 and coll.find_one({"small": t.Int64(5)})["_id"] == 1


@pytest.mark.parametrize("other", ["pure", "pymongo"])
def test_each_codec_takes_the_other_familys_classes(db, other):
    from gatedb import codec
    if codec.pymongo_bson() is None:
        pytest.skip("pymongo's bson is not installed")
    theirs = codec.get(other).types
    t = db.client.types
    coll = db["mixed"]
    oid = theirs.ObjectId()
    coll.insert_one({"_id": oid, "n": theirs.Int64(3), "d": theirs.Decimal128("2.5"), "r": theirs.Regex("x", "i"),
                     "b": theirs.Binary(b"\x01", 0x80), "ts": theirs.Timestamp(1, 2), "c": theirs.Code("f")})
    back = coll.find_one({"_id": t.ObjectId(oid.binary)})
    assert back["n"] == 3 and type(back["n"]) is t.Int64
    assert back["d"] == t.Decimal128("2.5")
    assert back["r"] == t.Regex("x", "i")
    assert back["b"] == t.Binary(b"\x01", 0x80)
    assert back["ts"] == t.Timestamp(1, 2)
    assert back["c"] == t.Code("f")
