"""DatabaseHandle: one database (a name) of an opened data directory, in
pymongo's Database role: ``db["app"]`` or ``db.get_database("app")``."""

from .collection import Collection
from .cursor import Cursor
from .errors import OperationFailure

_NAMESPACE_NOT_FOUND = 26


class DatabaseHandle:
    def __init__(self, client, name):
        if not isinstance(name, str) or not name or "\x00" in name or "." in name:
            raise ValueError("a database name is a non-empty str without '.' or NUL, not %r" % (name,))
        self.client = client
        self.name = name

    def __repr__(self):
        return "DatabaseHandle(%r, %r)" % (self.client, self.name)

    def __eq__(self, other):
        return isinstance(other, DatabaseHandle) and (self.client, self.name) == (other.client, other.name)

    def __hash__(self):
        return hash(self.name)

    def __getitem__(self, name):
        return Collection(self, name)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return Collection(self, name)

    def get_collection(self, name):
        return Collection(self, name)

    def _command(self, cmd, session=None):
        """Runs a command document of ours (it is changed: $db and session fields)."""
        cmd["$db"] = self.name
        return self.client._run(cmd, session)

    def command(self, cmd, *, session=None):
        """Runs a command on this database; returns the reply, raises
        OperationFailure on ok: 0."""
        return self._command(dict(cmd), session)

    def list_collections(self, filter=None, *, session=None):
        cmd = {"listCollections": 1}
        if filter is not None:
            cmd["filter"] = filter
        return Cursor(self, cmd, 0, session)

    def list_collection_names(self, filter=None, *, session=None):
        cmd = {"listCollections": 1, "nameOnly": True}
        if filter is not None:
            cmd["filter"] = filter
        return [c["name"] for c in Cursor(self, cmd, 0, session)]

    def create_collection(self, name, *, session=None, **options):
        """create, its options passed through as gatedb names them:
        conflictPolicy, versionField, validator, maxBasisAgeMs, ..."""
        cmd = {"create": name}
        cmd.update(options)
        self._command(cmd, session)
        return Collection(self, name)

    def drop_collection(self, name, *, session=None):
        """drop; a collection that does not exist is not an error, as in pymongo."""
        try:
            self._command({"drop": name.name if isinstance(name, Collection) else name}, session)
        except OperationFailure as e:
            if e.code != _NAMESPACE_NOT_FOUND:
                raise

    def start_session(self, write_context=None):
        return self.client.start_session(write_context)

    def transaction(self, write_context=None):
        """A session with a transaction started; see Database.transaction."""
        return self.client.transaction(write_context)

    def with_transaction(self, fn, write_context=None, max_attempts=10):
        return self.client.with_transaction(fn, write_context, max_attempts)
