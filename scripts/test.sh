#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (as root: the capture and
# replay tests use BPF, tracefs and loop devices).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# A CI machine runs nothing else: a blk tracer left selected by a run that was
# killed (the recorder refuses a busy tracer, rightly) is freed first.
T=/sys/kernel/tracing/current_tracer
if [ -n "${CI:-}" ] && [ -w "$T" ] && [ "$(cat "$T")" != nop ] && ! pgrep -x iotape > /dev/null; then
  echo "test.sh: freeing the $(cat "$T") tracer left selected in $T" >&2
  echo nop > "$T"
fi
cd build
ctest --output-on-failure --timeout 900 "$@"
