#!/usr/bin/env bash
# The project's one entry point on a Debian 12 machine.
#
#   bash scripts/gatedb.sh demo    install what is missing, build, run `gatedb demo`
#   bash scripts/gatedb.sh test    install what is missing (and the test clients:
#                                  scripts/install_clients.sh), build, run every test (ctest)
#   bash scripts/gatedb.sh build   install what is missing, build
#   bash scripts/gatedb.sh install [PREFIX]
#                                  build, then cmake --install into PREFIX (default
#                                  /usr/local): headers, libgatedb, the CMake and
#                                  pkg-config files, the CLI, the Python package
#
# Installing needs root (apt-get); it is skipped when every package is there.
# BUILD_DIR (default: build) and BUILD_TYPE (default: RelWithDebInfo) may be set.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}

PACKAGES=(
  cmake ninja-build ccache g++ pkg-config libasio-dev libisal-dev
  librocksdb-dev libbson-dev libxxhash-dev libgsasl-dev libssl-dev openssl libpcre2-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev
  python3-pymongo python3-pytest libmongoc-dev libdfp-dev libgmp-dev libintelrdfpmath-dev
)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
  ninja -C "$BUILD_DIR"
}

case "${1:-}" in
  demo)
    install_missing
    build
    shift
    "$BUILD_DIR/api/gatedb" demo "$@"
    ;;
  test)
    install_missing
    bash scripts/install_clients.sh  # the real clients the wire-server tests use
    build
    ctest --test-dir "$BUILD_DIR" -j"$(nproc)" --output-on-failure
    ;;
  build)
    install_missing
    build
    ;;
  install)
    install_missing
    build
    cmake --install "$BUILD_DIR" --prefix "${2:-/usr/local}"
    ;;
  *)
    echo "usage: bash scripts/gatedb.sh demo|test|build|install [PREFIX]" >&2
    exit 2
    ;;
esac
