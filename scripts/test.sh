#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (as root: the capture and
# replay tests use BPF, tracefs and loop devices).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure --timeout 900 "$@"
