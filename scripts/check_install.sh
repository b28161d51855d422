#!/usr/bin/env bash
# Installs a built tree into a temporary prefix and uses it as a user would:
#   - the consumer project (api/examples/consumer) configured with
#     find_package(gatedb 0.2), linked shared and static, run;
#   - the same C++ and C programs built with nothing but pkg-config, run;
#   - the installed Python package imported by Debian's python3 from the
#     prefix, finding the installed library on its own;
#   - the installed CLI run;
#   - the shared library's exported symbols (scripts/check_exports.sh).
#
#   bash scripts/check_install.sh BUILD_DIR
set -euo pipefail

BUILD_DIR=$(cd "${1:?usage: check_install.sh BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/gatedb-install.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PREFIX=$WORK/prefix

cmake --install "$BUILD_DIR" --prefix "$PREFIX" >"$WORK/install.log"
LIBDIR=$(dirname "$(find "$PREFIX" -name 'libgatedb.so' | head -1)")
[ -n "$LIBDIR" ] || { echo "check_install: no libgatedb.so under $PREFIX" >&2; exit 1; }
for f in "$LIBDIR/libgatedb.a" "$LIBDIR/cmake/gatedb/gatedbConfig.cmake" \
         "$LIBDIR/cmake/gatedb/gatedbConfigVersion.cmake" "$LIBDIR/pkgconfig/gatedb.pc" \
         "$PREFIX/include/gatedb/db.h" "$PREFIX/include/gatedb/gatedb_c.h" \
         "$PREFIX/include/gatedb/error_codes.def" "$PREFIX/bin/gatedb"; do
  [ -e "$f" ] || { echo "check_install: $f was not installed" >&2; exit 1; }
done
soname=$(objdump -p "$LIBDIR/libgatedb.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libgatedb.so.0.2" ] || { echo "check_install: SONAME is '$soname'" >&2; exit 1; }
echo "installed into $PREFIX (SONAME $soname)"

# 1. CMake: find_package(gatedb 0.2 REQUIRED).  The installed tree must be
# all it needs: a compiler cache or the source tree's include path would
# hide a missing header, so neither is used.
cmake -S "$SRC/api/examples/consumer" -B "$WORK/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_BUILD_TYPE=Release >"$WORK/consumer-config.log"
cmake --build "$WORK/consumer" >"$WORK/consumer-build.log"
"$WORK/consumer/consumer" "$WORK/db-cmake-shared"
"$WORK/consumer/consumer_static" "$WORK/db-cmake-static"
"$WORK/consumer/consumer_c" "$WORK/db-cmake-c" >/dev/null
# (ldd's output is read whole first: `ldd | grep -q` under pipefail fails
# whenever grep's early exit makes ldd die of SIGPIPE, as a longer list of
# libraries made likelier.)
libs=$(ldd "$WORK/consumer/consumer")
grep -q "libgatedb.so.0.2 => $LIBDIR/" <<<"$libs" ||
  { echo "check_install: consumer does not load the installed libgatedb" >&2; echo "$libs" >&2; exit 1; }
static_libs=$(ldd "$WORK/consumer/consumer_static")
if grep -q libgatedb <<<"$static_libs"; then
  echo "check_install: consumer_static loads libgatedb.so" >&2; exit 1
fi
# A version that is not 0.2 is refused.
mkdir -p "$WORK/v03"
printf 'cmake_minimum_required(VERSION 3.20)\nproject(v LANGUAGES CXX)\nfind_package(gatedb 0.3 REQUIRED)\n' >"$WORK/v03/CMakeLists.txt"
if cmake -S "$WORK/v03" -B "$WORK/v03/build" -DCMAKE_PREFIX_PATH="$PREFIX" >/dev/null 2>&1; then
  echo "check_install: find_package(gatedb 0.3) accepted version $(cat "$BUILD_DIR/CMakeCache.txt" | grep -m1 CMAKE_PROJECT_VERSION)" >&2; exit 1
fi
echo "cmake consumer: shared, static and C ran"

# 2. pkg-config only.
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
[ "$(pkg-config --modversion gatedb)" = "$(grep -m1 '^CMAKE_PROJECT_VERSION:' "$BUILD_DIR/CMakeCache.txt" | cut -d= -f2)" ]
# shellcheck disable=SC2046
g++ -std=c++17 -o "$WORK/pc-consumer" "$SRC/api/examples/consumer/consumer.cc" $(pkg-config --cflags --libs gatedb) \
  -Wl,-rpath,"$LIBDIR" -pthread
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Werror -o "$WORK/pc-consumer-c" "$SRC/api/examples/consumer/consumer_c.c" \
  $(pkg-config --cflags --libs gatedb) -Wl,-rpath,"$LIBDIR"
# shellcheck disable=SC2046
g++ -std=c++17 -o "$WORK/pc-consumer-static" "$SRC/api/examples/consumer/consumer.cc" \
  $(pkg-config --cflags gatedb) "$LIBDIR/libgatedb.a" $(pkg-config --static --libs-only-l --libs-only-L gatedb | sed 's/-lgatedb//') -pthread
"$WORK/pc-consumer" "$WORK/db-pc-shared" >/dev/null
"$WORK/pc-consumer-c" "$WORK/db-pc-c" >/dev/null
"$WORK/pc-consumer-static" "$WORK/db-pc-static" >/dev/null
echo "pkg-config consumer: shared, static and C ran"

# 3. Python, from the prefix only (no GATEDB_LIBRARY, no source tree).
PYDIR=$(dirname "$(find "$PREFIX" -path '*dist-packages/gatedb/__init__.py' | head -1)")
[ -f "$PYDIR/_libpath.py" ] || { echo "check_install: the Python package has no _libpath.py" >&2; exit 1; }
(cd "$WORK" && env -u GATEDB_LIBRARY PYTHONPATH="$(dirname "$PYDIR")" /usr/bin/python3 - "$WORK/db-py" <<'PY'
import sys, gatedb
with gatedb.Database(sys.argv[1]) as db:
    coll = db["app"]["tasks"]
    coll.insert_one({"_id": 1, "n": 1})
    coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, basis_version=0)
    doc = coll.find_one({"_id": 1})
    assert doc["n"] == 2 and doc["version"] == 1, doc
    assert "dist-packages" in gatedb.__file__, gatedb.__file__
print("python: installed package ran")
PY
)

# 4. The CLI.
cli_reply=$(echo '{"ping": 1}' | "$PREFIX/bin/gatedb" run --db "$WORK/db-cli")
grep -q '"ok" : 1' <<<"$cli_reply"
echo "cli: ran"

# 5. Exports.
bash "$SRC/scripts/check_exports.sh" "$LIBDIR/libgatedb.so" "$SRC/api/include/gatedb"
