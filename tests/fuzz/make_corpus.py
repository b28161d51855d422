#!/usr/bin/env python3
"""Writes the seed corpora under tests/fuzz/corpus/ (no dependencies).

fuzz_command_json: Extended JSON command text.  fuzz_bson_insert: one raw BSON
document.  fuzz_update_apply / fuzz_matcher: 4-byte little-endian length of
the first document, the first document, then the second (fuzz_split.h).
fuzz_decimal_order: two tagged numbers (see the target's header).
Run from anywhere: python3 tests/fuzz/make_corpus.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def cstr(s):
    return s.encode() + b"\0"


def elem(name, v):
    if isinstance(v, bool):
        return b"\x08" + cstr(name) + (b"\x01" if v else b"\x00")
    if isinstance(v, int):
        if -2**31 <= v < 2**31:
            return b"\x10" + cstr(name) + struct.pack("<i", v)
        return b"\x12" + cstr(name) + struct.pack("<q", v)
    if isinstance(v, float):
        return b"\x01" + cstr(name) + struct.pack("<d", v)
    if isinstance(v, str):
        b = v.encode() + b"\0"
        return b"\x02" + cstr(name) + struct.pack("<i", len(b)) + b
    if v is None:
        return b"\x0a" + cstr(name)
    if isinstance(v, list):
        return b"\x04" + cstr(name) + doc({str(i): x for i, x in enumerate(v)})
    if isinstance(v, dict):
        return b"\x03" + cstr(name) + doc(v)
    raise TypeError(v)


def doc(d):
    body = b"".join(elem(k, v) for k, v in d.items())
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def pair(a, b):
    da = doc(a)
    return struct.pack("<I", len(da)) + da + doc(b)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    mode = "w" if isinstance(data, str) else "wb"
    with open(os.path.join(d, name), mode) as f:
        f.write(data)


COMMANDS = {
    "ping.json": '{"ping": 1}',
    "insert.json": '{"insert": "c", "documents": [{"_id": 1, "a": [1, 2, {"b": "x"}], "n": {"$numberLong": "7"}}]}',
    "find.json": '{"find": "c", "filter": {"a": {"$gt": 1}}, "projection": {"a": 1}, "sort": {"_id": -1}, "limit": 5}',
    "update.json": '{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"version": 1}, "$push": {"a": 3}}, "upsert": true}]}',
    "update_gate.json": '{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"s": "done"}}, "basisVersion": 0}], "writeContext": {"agentId": "a1", "taskId": "t1", "writeSeq": 1}}',
    "delete.json": '{"delete": "c", "deletes": [{"q": {"a": {"$in": [1, 2]}}, "limit": 1}]}',
    "fam.json": '{"findAndModify": "c", "query": {"_id": 2}, "update": {"$set": {"x": {"$date": "2024-01-01T00:00:00Z"}}}, "upsert": true, "new": true}',
    "count.json": '{"count": "c", "query": {"a": {"$elemMatch": {"b": "x"}}}}',
    "distinct.json": '{"distinct": "c", "key": "a.b"}',
    "create.json": '{"create": "d", "conflictPolicy": "fieldMerge"}',
    "list.json": '{"listCollections": 1}',
    "txn.json": '{"insert": "c", "documents": [{"_id": 9}], "lsid": {"id": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAA==", "subType": "04"}}}, "txnNumber": {"$numberLong": "1"}, "startTransaction": true, "autocommit": false}',
    "drop.json": '{"drop": "d"}',
}

BSON_DOCS = {
    "simple.bson": {"_id": 1, "a": "x"},
    "nested.bson": {"_id": "k", "a": {"b": [1, 2.5, None, True]}, "n": 2**40},
    "no_id.bson": {"x": [{"y": 1}, {"y": 2}]},
    "version.bson": {"_id": 3, "version": 5},
}

UPDATES = {
    "set.bson": ({"$set": {"a.b": 1, "c": "x"}}, {"_id": 1, "a": {"b": 0}}),
    "inc_version.bson": ({"$inc": {"version": 1, "n": 2}}, {"_id": 1, "version": 3, "n": 1}),
    "in_place.bson": ({"$set": {"s": "a longer value", "b": [1]}, "$inc": {"n": 2**40}, "$mul": {"t": 2}},
                      {"_id": 1, "s": "x", "n": 1, "version": 3, "b": {"k": 1}, "t": 2.5}),
    "push_each.bson": ({"$push": {"arr": {"$each": [3, 1, 2], "$sort": 1, "$slice": -2, "$position": 0}}},
                       {"_id": 1, "arr": [5]}),
    "positional.bson": ({"$set": {"arr.$": 9, "arr2.$[]": 0}}, {"_id": 1, "arr": [1, 2], "arr2": [1, 2, 3]}),
    "rename_unset.bson": ({"$rename": {"a": "b"}, "$unset": {"c": ""}}, {"_id": 1, "a": 1, "c": 2}),
    "replace.bson": ({"x": 1, "y": [1, 2]}, {"_id": 1, "version": 0, "z": 1}),
    "pull_addtoset.bson": ({"$pull": {"a": {"$gt": 1}}, "$addToSet": {"b": {"$each": [1, 1, 2]}}},
                           {"_id": 1, "a": [1, 2, 3], "b": [2]}),
    "arith.bson": ({"$mul": {"m": 2.5}, "$min": {"lo": 0}, "$max": {"hi": 10}, "$bit": {"f": {"or": 4}},
                    "$pop": {"p": -1}, "$setOnInsert": {"new": True}, "$currentDate": {"t": True}},
                   {"_id": 1, "m": 2, "lo": 5, "hi": 1, "f": 1, "p": [1, 2]}),
}

MATCHERS = {
    "eq.bson": ({"a": 1}, {"a": [0, 1]}),
    "ops.bson": ({"n": {"$gte": 2, "$lt": 10}, "s": {"$in": ["x", "y"]}, "m": {"$exists": True}},
                 {"n": 3, "s": "y", "m": None}),
    "logic.bson": ({"$or": [{"a.b": {"$size": 2}}, {"$nor": [{"c": {"$ne": 1}}]}], "$and": [{"d": {"$not": {"$gt": 5}}}]},
                   {"a": {"b": [1, 2]}, "c": 1, "d": 3}),
    "elem.bson": ({"arr": {"$elemMatch": {"x": {"$mod": [2, 0]}, "y": {"$type": "string"}}}},
                  {"arr": [{"x": 1}, {"x": 4, "y": "s"}]}),
    "all_regex.bson": ({"t": {"$all": ["a", "b"]}, "r": {"$regex": "^ab.*c$", "$options": "i"}},
                       {"t": ["b", "a", "c"], "r": "ABxC"}),
    "expr.bson": ({"c": 1, "$or": [{"$expr": {"$gt": ["$a", {"$divide": ["$b", 2]}]}}, {"d": {"$exists": True}}]},
                  {"a": 2, "b": 1, "c": 1}),
}

# fuzz_expression: {"e": <expression>} and the document it is evaluated on.
EXPRESSIONS = {
    "arith.bson": ({"e": {"$add": ["$a", {"$multiply": ["$b", 2]}, {"$mod": [7, 3]}]}}, {"a": 1, "b": 2.5}),
    "string.bson": ({"e": {"$concat": [{"$toUpper": "$s"}, "-", {"$substrCP": ["$s", 1, 2]},
                                       {"$trim": {"input": "  x "}}]}}, {"s": "héllo"}),
    "array.bson": ({"e": {"$map": {"input": {"$filter": {"input": "$arr", "cond": {"$gt": ["$$this", 1]}}},
                                   "as": "x", "in": {"$reduce": {"input": [1, 2], "initialValue": "$$x",
                                                                 "in": {"$add": ["$$value", "$$this"]}}}}}},
                   {"arr": [1, 2, 3, None]}),
    "cond.bson": ({"e": {"$switch": {"branches": [{"case": {"$eq": ["$t", "a"]}, "then": {"$ifNull": ["$n", 0]}}],
                                     "default": {"$cond": ["$f", 1, 2]}}}}, {"t": "b", "f": True}),
    "date.bson": ({"e": {"$dateToString": {"date": {"$dateFromParts": {"year": "$y", "month": 14, "day": 1}},
                                           "format": "%Y-%m-%d %j %V", "timezone": "+04:30"}}}, {"y": 2020}),
    "regex.bson": ({"e": {"$regexFindAll": {"input": "$s", "regex": "(a)(b)?", "options": "i"}}}, {"s": "abAxa"}),
    "let.bson": ({"e": {"$let": {"vars": {"v": "$a.b"}, "in": {"$objectToArray": {"$mergeObjects": [
        {"k": "$$v"}, {"$arrayToObject": [[["z", 1]]]}]}}}}}, {"a": [{"b": 1}, {"b": 2}]}),
    "convert.bson": ({"e": [{"$convert": {"input": "$s", "to": "int", "onError": -1}}, {"$toString": "$d"},
                            {"$type": "$nope"}, {"$sortArray": {"input": "$arr", "sortBy": -1}}]},
                     {"s": "12x", "d": 2.5, "arr": [3, "a", 1]}),
}

VALIDATORS = {
    "schema.bson": ({"$jsonSchema": {"bsonType": "object", "required": ["a"], "properties": {
        "a": {"bsonType": "int", "minimum": 0}, "s": {"bsonType": "string", "maxLength": 3, "pattern": "^x"},
        "arr": {"bsonType": "array", "items": {"bsonType": "string"}, "uniqueItems": True}},
        "additionalProperties": False}},
                    {"a": -1, "s": "yyyy", "arr": ["p", "p"], "z": 1}),
    "ops.bson": ({"$or": [{"a": {"$gt": 1}}, {"b": {"$exists": True}}], "c": {"$in": [1, 2]}}, {"a": 0, "c": 3}),
}

INDEX_KEYS = {
    "compound.bson": ({"key": {"a": 1, "b.c": -1}, "unique": True}, {"a": [1, 2], "b": {"c": {"$gt": 1}}}),
    "partial.bson": ({"key": {"t": 1}, "partialFilterExpression": {"t": {"$gte": 2}}, "sparse": False},
                     {"t": {"$in": [1, 2, None]}, "$or": [{"t": 3}, {"t": {"$lt": 0}}]}),
    "sparse.bson": ({"key": {"x.0": 1}, "sparse": True, "name": "n"}, {"x": [[1], {"0": 2}]}),
}


C_API_JSON = {
    "update_basis.json": '{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}, '
                         '"basisVersion": 0}], "writeContext": {"agentId": "a", "taskId": "t", "writeSeq": 1}, '
                         '"$db": "f"}',
    "find.json": '{"find": "c", "filter": {"n": {"$gte": 1}}, "batchSize": 1, "$db": "f"}',
}
C_API_BSON = {
    "insert.bson": {"insert": "c", "documents": [{"_id": 1, "n": 0, "s": "x"}], "$db": "f"},
    "txn.bson": {"insert": "c", "documents": [{"_id": 2}], "lsid": {"id": 1}, "txnNumber": 1,
                 "startTransaction": True, "autocommit": False, "$db": "f"},
    "aggregate.bson": {"aggregate": "c", "pipeline": [{"$group": {"_id": None, "t": {"$sum": "$n"}}}],
                       "cursor": {}, "$db": "f"},
}


def op_msg(body, flags=0, seq=None):
    payload = struct.pack("<I", flags) + b"\0" + doc(body)
    if seq:
        name, docs = seq
        sec = cstr(name) + b"".join(doc(d) for d in docs)
        payload += b"\1" + struct.pack("<i", len(sec) + 4) + sec
    return struct.pack("<iiii", 16 + len(payload), 1, 0, 2013) + payload


def op_query(ns, q):
    payload = struct.pack("<i", 0) + cstr(ns) + struct.pack("<ii", 0, -1) + doc(q)
    return struct.pack("<iiii", 16 + len(payload), 1, 0, 2004) + payload


# fuzz_wire_message: whole messages (the target rewrites the length).
WIRE = {
    "ping.bin": op_msg({"ping": 1, "$db": "admin"}),
    "insert_seq.bin": op_msg({"insert": "c", "$db": "test"}, 0, ("documents", [{"_id": 1}, {"_id": 2, "a": [1]}])),
    "more_to_come.bin": op_msg({"insert": "c"}, 2, ("documents", [{"x": "y"}])),
    "handshake.bin": op_query("admin.$cmd", {"isMaster": 1, "client": {"driver": {"name": "fuzz"}}}),
    "wrapped.bin": op_query("admin.$cmd", {"$query": {"hello": 1}, "$readPreference": {"mode": "primary"}}),
}


# fuzz_decimal_order: two numbers, each a tag byte and its bytes
# (tests/fuzz/fuzz_decimal_order.cc).
def dec_digits(digits, exponent, negative=False):
    head = (0x80 if negative else 0) | (len(digits) - 1)
    return bytes([1, head]) + bytes(int(c) for c in digits) + struct.pack("<h", exponent)


def dec_raw(high, low=0):
    return b"\x00" + struct.pack("<QQ", low, high)


def dbl(x):
    return b"\x02" + struct.pack("<d", x)


def i64(x):
    return b"\x03" + struct.pack("<q", x)


def i32(x):
    return b"\x04" + struct.pack("<i", x)


def near_double(x, k):
    return b"\x05" + struct.pack("<d", x) + bytes([k + 4])


def near_int64(x, k):
    return b"\x06" + struct.pack("<q", x) + bytes([k + 4])


DECIMAL_ORDER = {
    "dec_below_double_01.bin": dec_digits("1000000000000000055511151231257827", -34) + dbl(0.1),
    "dec_01_double_01.bin": dec_digits("1", -1) + dbl(0.1),
    "five_plus.bin": dec_digits("5000000000000000000000000000000001", -33) + i32(5),
    "five_minus.bin": dec_digits("4999999999999999999999999999999999", -33) + i64(5),
    "neg_five_minus.bin": dec_digits("5000000000000000000000000000000001", -33, True) + i32(-5),
    "digit34.bin": dec_digits("9" * 34, 0) + dec_digits("9" * 33 + "8", 0),
    "beyond_double.bin": dec_digits("1", 400) + dbl(1.7976931348623157e308),
    "below_subnormal.bin": dec_digits("1", -400) + dbl(5e-324),
    "nan.bin": dec_raw(0x7C00000000000000) + dbl(float("nan")),
    "inf.bin": dec_raw(0x7800000000000000) + dbl(float("inf")),
    "noncanonical.bin": dec_raw(0x6000000000000000 | (6176 << 47), 5) + i32(0),
    "near_double.bin": near_double(0.1, 1) + dbl(0.1),
    "near_int64_max.bin": near_int64(2**63 - 1, 1) + i64(2**63 - 1),
    "cohorts.bin": dec_digits("50", -1) + dec_digits("5000", -3),
    "tiny.bin": dec_digits("1", -6176) + dec_digits("1", -6176, True),
}


def main():
    for n, d in DECIMAL_ORDER.items():
        write("fuzz_decimal_order", n, d)
    for n, j in COMMANDS.items():
        write("fuzz_command_json", n, j)
    for n, d in BSON_DOCS.items():
        write("fuzz_bson_insert", n, doc(d))
    for n, (a, b) in UPDATES.items():
        write("fuzz_update_apply", n, pair(a, b))
    for n, (a, b) in MATCHERS.items():
        write("fuzz_matcher", n, pair(a, b))
    for n, (a, b) in EXPRESSIONS.items():
        write("fuzz_expression", n, pair(a, b))
    for n, (a, b) in VALIDATORS.items():
        write("fuzz_validator", n, pair(a, b))
    for n, (a, b) in INDEX_KEYS.items():
        write("fuzz_index_keys", n, pair(a, b))
    for n, m in WIRE.items():
        write("fuzz_wire_message", n, m)
    # fuzz_c_api: a first byte 0x00 (BSON) or 0x01 (Extended JSON).
    for n, j in C_API_JSON.items():
        write("fuzz_c_api", "json_" + n, b"\x01" + j.encode())
    for n, d in C_API_BSON.items():
        write("fuzz_c_api", n, b"\x00" + doc(d))


if __name__ == "__main__":
    main()
