#!/usr/bin/env bash
# Builds the static iotape (cmake -DIOTAPE_STATIC=ON: no shared-library
# dependencies, see cmake/static.cmake) into BUILD_DIR (default build-static/),
# without tests and benchmarks, on at most $IOTAPE_JOBS cores (default 2).
# Checks that the result is not a dynamic executable and prints its path.
# Usage: scripts/build_static.sh [BUILD_DIR]
set -euo pipefail
source_dir=$(realpath "$(dirname "$0")/..")
build=${1:-$source_dir/build-static}
cmake -S "$source_dir" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DIOTAPE_STATIC=ON -DIOTAPE_TESTS=OFF -DIOTAPE_BENCH=OFF >/dev/null
# The linker's warnings about dlopen, getaddrinfo and gethostbyname come from
# libcrypto.a (engines and BIO sockets), which iotape does not reach: only its
# SHA-256 digest is used (README, "One static binary").
log=$build/build_static.log
if ! ninja -C "$build" -j"${IOTAPE_JOBS:-2}" --quiet >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
grep -v '^ninja: no work to do' "$log" >&2 || true
bin=$build/cli/iotape
[[ -x $bin ]] || { echo "build_static.sh: no $bin" >&2; exit 1; }
ldd_out=$(ldd "$bin" 2>&1 || true)
[[ $ldd_out == *"not a dynamic executable"* ]] || {
  echo "build_static.sh: $bin is dynamic: $ldd_out" >&2; exit 1; }
echo "$bin"
