"""Cursors over find, aggregate and the listing commands: a batch at a time
through getMore, killCursors when dropped early (PROTOCOL.md, "Cursors")."""

from .errors import InvalidOperation, PyMongoError


class Cursor:
    """The documents of a cursor-returning command, fetched lazily.

    Iterating runs the command, then getMore while the cursor id is not 0.
    close() (also leaving a ``with`` block, or garbage collection) kills a
    cursor the library still holds.  sort/skip/limit/batch_size may be
    chained before the first document is read, as in pymongo.
    """

    def __init__(self, database, cmd, batch_size=0, session=None):
        self._database = database
        self._cmd = cmd
        self._batch_size = batch_size
        self._session = session
        self._buffer = ()
        self._pos = 0
        self._id = 0
        self._collection = None
        self._started = False
        self._closed = False
        self.batches = 0  # replies received: the first batch, then one per getMore

    # -- pymongo's chainable modifiers (find only)
    def _modify(self, field, value):
        if self._started:
            raise InvalidOperation("cannot change a cursor after it has started")
        self._cmd[field] = value
        return self

    def sort(self, key_or_list, direction=1):
        from .collection import sort_document
        return self._modify("sort", sort_document(key_or_list, direction))

    def skip(self, n):
        return self._modify("skip", n)

    def limit(self, n):
        return self._modify("limit", n)

    def batch_size(self, n):
        self._batch_size = n
        return self._modify("batchSize", n)

    # -- iteration
    @property
    def cursor_id(self):
        """The library's cursor id (0 once exhausted or before the first batch)."""
        return self._id

    @property
    def alive(self):
        return not self._closed and (not self._started or self._id != 0 or self._pos < len(self._buffer))

    def __iter__(self):
        return self

    def __next__(self):
        while self._pos >= len(self._buffer):
            if self._closed or (self._started and not self._id):
                raise StopIteration
            self._fetch()
        doc = self._buffer[self._pos]
        self._pos += 1
        return doc

    def next(self):
        return self.__next__()

    def _fetch(self):
        if not self._started:
            self._started = True
            cursor = self._database._command(self._cmd, self._session)["cursor"]
            self._buffer = cursor["firstBatch"]
            # getMore names the cursor's collection: the part of ns after the
            # database ("$cmd.listCollections" for a listing), else the command's.
            self._collection = cursor.get("ns", "").partition(".")[2] or next(iter(self._cmd.values()))
        else:
            cmd = {"getMore": self._database.client.codec.types.Int64(self._id), "collection": self._collection}
            if self._batch_size:
                cmd["batchSize"] = self._batch_size
            cursor = self._database._command(cmd, self._session)["cursor"]
            self._buffer = cursor["nextBatch"]
        self._pos = 0
        self._id = cursor.get("id", 0)
        self.batches += 1

    def to_list(self):
        return list(self)

    # -- lifetime
    def close(self):
        """Kills the library's cursor if it is still open; no more documents."""
        if self._closed:
            return
        self._closed = True
        cid, self._id = self._id, 0
        self._buffer, self._pos = (), 0
        if cid:
            try:
                self._database._command({"killCursors": self._collection,
                                         "cursors": [self._database.client.codec.types.Int64(cid)]}, self._session)
            except PyMongoError:
                pass  # closed database or expired cursor: nothing left to kill

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
