#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for N
# seconds (default 30) from its seed corpus.  Exits non-zero when a target
# finds a crash, a timeout or an invariant failure; the input is kept in
# $FUZZ_OUT/<target>/ (default /tmp/gatedb_fuzz).
#
#   bash scripts/fuzz.sh          # CI slice: 30 s per target
#   bash scripts/fuzz.sh 3600     # long run: an hour per target
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-30}
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
OUT=${FUZZ_OUT:-/tmp/gatedb_fuzz}
TARGETS=(fuzz_command_json fuzz_bson_insert fuzz_update_apply fuzz_matcher fuzz_expression fuzz_validator fuzz_index_keys fuzz_decimal_order fuzz_wire_message fuzz_c_api)

missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

F='-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer'
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DGATEDB_FUZZ=ON -DGATEDB_BUILD_BENCH=OFF \
  -DCMAKE_C_FLAGS="$F" -DCMAKE_CXX_FLAGS="$F" >/dev/null
ninja -C "$BUILD_DIR" "${TARGETS[@]}"

status=0
for t in "${TARGETS[@]}"; do
  work="$OUT/$t"
  mkdir -p "$work/corpus"
  echo "== $t: ${SECONDS_PER_TARGET} s"
  # New inputs go to the scratch corpus (the first directory), never into
  # the checked-in seeds.  The store's temporary databases go under $work.
  if ! TMPDIR="$work" ASAN_OPTIONS=detect_leaks=0 "$BUILD_DIR/tests/fuzz/$t" "$work/corpus" "tests/fuzz/corpus/$t" \
      -max_total_time="$SECONDS_PER_TARGET" -timeout=30 -rss_limit_mb=4096 \
      -artifact_prefix="$work/" -print_final_stats=1 2>"$work/log.txt"; then
    echo "$t FAILED: see $work/log.txt and the crash-* / timeout-* input in $work/"
    tail -40 "$work/log.txt"
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$work/log.txt" | tr '\n' ' '
    echo
  fi
  rm -rf "$work"/gatedb_fuzz_*
done
exit $status
