#!/usr/bin/env bash
# Builds the static iotape (scripts/build_static.sh, in build-static/) and
# packages it twice, into OUT_DIR (default build-static/packages):
#   iotape_VERSION_ARCH.deb              the Debian package (cpack), under /usr
#   iotape-VERSION-MACHINE-linux.tar.gz  one folder iotape-VERSION-MACHINE-linux/
#       with bin/iotape, lib/systemd/system/iotape-record.service,
#       share/man/man1, share/bash-completion and share/doc/iotape, laid out
#       for /usr/local (the unit starts /usr/local/bin/iotape):
#       tar -C /usr/local --strip-components=1 -xzf iotape-...tar.gz
# Both carry the stripped binary, which needs no shared library.
# Usage: scripts/package.sh [OUT_DIR]
set -euo pipefail
source_dir=$(realpath "$(dirname "$0")/..")
build=${IOTAPE_STATIC_BUILD:-$source_dir/build-static}
"$source_dir/scripts/setup.sh" --deps-only
bin=$("$source_dir/scripts/build_static.sh" "$build")
out=$(realpath -m "${1:-$build/packages}")
mkdir -p "$out"
version=$("$bin" --version | awk '{print $2}')
name=iotape-$version-$(uname -m)-linux
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/deb" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log" >&2; exit 1; }
deb=$tmp/deb/iotape_${version}_$(dpkg --print-architecture).deb
[[ -z $(dpkg-deb -f "$deb" Depends) ]] || { echo "package.sh: $deb has dependencies" >&2; exit 1; }
mv "$deb" "$out/"

DESTDIR=$tmp/stage cmake --install "$build" --prefix /usr/local --strip >/dev/null
mv "$tmp/stage/usr/local" "$tmp/$name"
tar -C "$tmp" --sort=name --owner=0 --group=0 --numeric-owner -czf "$out/$name.tar.gz" "$name"

for f in "$out/${deb##*/}" "$out/$name.tar.gz"; do
  echo "$f ($(stat -c %s "$f") bytes)"
done
