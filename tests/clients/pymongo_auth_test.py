#!/usr/bin/python3
"""gatedb serve --auth, driven by Debian's PyMongo (3.11): SCRAM-SHA-256.

    /usr/bin/python3 tests/clients/pymongo_auth_test.py --bin build/api/gatedb [-v]

The first user comes from loopback while none exists (MongoDB's localhost
exception); then agents with roles authenticate, are allowed what their
roles grant and refused the rest (a field they may not change, a
collection they may not read, an agentId naming someone else); wrong
passwords and unauthenticated clients get nothing.
"""

import faulthandler
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatedb_server  # noqa: E402

try:
    import pymongo
    from pymongo import MongoClient
    from pymongo.errors import OperationFailure, WriteError
except ImportError as e:  # pragma: no cover
    sys.stderr.write("pymongo_auth_test.py needs PyMongo (%s): run it with /usr/bin/python3\n" % e)
    sys.exit(2)


class AuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = gatedb_server.GatedbServer(("--auth",)).start()
        cls.addClassCleanup(cls.server.kill)
        cls.clients = []
        first = cls.client()
        first.admin.command("createUser", "root", pwd="root-pass", roles=["root"])
        root = cls.client("root", "root-pass")
        root.admin.command("createRole", "orderStatus", roles=[], privileges=[
            {"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "update"],
             "fields": ["status", "n"], "sources": ["email"]}])
        root.admin.command("createUser", "email", pwd="e-pass", roles=[{"role": "orderStatus", "db": "admin"}])
        root.admin.command("createUser", "email2", pwd="e2-pass", roles=[{"role": "orderStatus", "db": "admin"}])
        root.shop.orders.insert_one({"_id": 1, "status": "new", "price": 10, "n": 0})

    @classmethod
    def tearDownClass(cls):
        for c in cls.clients:
            c.close()
        cls.server.stop()

    @classmethod
    def client(cls, user=None, password=None, **kw):
        opts = dict(directConnection=True, serverSelectionTimeoutMS=10000, connectTimeoutMS=5000)
        if user is not None:
            opts.update(username=user, password=password, authSource="admin", authMechanism="SCRAM-SHA-256")
        opts.update(kw)
        c = MongoClient("127.0.0.1", cls.server.port, **opts)
        cls.clients.append(c)
        return c

    def test_the_localhost_exception_ends_with_the_first_user(self):
        with self.assertRaises(OperationFailure) as e:
            self.client().admin.command("createUser", "intruder", pwd="x", roles=["root"])
        self.assertEqual(e.exception.code, 13)

    def test_unauthenticated_clients_may_only_ping(self):
        c = self.client()
        self.assertEqual(c.admin.command("ping")["ok"], 1.0)
        for call in (lambda: c.shop.orders.find_one(), lambda: c.shop.orders.insert_one({"_id": 9}),
                     lambda: c.list_database_names(), lambda: c.admin.command("serverStatus")):
            with self.assertRaises(OperationFailure) as e:
                call()
            self.assertEqual(e.exception.code, 13)

    def test_wrong_password_fails(self):
        with self.assertRaises(OperationFailure) as e:
            self.client("email", "wrong").shop.orders.find_one()
        self.assertEqual(e.exception.code, 18)

    def test_an_agent_changes_only_its_fields(self):
        email = self.client("email", "e-pass")
        orders = email.shop.orders
        self.assertEqual(orders.update_one({"_id": 1}, {"$set": {"status": "paid"}}).modified_count, 1)
        with self.assertRaises(WriteError) as e:
            orders.update_one({"_id": 1}, {"$set": {"price": 0}})
        self.assertEqual(e.exception.code, 13)
        self.assertEqual(e.exception.details["errInfo"]["path"], "price")
        self.assertEqual(e.exception.details["errInfo"]["agentId"], "email")
        with self.assertRaises(OperationFailure) as e:
            email.shop.customers.find_one()
        self.assertEqual(e.exception.code, 13)
        with self.assertRaises(OperationFailure) as e:  # another agent's name
            email.shop.command({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "x"}}}],
                                "writeContext": {"agentId": "email2"}})
        self.assertEqual(e.exception.code, 13)
        ok = email.shop.command({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "s"}}}],
                                 "writeContext": {"source": "email"}})
        self.assertEqual(ok["nModified"], 1)
        with self.assertRaises(OperationFailure) as e:  # a source it does not speak for
            email.shop.command({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "h"}}}],
                                "writeContext": {"source": "human"}})
        self.assertEqual(e.exception.code, 13)
        root = self.client("root", "root-pass")
        doc = root.shop.orders.find_one({"_id": 1})
        self.assertEqual((doc["status"], doc["price"]), ("s", 10))
        self.assertEqual(root.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"],
                         [{"user": "root", "db": "admin"}])
        self.assertEqual(email.list_database_names(), ["shop"])  # only what it holds privileges on

    def test_two_agents_incrementing_at_once_lose_nothing(self):
        root = self.client("root", "root-pass")
        before = root.shop.orders.find_one({"_id": 1})["n"]
        per = 60

        def work(user, pwd):
            c = MongoClient("127.0.0.1", self.server.port, directConnection=True, username=user, password=pwd,
                            authSource="admin", serverSelectionTimeoutMS=10000)
            try:
                for _ in range(per):
                    c.shop.orders.update_one({"_id": 1}, {"$inc": {"n": 1}})
            finally:
                c.close()

        threads = [threading.Thread(target=work, args=a) for a in (("email", "e-pass"), ("email2", "e2-pass"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(root.shop.orders.find_one({"_id": 1})["n"], before + 2 * per)


def main():
    argv = [sys.argv[0]]
    args = iter(sys.argv[1:])
    for a in args:
        if a == "--bin":
            gatedb_server.set_bin(next(args))
        else:
            argv.append(a)
    faulthandler.dump_traceback_later(120, exit=True)
    sys.stderr.write("pymongo %s, gatedb %s\n" % (pymongo.version, gatedb_server.gatedb_bin()))
    unittest.main(argv=argv, verbosity=2)


if __name__ == "__main__":
    main()
