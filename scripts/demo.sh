#!/usr/bin/env bash
# The main job on built-in defaults: installs, builds, then imports the MSR
# Cambridge sample (when ../shared/traces/real is beside the checkout) and
# shows what iotape sees in it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
out=${IOTAPE_OUT:-out}
mkdir -p "$out"
sample=../shared/traces/real/msr-hm0-sample.csv
if [[ -r $sample ]]; then
  build/cli/iotape import msr "$sample" -o "$out/msr-hm0.iot"
  build/cli/iotape info "$out/msr-hm0.iot"
  build/cli/iotape cat "$out/msr-hm0.iot" --limit 10
else
  echo "iotape demo: $sample not found; see README.md for importing your own traces" >&2
fi
