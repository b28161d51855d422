"""libgatedb through ctypes: the C ABI of gatedb/gatedb_c.h, nothing more.

The library is found at, in order: $GATEDB_LIBRARY; the path that
``cmake --install`` wrote into ``_libpath.py``; ``ctypes.util.find_library``.
ctypes releases the GIL during each call, so threads run commands in
parallel.
"""

import ctypes
import ctypes.util
import os

_lib = None


def _find():
    path = os.environ.get("GATEDB_LIBRARY")
    if path:
        return path
    try:
        from ._libpath import LIBRARY  # written by cmake --install
        return LIBRARY
    except ImportError:
        pass
    found = ctypes.util.find_library("gatedb")
    if found:
        return found
    raise OSError("libgatedb not found: set GATEDB_LIBRARY to its path, or install gatedb "
                  "(cmake --install writes the path into this package)")


def lib():
    """The loaded library, with every function's signature declared."""
    global _lib
    if _lib is not None:
        return _lib
    L = ctypes.CDLL(_find())
    vp, sz, i32, i64, u64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64
    L.gatedb_version.restype = ctypes.c_char_p
    L.gatedb_version.argtypes = []
    L.gatedb_options_create.restype = vp
    L.gatedb_options_create.argtypes = []
    L.gatedb_options_destroy.restype = None
    L.gatedb_options_destroy.argtypes = [vp]
    for name, t in OPTIONS.items():
        f = getattr(L, "gatedb_options_set_" + name)
        f.restype = None
        f.argtypes = [vp, {"bool": ctypes.c_int, "i64": i64, "u64": u64}[t]]
    L.gatedb_open.restype = i32
    L.gatedb_open.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]
    L.gatedb_close.restype = None
    L.gatedb_close.argtypes = [vp]
    L.gatedb_command.restype = i32
    L.gatedb_command.argtypes = [vp, ctypes.c_char_p, sz, ctypes.POINTER(vp), ctypes.POINTER(sz), ctypes.POINTER(vp)]
    L.gatedb_command_json.restype = i32
    L.gatedb_command_json.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp), ctypes.POINTER(vp)]
    L.gatedb_free.restype = None
    L.gatedb_free.argtypes = [vp]
    _lib = L
    return L


# Database(...) keyword -> the C setter's value type.
OPTIONS = {
    "create_if_missing": "bool",
    "error_if_exists": "bool",
    "sync": "bool",
    "lock_timeout_ms": "i64",
    "block_cache_bytes": "u64",
    "journal_retention_ms": "i64",
    "journal_max_events": "u64",
    "idempotency_retention_sec": "i64",
    "ttl_interval_ms": "i64",
    "transaction_lifetime_ms": "i64",
    "cursor_timeout_ms": "i64",
    "sort_memory_bytes": "u64",
}


def take_string(L, p):
    """The C string at p (a c_void_p) as str, freeing it."""
    if not p.value:
        return None
    try:
        return ctypes.string_at(p.value).decode("utf-8", "replace")
    finally:
        L.gatedb_free(p)


def open_db(path, options):
    """A handle (int) on the data directory, or raises OSError-like errors via (code, message)."""
    L = lib()
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise TypeError("unknown Database option(s): %s" % ", ".join(sorted(unknown)))
    o = L.gatedb_options_create()
    if not o:
        raise MemoryError("gatedb_options_create")
    try:
        for name, value in options.items():
            getattr(L, "gatedb_options_set_" + name)(o, int(value))
        handle = ctypes.c_void_p()
        err = ctypes.c_void_p()
        rc = L.gatedb_open(os.fsencode(path), o, ctypes.byref(handle), ctypes.byref(err))
        message = take_string(L, err)
    finally:
        L.gatedb_options_destroy(o)
    return rc, handle.value, message


def command(L, handle, data):
    """Runs one command (BSON bytes); returns (code, reply bytes)."""
    reply = ctypes.c_void_p()
    n = ctypes.c_size_t()
    rc = L.gatedb_command(handle, data, len(data), ctypes.byref(reply), ctypes.byref(n), None)
    if not reply.value:
        return rc, None
    out = ctypes.string_at(reply.value, n.value)
    L.gatedb_free(reply)
    return rc, out
