"""libgatedb through ctypes: the C ABI of gatedb/gatedb_c.h, nothing more.

The library is found at, in order: $GATEDB_LIBRARY (a path); the path the
install step wrote into ``_libpath.py`` (``LIBRARY = "/abs/libgatedb.so.0.2"``,
absent in the source tree); ``ctypes.util.find_library("gatedb")``.
ctypes.CDLL releases the GIL during each call, so threads run commands in
parallel.
"""

import ctypes
import ctypes.util
import os
import threading
import time

from .errors import InvalidOperation, OperationFailure

_c_void_p = ctypes.c_void_p
_c_size_t = ctypes.c_size_t
_byref = ctypes.byref
_string_at = ctypes.string_at

# Database(...) keyword -> the C setter's argument type.
OPTIONS = {
    "create_if_missing": ctypes.c_int,
    "error_if_exists": ctypes.c_int,
    "sync": ctypes.c_int,
    "lock_timeout_ms": ctypes.c_int64,
    "block_cache_bytes": ctypes.c_uint64,
    "journal_retention_ms": ctypes.c_int64,
    "journal_max_events": ctypes.c_uint64,
    "idempotency_retention_sec": ctypes.c_int64,
    "ttl_interval_ms": ctypes.c_int64,
    "transaction_lifetime_ms": ctypes.c_int64,
    "cursor_timeout_ms": ctypes.c_int64,
    "sort_memory_bytes": ctypes.c_uint64,
    "unauthenticated_root": ctypes.c_int,
}

JSON_RELAXED = 0
JSON_CANONICAL = 1

_lib = None
_lib_lock = threading.Lock()


def library_path():
    """Where libgatedb is looked for (see the module's docstring)."""
    path = os.environ.get("GATEDB_LIBRARY")
    if path:
        return path
    try:
        from ._libpath import LIBRARY  # written by the install step
        return LIBRARY
    except ImportError:
        pass
    found = ctypes.util.find_library("gatedb")
    if found:
        return found
    raise OSError("libgatedb not found: set GATEDB_LIBRARY to its path, or install gatedb "
                  "(the install step writes the path into gatedb/_libpath.py)")


def lib():
    """The loaded library, with every function's signature declared."""
    global _lib
    with _lib_lock:
        if _lib is None:
            _lib = _declare(ctypes.CDLL(library_path()))
        return _lib


def _declare(L):
    vp, sz, i32, p_vp, p_sz = _c_void_p, _c_size_t, ctypes.c_int32, ctypes.POINTER(_c_void_p), ctypes.POINTER(_c_size_t)
    sigs = {
        "gatedb_version": (ctypes.c_char_p, []),
        "gatedb_options_create": (vp, []),
        "gatedb_options_destroy": (None, [vp]),
        "gatedb_open": (i32, [ctypes.c_char_p, vp, p_vp, p_vp]),
        "gatedb_close": (None, [vp]),
        "gatedb_command": (i32, [vp, ctypes.c_char_p, sz, p_vp, p_sz, p_vp]),
        "gatedb_command_json": (i32, [vp, ctypes.c_char_p, ctypes.c_int, p_vp, p_vp]),
        "gatedb_free": (None, [vp]),
        "gatedb_options_set_identity": (None, [vp, ctypes.c_char_p, ctypes.c_char_p]),
        "gatedb_open_as": (i32, [vp, ctypes.c_char_p, ctypes.c_char_p, p_vp, p_vp]),
    }
    for name, ctype in OPTIONS.items():
        sigs["gatedb_options_set_" + name] = (None, [vp, ctype])
    for name, (restype, argtypes) in sigs.items():
        f = getattr(L, name)
        f.restype = restype
        f.argtypes = argtypes
    return L


def version():
    return lib().gatedb_version().decode()


def _take_string(L, p):
    """The C string at p (a c_void_p) as str, freed."""
    if not p.value:
        return None
    try:
        return _string_at(p.value).decode("utf-8", "replace")
    finally:
        L.gatedb_free(p)


class Handle:
    """An open gatedb_t*, usable from any thread.

    gatedb_close must not race with other calls on the handle (gatedb_c.h),
    so each call registers itself in ``_active`` (list append and pop are
    atomic under the GIL) before it reads the pointer, and close() clears
    the pointer first, then waits until no call is active.  A call after
    close raises InvalidOperation instead of touching freed memory.
    """

    def __init__(self, path, options, identity=None):
        L = self._lib = lib()
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise TypeError("unknown Database option(s): %s (known: %s)"
                            % (", ".join(sorted(unknown)), ", ".join(OPTIONS)))
        o = L.gatedb_options_create()
        if not o:
            raise MemoryError("gatedb_options_create")
        try:
            for name, value in options.items():
                getattr(L, "gatedb_options_set_" + name)(o, int(value))
            if identity is not None:
                L.gatedb_options_set_identity(o, identity[0].encode(), identity[1].encode())
            ptr, err = _c_void_p(), _c_void_p()
            rc = L.gatedb_open(os.fsencode(path), o, _byref(ptr), _byref(err))
            message = _take_string(L, err)
        finally:
            L.gatedb_options_destroy(o)
        self._adopt(rc, ptr, message, "gatedb_open")

    @classmethod
    def as_user(cls, other, user, user_db):
        """A handle to `other`'s store acting as (user, user_db): gatedb_open_as."""
        self = cls.__new__(cls)
        L = self._lib = other._lib
        ptr, err = _c_void_p(), _c_void_p()
        active = other._active
        active.append(None)
        try:
            if other._ptr is None:
                raise InvalidOperation("the database is closed")
            rc = L.gatedb_open_as(other._ptr, user.encode(), user_db.encode(), _byref(ptr), _byref(err))
        finally:
            active.pop()
        self._adopt(rc, ptr, _take_string(L, err), "gatedb_open_as")
        return self

    def _adopt(self, rc, ptr, message, what):
        L = self._lib
        if rc != 0:
            raise OperationFailure(message or what + " failed", rc, {"ok": 0.0, "code": rc, "errmsg": message})
        self._ptr = ptr.value
        self._active = []
        self._close_lock = threading.Lock()
        self._command = L.gatedb_command
        self._free = L.gatedb_free
        self._tls = threading.local()

    @property
    def closed(self):
        return self._ptr is None

    def _out(self):
        """This thread's out-parameters (reply pointer, length), made once."""
        t = self._tls
        reply, n = _c_void_p(), _c_size_t()
        t.out = out = (reply, n, _byref(reply), _byref(n))
        return out

    def command(self, data):
        """Runs one command (BSON bytes); returns (code, reply bytes or None)."""
        try:
            reply, n, p_reply, p_n = self._tls.out
        except AttributeError:
            reply, n, p_reply, p_n = self._out()
        active = self._active
        active.append(None)
        try:
            ptr = self._ptr
            if ptr is None:
                raise InvalidOperation("the database is closed")
            reply.value = None
            rc = self._command(ptr, data, len(data), p_reply, p_n, None)
        finally:
            active.pop()
        addr = reply.value
        if not addr:
            return rc, None
        out = _string_at(addr, n.value)
        self._free(addr)
        return rc, out

    def command_json(self, text, mode=JSON_RELAXED):
        """Runs one command given as Extended JSON; returns (code, reply JSON)."""
        out = _c_void_p()
        active = self._active
        active.append(None)
        try:
            ptr = self._ptr
            if ptr is None:
                raise InvalidOperation("the database is closed")
            rc = self._lib.gatedb_command_json(ptr, text.encode(), mode, _byref(out), None)
        finally:
            active.pop()
        return rc, _take_string(self._lib, out)

    def close(self):
        """Closes the handle once no call is in flight; a second close is a no-op."""
        with self._close_lock:
            ptr, self._ptr = self._ptr, None
            if ptr is None:
                return
            while self._active:
                time.sleep(0.0005)
            self._lib.gatedb_close(ptr)
