"""Collection, database handle and Database methods against the store,
with pymongo's result shapes."""

import pytest

import gatedb


def test_library_version():
    assert gatedb.library_version() == gatedb.__version__


def test_inserts(db):
    t = db.client.types
    coll = db["tasks"]
    doc = {"name": "a"}
    r = coll.insert_one(doc)
    assert type(r.inserted_id) is t.ObjectId and doc["_id"] == r.inserted_id  # added in place, as pymongo
    assert r.raw_result["n"] == 1 and r.acknowledged and not r.replayed
    many = coll.insert_many([{"_id": i, "n": i} for i in range(2, 7)] + [{"n": 7}])
    assert many.inserted_ids[:5] == [2, 3, 4, 5, 6] and type(many.inserted_ids[5]) is t.ObjectId
    assert many.raw_result["n"] == 6
    assert coll.count_documents({}) == 7
    assert coll.estimated_document_count() == 7
    with pytest.raises(TypeError):
        coll.insert_many([])


def test_find_one_and_find(db):
    coll = db["tasks"]
    coll.insert_many([{"_id": i, "g": i % 3, "v": i, "tag": "t%d" % i} for i in range(20)])
    assert coll.find_one({"_id": 3}) == {"_id": 3, "g": 0, "v": 3, "tag": "t3", "version": 0}
    assert coll.find_one(4)["v"] == 4  # a non-Mapping filter is an _id
    assert coll.find_one({"_id": 99}) is None
    assert coll.find_one({"g": 2}, sort=[("v", -1)])["v"] == 17
    assert coll.find_one({"_id": 5}, {"v": 1, "_id": 0}) == {"v": 5}
    assert coll.find_one({"_id": 5}, ["tag"]) == {"_id": 5, "tag": "t5"}
    docs = list(coll.find({"g": 1}, {"v": 1, "_id": 0}, sort=[("v", -1)], skip=1, limit=3))
    assert docs == [{"v": 16}, {"v": 13}, {"v": 10}]
    assert [d["v"] for d in coll.find({"g": 0}).sort("v", -1).limit(2)] == [18, 15]
    assert len(list(coll.find({}, limit=-5))) == 5
    assert coll.count_documents({"v": {"$gte": 10}}) == 10
    assert coll.count_documents({"v": {"$gte": 10}}, skip=2, limit=3) == 3
    assert coll.count_documents({"v": -1}) == 0
    assert sorted(coll.distinct("g")) == [0, 1, 2]
    assert coll.distinct("v", {"g": 2})[:2] == [2, 5]
    groups = list(coll.aggregate([{"$group": {"_id": "$g", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
    assert groups == [{"_id": 0, "n": 7}, {"_id": 1, "n": 7}, {"_id": 2, "n": 6}]


def test_updates_and_deletes(db):
    coll = db["tasks"]
    coll.insert_many([{"_id": i, "n": i} for i in range(1, 7)])
    u = coll.update_one({"_id": 2}, {"$set": {"x": 1}})
    assert (u.matched_count, u.modified_count, u.upserted_id) == (1, 1, None)
    same = coll.update_one({"_id": 2}, {"$set": {"x": 1}})
    assert (same.matched_count, same.modified_count) == (1, 0)  # matched, unchanged: no new version
    assert coll.find_one(2)["version"] == 1
    um = coll.update_many({"n": {"$gte": 5}}, {"$inc": {"n": 10}})
    assert (um.matched_count, um.modified_count) == (2, 2)
    up = coll.update_one({"_id": 50}, {"$set": {"n": 50}}, upsert=True)
    assert up.upserted_id == 50 and up.matched_count == 0 and up.modified_count == 0
    rep = coll.replace_one({"_id": 3}, {"n": 33})
    assert rep.modified_count == 1
    assert coll.find_one(3) == {"_id": 3, "n": 33, "version": 1}
    assert coll.replace_one({"_id": 77}, {"n": 77}, upsert=True).upserted_id == 77
    arr = coll.update_one({"_id": 4}, {"$push": {"m": {"$each": [1, 2]}}})
    assert arr.modified_count == 1 and coll.find_one(4)["m"] == [1, 2]
    assert coll.delete_one({"_id": 2}).deleted_count == 1
    assert coll.delete_one({"_id": 2}).deleted_count == 0
    assert coll.delete_many({"n": {"$gte": 30}}).deleted_count == 3  # 3 (n 33), 50, 77
    assert sorted(d["_id"] for d in coll.find()) == [1, 4, 5, 6]
    for bad in ({"n": 1}, {}):
        with pytest.raises(ValueError):
            coll.update_one({"_id": 1}, bad)
    with pytest.raises(ValueError):
        coll.replace_one({"_id": 1}, {"$set": {"n": 1}})


def test_find_one_and_modify(db):
    coll = db["tasks"]
    coll.insert_many([{"_id": i, "n": i} for i in range(1, 4)])
    before = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}})
    assert before == {"_id": 1, "n": 1, "version": 0}
    after = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=gatedb.ReturnDocument.AFTER)
    assert after == {"_id": 1, "n": 3, "version": 2}
    assert coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, projection={"n": 1, "_id": 0}) == {"n": 3}
    assert coll.find_one_and_update({"_id": 404}, {"$set": {"a": 1}}) is None
    up = coll.find_one_and_update({"_id": 9}, {"$set": {"a": 1}}, upsert=True,
                                  return_document=gatedb.ReturnDocument.AFTER)
    assert up == {"_id": 9, "a": 1, "version": 0}
    top = coll.find_one_and_update({"n": {"$lt": 10}}, {"$set": {"top": True}}, sort=[("n", -1)])
    assert top["_id"] == 1 and top["n"] == 4
    assert coll.find_one_and_update({"_id": 2}, {"$set": {"n": 20}}, basis_version=0)["n"] == 2
    assert coll.find_one_and_replace({"_id": 3}, {"n": 0})["n"] == 3
    assert coll.find_one(3) == {"_id": 3, "n": 0, "version": 1}
    assert coll.find_one_and_delete({"_id": 3})["n"] == 0 and coll.find_one(3) is None


def test_indexes(db):
    coll = db["tasks"]
    coll.insert_many([{"_id": i, "a": i, "b": -i} for i in range(5)])
    assert coll.create_index([("a", 1), ("b", -1)]) == "a_1_b_-1"
    assert coll.create_index("b", unique=True, name="b_unique") == "b_unique"
    assert sorted(i["name"] for i in coll.list_indexes()) == ["_id_", "a_1_b_-1", "b_unique"]
    with pytest.raises(gatedb.DuplicateKeyError) as e:
        coll.insert_one({"_id": 99, "b": -1})
    assert e.value.details["keyValue"] == {"b": -1}
    coll.drop_index([("a", 1), ("b", -1)])
    coll.drop_index("b_unique")
    assert [i["name"] for i in coll.list_indexes()] == ["_id_"]


def test_database_handle(db):
    assert db["x"] == db.get_collection("x") == db.x and db["x"].full_name == db.name + ".x"
    created = db.create_collection("custom", versionField="rev", conflictPolicy={"mode": "fieldMerge"})
    assert created.name == "custom"
    info = next(iter(db.list_collections({"name": "custom"})))
    assert info["options"]["versionField"] == "rev" and info["options"]["conflictPolicy"]["mode"] == "fieldMerge"
    db["y"].insert_one({"_id": 1})
    assert db.name in db.client.list_database_names()
    assert sorted(db.list_collection_names()) == ["custom", "y"]
    assert db.list_collection_names({"name": "y"}) == ["y"]
    db.drop_collection("custom")
    db.drop_collection("never-existed")  # NamespaceNotFound is not an error, as in pymongo
    db["y"].drop()
    assert db.list_collection_names() == []
    assert db.command({"ping": 1})["ok"] == 1
    with pytest.raises(ValueError):
        db.client["bad.name"]


def test_database_command_and_json(pclient):
    assert pclient.command({"ping": 1}) == {"ok": 1.0}
    h = pclient.get_database("cmds")
    h["c"].insert_one({"_id": 1})
    assert pclient.command({"count": "c", "$db": "cmds"})["n"] == 1  # runs as given, on its $db
    assert "cmds" in pclient.list_database_names()
    assert '"n" : 1' in pclient.command_json('{"count": "c", "$db": "cmds"}')
    assert '"$numberInt" : "1"' in pclient.command_json('{"count": "c", "$db": "cmds"}', canonical=True)
    assert pclient.cmds.name == "cmds" and pclient["cmds"] == h


def test_options_reach_the_library(tmp_path):
    with pytest.raises(TypeError):
        gatedb.Database(tmp_path / "d", no_such_option=1)
    with pytest.raises(gatedb.OperationFailure):
        gatedb.Database(tmp_path / "missing", create_if_missing=False)
    with gatedb.Database(tmp_path / "d", cursor_timeout_ms=4321, lock_timeout_ms=77, sync=False,
                         transaction_lifetime_ms=60000, sort_memory_bytes=1 << 20) as d:
        params = d.command({"getParameter": 1, "cursorTimeoutMillis": 1, "transactionLifetimeLimitSeconds": 1})
        assert params["cursorTimeoutMillis"] == 4321
        assert params["transactionLifetimeLimitSeconds"] == 60
        with pytest.raises(gatedb.OperationFailure):
            gatedb.Database(tmp_path / "d")  # RocksDB's lock: one handle per directory
    with pytest.raises(gatedb.OperationFailure):
        gatedb.Database(tmp_path / "d", error_if_exists=True)
