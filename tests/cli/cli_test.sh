#!/usr/bin/env bash
# End-to-end checks of the gatedb tool: `run` (replies, malformed lines,
# -c, persistence across runs), `demo` (its invariant), and --help.
# Usage: cli_test.sh /path/to/gatedb
set -u
GATEDB=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
passes=0
check() {  # check NAME CONDITION-EXIT-CODE
  if [ "$2" -eq 0 ]; then passes=$((passes + 1)); else fails=$((fails + 1)); echo "FAIL: $1"; fi
}

out=$(printf '%s\n' \
  '{"insert": "c", "documents": [{"_id": 1, "a": 1}]}' \
  '{"insert": "c", "documents": [{"_id": 2' \
  '' \
  '# a comment' \
  '{"update": "c", "updates": [{"q": {"_id": 1, "version": 0}, "u": {"$inc": {"a": 1, "version": 1}}}]}' \
  '{"find": "c", "filter": {"_id": 1}}' | "$GATEDB" run --db "$dir/db")
rc=$?
check "run exits 0" $rc
lines=$(printf '%s\n' "$out" | wc -l)
[ "$lines" -eq 4 ]; check "one reply per command line (got $lines)" $?
printf '%s\n' "$out" | sed -n 1p | grep -q '"n" : 1'; check "insert reply" $?
printf '%s\n' "$out" | sed -n 2p | grep -q '"codeName" : "FailedToParse"'; check "malformed line gets FailedToParse" $?
printf '%s\n' "$out" | sed -n 2p | grep -q 'line 2'; check "the error names the line" $?
printf '%s\n' "$out" | sed -n 3p | grep -q '"nModified" : 1'; check "later lines still run" $?
printf '%s\n' "$out" | sed -n 4p | grep -q '"version" : 1'; check "version raised once" $?

# Bytes that are not UTF-8 where JSON expects a value or a key: the parser's
# message quotes them, and the reply still prints (not "{}"), with them
# replaced by '?'.
out=$(printf '{"a": tr\xffue}\n{"a": \xff}\n{"a": 1, \xff: 2}\n' | "$GATEDB" run --db "$dir/db")
for n in 1 2 3; do
  printf '%s\n' "$out" | sed -n ${n}p | grep -q '"codeName" : "FailedToParse"'; check "non-UTF-8 line $n gets FailedToParse" $?
done
printf '%s\n' "$out" | grep -q $'\xff'; [ $? -ne 0 ]; check "no raw non-UTF-8 byte in a reply" $?

# A transaction spans lines: sessions live for the whole input.
out=$(printf '%s\n' \
  '{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"t": 1}}}], "lsid": {"id": 7}, "txnNumber": 1, "startTransaction": true, "autocommit": false}' \
  '{"count": "c", "query": {"t": 1}}' \
  '{"commitTransaction": 1, "lsid": {"id": 7}, "txnNumber": 1, "autocommit": false}' \
  '{"count": "c", "query": {"t": 1}}' | "$GATEDB" run --db "$dir/db")
printf '%s\n' "$out" | sed -n 2p | grep -q '"n" : 0'; check "uncommitted writes are invisible outside" $?
printf '%s\n' "$out" | sed -n 3p | grep -q '"ok" : 1'; check "commitTransaction on a later line" $?
printf '%s\n' "$out" | sed -n 4p | grep -q '"n" : 1'; check "committed writes are visible" $?

out=$("$GATEDB" run --db "$dir/db" -c '{"count": "c"}')
check "run -c exits 0" $?
printf '%s\n' "$out" | grep -q '"n" : 1'; check "data persists across runs" $?

# The query operator $type reads from JSON (libbson alone takes it for legacy $binary).
out=$(printf '%s\n' \
  '{"insert": "d", "documents": [{"_id": 1, "ts": {"$date": "2024-01-02T03:04:05Z"}}, {"_id": 2, "ts": "x"}]}' \
  '{"count": "d", "query": {"ts": {"$type": "date"}}}' | "$GATEDB" run --db "$dir/db")
printf '%s\n' "$out" | sed -n 2p | grep -q '"n" : 1'; check "a \$type filter reads from JSON" $?

# An index build over a large collection reports its progress on stderr;
# the find then runs on the index (explain says IXSCAN).
docs=$(seq 0 11999 | sed 's/.*/{"_id": &, "k": &}/' | paste -sd, -)
printf '{"insert": "big", "documents": [%s]}\n' "$docs" | "$GATEDB" run --db "$dir/db" >/dev/null
check "insert a large collection" $?
err=$("$GATEDB" run --db "$dir/db" -c '{"createIndexes": "big", "indexes": [{"key": {"k": 1}}]}' 2>&1 >/dev/null)
printf '%s\n' "$err" | grep -q 'building index k_1 on test.big: 12000/12000 documents (100%)'; check "index build progress" $?
out=$("$GATEDB" run --db "$dir/db" -c '{"explain": {"find": "big", "filter": {"k": 7}}, "verbosity": "executionStats"}')
printf '%s\n' "$out" | grep -q '"stage" : "IXSCAN"'; check "explain shows the index scan" $?
printf '%s\n' "$out" | grep -q '"totalDocsExamined" : 1'; check "the index scan reads one document" $?

# `run` keeps cursors across lines: page through a find with getMore,
# reading each reply before sending the next line (the id is random).
coproc RUN { "$GATEDB" run --db "$dir/db"; }
echo '{"find": "big", "filter": {"k": {"$lt": 5}}, "sort": {"_id": 1}, "batchSize": 2, "projection": {"_id": 1}}' >&"${RUN[1]}"
read -r first <&"${RUN[0]}"
id=$(printf '%s' "$first" | sed -n 's/.*"id" : \([0-9][0-9]*\).*/\1/p')
[ -n "$id" ] && [ "$id" != 0 ]; check "find with batchSize leaves a cursor open" $?
echo "{\"getMore\": {\"\$numberLong\": \"$id\"}, \"collection\": \"big\", \"batchSize\": 2}" >&"${RUN[1]}"
read -r second <&"${RUN[0]}"
printf '%s\n' "$second" | grep -q '"nextBatch" : \[ { "_id" : 2 }, { "_id" : 3 } \]'; check "getMore on a later line continues the cursor" $?
echo "{\"killCursors\": \"big\", \"cursors\": [{\"\$numberLong\": \"$id\"}]}" >&"${RUN[1]}"
read -r third <&"${RUN[0]}"
printf '%s\n' "$third" | grep -q "\"cursorsKilled\" : \[ $id \]"; check "killCursors on a later line" $?
exec {RUN[1]}>&-
wait "$RUN_PID" 2>/dev/null

"$GATEDB" run --db "$dir/db" -c '{"bogus": 1}' >/dev/null
[ $? -ne 0 ]; check "run -c with a failing command exits non-zero" $?

out=$("$GATEDB" demo --db "$dir/demo" --agents 4 --docs 2 --seconds 1 --think-ms 1 --seed 7)
check "demo exits 0" $?
printf '%s\n' "$out" | grep -q 'invariant *HOLDS'; check "demo invariant holds" $?
printf '%s\n' "$out" | grep -q 'stale writes stopped'; check "demo reports stale writes" $?

"$GATEDB" --help | grep -q 'gatedb run'; check "--help" $?
"$GATEDB" run --help | grep -q -- '--db'; check "run --help" $?
"$GATEDB" demo --help | grep -q -- '--agents'; check "demo --help" $?
"$GATEDB" demo --agents x >/dev/null 2>&1
[ $? -ne 0 ]; check "bad option value is refused" $?

echo "cli: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
