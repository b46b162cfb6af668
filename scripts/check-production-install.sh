#!/usr/bin/env bash
# `hopper run` from an install without devDependencies, as someone who installs Hopper to use it
# has it: the tracked files copied to a temporary folder, `npm ci --omit=dev` there (from the npm
# cache when the project's own `npm ci` filled it), then the bundled example trained end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$dir"
cd "$dir"
npm ci --omit=dev --no-audit --no-fund --prefer-offline --loglevel=error
for dev in vitest cdk-nag aws-cdk eslint; do
  if [ -e "node_modules/$dev" ]; then
    echo "devDependency $dev was installed by npm ci --omit=dev" >&2
    exit 1
  fi
done
node bin/hopper.mjs run examples/reviews --out "$dir/out"
test -s "$dir/out/reviews/model.onnx"
test -s "$dir/out/reviews/model.json"
echo "hopper run from an install without devDependencies: the model is in out/reviews/"
