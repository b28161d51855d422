#!/usr/bin/env bash
# Checks what libgatedb.so exports against the public headers:
#   - every exported symbol is a gatedb_* function of the C ABI, or a member
#     of a type, or a function, that a public header (api/include/gatedb)
#     declares in namespace gatedb; nothing of the engine, RocksDB,
#     libbson or the C++ library leaks out;
#   - every gatedb_* function gatedb_c.h declares is exported;
#   - every such public member defined in the library (libgatedb.a, the
#     same objects) is exported: a public type that gatedb.map forgets fails;
#   - the exports carry the version node GATEDB_0.2.
#
#   bash scripts/check_exports.sh path/to/libgatedb.so api/include/gatedb
set -euo pipefail

SO=${1:?usage: check_exports.sh LIBGATEDB_SO HEADER_DIR}
HDR=${2:?usage: check_exports.sh LIBGATEDB_SO HEADER_DIR}
ARCHIVE=$(dirname "$SO")/libgatedb.a
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The public names: types declared at namespace scope, and free functions.
grep -hoP '^(class|struct) (\[\[nodiscard\]\] )?\K\w+(?= *(\{|:|final|$))' "$HDR"/*.h | sort -u >"$WORK/types"
grep -hoP '^(?!static|inline|typedef|return|\s)[\w:<>&* ]+? \**\K[A-Z]\w*(?=\([^;]*\);)' "$HDR"/*.h |
  grep -v '^gatedb_' | sort -u >"$WORK/functions"
grep -hoP '^[\w* ]+?\b\Kgatedb_\w+(?=\()' "$HDR/gatedb_c.h" | sort -u >"$WORK/c_functions"
public_re="^gatedb::(($(paste -sd'|' "$WORK/types"))(<.*>)?::|($(paste -sd'|' "$WORK/functions"))\()"

nm -D --defined-only "$SO" | awk '{print $NF}' | sort -u >"$WORK/mangled"
c++filt <"$WORK/mangled" >"$WORK/exports"
fail=0
while IFS= read -r sym; do
  case "$sym" in
    gatedb_*@@GATEDB_0.2 | GATEDB_0.2) continue ;;
  esac
  name=${sym%@@GATEDB_0.2}
  if [ "$name" = "$sym" ]; then
    echo "check_exports: '$sym' is not in the version node GATEDB_0.2" >&2; fail=1; continue
  fi
  if ! grep -qP "$public_re" <<<"$name"; then
    echo "check_exports: '$name' is exported but is not public API" >&2; fail=1
  fi
done <"$WORK/exports"

while IFS= read -r f; do
  grep -qx "$f@@GATEDB_0.2" "$WORK/exports" || { echo "check_exports: $f (gatedb_c.h) is not exported" >&2; fail=1; }
done <"$WORK/c_functions"

if [ -f "$ARCHIVE" ]; then
  nm --defined-only -g "$ARCHIVE" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TW]$/ {print $3}' | sort -u | c++filt |
    grep -P "$public_re" | grep -v '^gatedb::StatusOr<' | sort -u >"$WORK/public_defined"
  sed 's/@@GATEDB_0.2$//' "$WORK/exports" | sort -u >"$WORK/exported_names"
  missing=$(comm -23 "$WORK/public_defined" "$WORK/exported_names")
  if [ -n "$missing" ]; then
    echo "check_exports: public members defined in the library but not exported (gatedb.map):" >&2
    echo "$missing" | head -20 >&2
    fail=1
  fi
fi

[ "$fail" -eq 0 ] || exit 1
echo "exports: $(grep -c . "$WORK/exports") symbols, all public API ($(wc -l <"$WORK/c_functions") C functions)"
