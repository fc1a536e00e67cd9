#!/usr/bin/env bash
# The main job on built-in defaults: installs and builds, synthesises the
# built-in storage-light workload (about a minute), replays it on a scratch
# file (timed at the disk that holds it, as root), prints the report and
# writes an HTML comparison of the workload as modelled and as this machine
# played it. Results go to out/ (or $IOTAPE_OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
iotape=build/cli/iotape
out=${IOTAPE_OUT:-out}
mkdir -p "$out"
scratch="$out/scratch.img"
trap 'rm -f "$scratch"' EXIT
"$iotape" synth storage-light -o "$out/light.iot" --duration 60s --span 1GiB
# Every block written (--prefill full), so that the replay's IOs reach the
# disk under the file and are timed there: a read of a hole or of an
# allocated but unwritten block never does.
rm -f "$scratch"
truncate -s 1GiB "$scratch"
"$iotape" replay "$out/light.iot" --target "$scratch" -o "$out/light-replayed.iot" --allow-write --prefill full
"$iotape" report "$out/light-replayed.iot"
"$iotape" compare "$out/light.iot" "$out/light-replayed.iot" --label "storage-light/synthetic model" \
  --label "storage-light/scratch file" --html "$out/compare.html"
echo "iotape demo: traces and $out/compare.html written"
