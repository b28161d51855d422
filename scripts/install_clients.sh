#!/usr/bin/env bash
# Installs what the real-client tests in tests/clients/ need, when it is missing:
#   - Debian's python3-pymongo (PyMongo 3.11, for /usr/bin/python3), with apt-get;
#   - the Node.js driver and mongosh pinned in tests/clients/node/package-lock.json,
#     with `npm ci`, when node_modules is missing or older than the lockfile.
# Prints nothing when there is nothing to do; exits non-zero on any failure.
# Installing the Debian package needs root (or sudo). Node.js >= 20.19 and npm
# must already be on the machine (the driver needs that Node.js).
set -euo pipefail

cd "$(dirname "$0")/.."
NODE_DIR=tests/clients/node

die() {
  echo "install_clients.sh: $*" >&2
  exit 1
}

# --- python3-pymongo ------------------------------------------------------
if ! dpkg-query -W -f='${Status}' python3-pymongo 2>/dev/null | grep -q "install ok installed"; then
  echo "installing python3-pymongo"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "python3-pymongo is missing and this is not root (and there is no sudo)"
    sudo="sudo"
  fi
  $sudo apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-pymongo \
    || die "apt-get install python3-pymongo failed"
fi
/usr/bin/python3 -c 'import pymongo, bson' 2>/dev/null \
  || die "python3-pymongo is installed but /usr/bin/python3 cannot import pymongo"

# --- Node.js packages -----------------------------------------------------
command -v node >/dev/null || die "node is not installed (Node.js >= 20.19 is needed)"
command -v npm >/dev/null || die "npm is not installed"
node -e '
  const [maj, min] = process.versions.node.split(".").map(Number);
  process.exit(maj > 20 || (maj === 20 && min >= 19) ? 0 : 1);
' || die "Node.js $(node --version) is too old: the MongoDB driver 7 needs >= 20.19"

stamp="$NODE_DIR/node_modules/.package-lock.json"  # npm ci writes it last
if [ ! -f "$stamp" ] || [ "$NODE_DIR/package-lock.json" -nt "$stamp" ] || [ "$NODE_DIR/package.json" -nt "$stamp" ]; then
  echo "installing the Node.js client packages (npm ci in $NODE_DIR)"
  log=$(mktemp)
  if ! (cd "$NODE_DIR" && npm ci --no-audit --no-fund) >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    die "npm ci failed in $NODE_DIR"
  fi
  rm -f "$log"
  [ -x "$NODE_DIR/node_modules/.bin/mongosh" ] || die "npm ci left no node_modules/.bin/mongosh"
  touch "$stamp"
fi
