#!/usr/bin/env bash
# `npm run test:load-check [-- ROUNDS]`: the whole suite (CI=true npm test) ROUNDS times in a row
# (default 3) beside two CPU-bound processes, as on a busy machine, so that a test that waits on a
# guess of wall time fails here before it flakes in CI. Stops at the first failing round and
# names the tests that failed (from test-results.json). The hogs are killed on any exit.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
hogs=()
stop_hogs() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop_hogs EXIT INT TERM
# Each hog spins for at most an hour, should the trap never run.
for _ in 1 2; do
  node -e 'const end = Date.now() + 3_600_000; while (Date.now() < end);' &
  hogs+=("$!")
done
for round in $(seq 1 "$rounds"); do
  echo "test-under-load: round ${round} of ${rounds}, beside ${#hogs[@]} CPU-bound processes"
  rm -f test-results.json
  started=$(date +%s)
  if CI=true npm test; then
    echo "test-under-load: round ${round} passed in $(($(date +%s) - started)) s"
    continue
  fi
  echo "test-under-load: round ${round} failed after $(($(date +%s) - started)) s"
  if [ -f test-results.json ]; then
    node -e 'for (const file of require("./test-results.json").testResults)
      for (const test of file.assertionResults)
        if (test.status === "failed") console.log(`  ${file.name} > ${test.fullName}`);'
  fi
  exit 1
done
echo "test-under-load: ${rounds} rounds passed"
