"""Agents with roles through the Python package: Database(user=...) and
as_user(), each call checked against the user's roles by the library."""

import threading

import pytest

import gatedb


@pytest.fixture
def store(tmp_path):
    db = gatedb.Database(tmp_path / "data")
    db.command({"createRole": "orderStatus", "$db": "admin", "roles": [], "privileges": [
        {"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "update"],
         "fields": ["status", "n"]}]})
    db.command({"createUser": "email", "pwd": "e", "roles": [{"role": "orderStatus", "db": "admin"}],
                "$db": "admin"})
    db.command({"createUser": "planner", "pwd": "p", "roles": [{"role": "read", "db": "shop"}], "$db": "admin"})
    db["shop"]["orders"].insert_one({"_id": 1, "status": "new", "price": 10, "n": 0})
    yield db
    db.close()


def test_an_agent_may_change_only_its_fields(store):
    email = store.as_user("email")
    try:
        orders = email["shop"]["orders"]
        assert orders.find_one({"_id": 1})["status"] == "new"
        assert orders.update_one({"_id": 1}, {"$set": {"status": "paid"}}, basis_version=0).modified_count == 1
        with pytest.raises(gatedb.WriteError) as e:
            orders.update_one({"_id": 1}, {"$set": {"price": 0}})
        assert e.value.code == 13 and e.value.code_name == "Unauthorized"
        assert e.value.err_info["path"] == "price" and e.value.err_info["agentId"] == "email"
        with pytest.raises(gatedb.OperationFailure) as e:
            orders.insert_one({"_id": 2})
        assert e.value.code == 13
        with pytest.raises(gatedb.OperationFailure) as e:
            email["shop"]["customers"].find_one({})
        assert e.value.code == 13
    finally:
        email.close()
    doc = store["shop"]["orders"].find_one({"_id": 1})
    assert (doc["status"], doc["price"]) == ("paid", 10)
    stats = store["shop"].command({"conflictStats": "orders"})
    assert stats["unauthorized"] == 2 and stats["agents"][0]["agentId"] == "email"


def test_opening_with_a_user_and_unknown_users(tmp_path):
    path = tmp_path / "data"
    with gatedb.Database(path) as owner:
        owner.command({"createUser": "planner", "pwd": "p", "roles": [{"role": "read", "db": "shop"}],
                       "$db": "admin"})
        owner["shop"]["orders"].insert_one({"_id": 1})
        with pytest.raises(gatedb.OperationFailure) as e:
            owner.as_user("nobody")
        assert e.value.code == 11
    with gatedb.Database(path, user="planner") as planner:
        assert planner["shop"]["orders"].count_documents({}) == 1
        with pytest.raises(gatedb.OperationFailure) as e:
            planner["shop"]["orders"].delete_many({})
        assert e.value.code == 13
    with pytest.raises(gatedb.OperationFailure) as e:
        gatedb.Database(path, user="ghost")
    assert e.value.code == 11
    with gatedb.Database(path, unauthenticated_root=False) as stranger:
        assert stranger.command({"ping": 1})["ok"] == 1.0
        with pytest.raises(gatedb.OperationFailure) as e:
            stranger["shop"]["orders"].find_one({})
        assert e.value.code == 13


def test_the_owner_handle_outlives_an_agent_handle_and_threads_lose_nothing(store):
    per = 50

    def work():
        agent = store.as_user("email")
        try:
            orders = agent["shop"]["orders"]
            for _ in range(per):
                orders.with_version_gate({"_id": 1}, lambda doc: {"$set": {"n": doc["n"] + 1}})
        finally:
            agent.close()

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store["shop"]["orders"].find_one({"_id": 1})["n"] == 3 * per
