#!/usr/bin/env bash
# The static binary (IOTAPE_STATIC): builds it with scripts/build_static.sh
# (into $IOTAPE_STATIC_BUILD, default build-static/ of the checkout), checks
# that it needs no shared library, that its install tree and Debian package
# pass install_test.sh, and that in a minimal Debian bullseye chroot (glibc
# 2.31, none of iotape's libraries) it imports the real samples into the same
# bytes, and reports and plans a review the same, as the binary of the normal
# build BUILD_DIR does on this machine.
# The chroot is made once by debootstrap (from $IOTAPE_DEBIAN_MIRROR) and kept
# in the static build folder; /proc is bind-mounted into it only while the
# commands run. The chroot part needs root and the real samples
# ($IOTAPE_REAL_TRACES): without them it is skipped, except under CI.
# Usage: static_binary_test.sh BUILD_DIR VERSION
set -euo pipefail
build=$(realpath "$1") version=$2
source_dir=$(realpath "$(dirname "$0")/..")
static_build=$(realpath -m "${IOTAPE_STATIC_BUILD:-$source_dir/build-static}")
real=${IOTAPE_REAL_TRACES:-$source_dir/../shared/traces/real}
mirror=${IOTAPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$static_build/bullseye-root
work=$root/iotape-test
tmp=$(mktemp -d)

# shellcheck source=tests/chroot_test_support.sh
source "$source_dir/tests/chroot_test_support.sh"

start=$SECONDS
bin=$("$source_dir/scripts/build_static.sh" "$static_build")
echo "static build: $((SECONDS - start)) s ($static_build)"
ldd_out=$(ldd "$bin" 2>&1 || true)
[[ $ldd_out == *"not a dynamic executable"* ]] || fail "ldd $bin: $ldd_out"
file_out=$(file -b "$bin")
[[ $file_out == *"statically linked"* ]] || fail "file $bin: $file_out"
[[ $(readelf -lW "$bin") != *INTERP* ]] || fail "$bin asks for a program interpreter"
[[ $("$bin" --version) == "iotape $version" ]] || fail "$bin --version: $("$bin" --version)"
echo "ldd: ${ldd_out//$'\t'/}; file: ${file_out%%, BuildID*}"

"$source_dir/tests/install_test.sh" "$static_build" "$version"

[[ $(id -u) -eq 0 ]] || skip "the bullseye chroot: chroot and debootstrap need root"
[[ -f $real/msr-hm0-sample.csv ]] || skip "no real trace samples in $real"
command -v debootstrap >/dev/null || PATH=$PATH:/usr/sbin:/sbin
command -v debootstrap >/dev/null || skip "debootstrap is not installed"

if [[ ! -x $root/bin/sh ]]; then
  start=$SECONDS
  unmount_under "$root.tmp"
  rm -rf "$root.tmp"
  debootstrap --variant=minbase bullseye "$root.tmp" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
    unmount_under "$root.tmp"; fail "debootstrap: $(tail -20 "$tmp/debootstrap.log")"; }
  unmount_under "$root.tmp"
  mv "$root.tmp" "$root"
  echo "debootstrap --variant=minbase bullseye: $((SECONDS - start)) s, $(du -sh "$root" | cut -f1)"
fi

# The same commands, with the same file names, here with the normal build's
# binary and in the chroot with the static one; each writes its outputs into
# the folder it is in.
suite='set -u
cd "$(dirname "$0")"
bin=$1
run() { out=$1; shift; "$bin" "$@" >"$out.out" 2>&1; echo "exit $?" >>"$out.out"; }
run import-msr import msr msr-hm0-sample.csv -o msr.iot
run import-lvm import blktrace lvm-sda.blktrace.0 lvm-sda.blktrace.1 -o lvm.iot
run import-vscsi import vscsi cloudphysics-sample.vscsi -o vscsi.iot
for t in msr lvm vscsi; do
  run "report-$t" report "$t.iot"
  run "report-json-$t" report --json "$t.iot"
done
truncate -s 1G target.img
run review-dry-run review --target target.img -o review --allow-write --quick --dry-run
rm -f target.img'
samples=(msr-hm0-sample.csv lvm-sda.blktrace.0 lvm-sda.blktrace.1 cloudphysics-sample.vscsi)
for dir in "$tmp/host" "$work"; do
  rm -rf "$dir"
  mkdir -p "$dir"
  for s in "${samples[@]}"; do cp "$real/$s" "$dir/"; done
  printf '%s\n' "$suite" >"$dir/suite.sh"
done
cp "$bin" "$work/iotape"
cp "$build/cli/iotape" "$work/iotape-dynamic"
sh "$tmp/host/suite.sh" "$build/cli/iotape"

mount --bind /proc "$root/proc"
glibc=$(chroot "$root" ldd --version)
glibc=${glibc%%$'\n'*}
release=$(cat "$root/etc/debian_version")
[[ $(chroot "$root" /iotape-test/iotape --version) == "iotape $version" ]] ||
  fail "the static binary does not run in the bullseye chroot"
chroot "$root" /bin/sh /iotape-test/suite.sh /iotape-test/iotape
# The normal build's binary, for contrast: it cannot run there.
if dynamic=$(chroot "$root" /iotape-test/iotape-dynamic --version 2>&1); then
  fail "the normal build's binary runs in the chroot too, which then proves nothing: $dynamic"
fi
umount "$root/proc"
echo "Debian $release chroot ($glibc): the normal build's binary does not start: ${dynamic%%$'\n'*}"

compared=0
for f in "$tmp/host"/*.out "$tmp/host"/*.iot; do
  name=${f##*/}
  [[ -f $work/$name ]] || fail "the chroot run wrote no $name"
  cmp -s "$f" "$work/$name" || fail "$name differs between the normal build here and the static binary in the chroot:
$(diff "$f" "$work/$name" | head -20)"
  compared=$((compared + 1))
done
((compared == 13)) || fail "compared $compared files, expected 13"
for f in "$work"/*.out; do
  [[ $(tail -n 1 "$f") == "exit 0" ]] || fail "${f##*/}: $(<"$f")"
done
echo "in the chroot, the static binary's 3 imports (byte for byte), 6 reports and review --dry-run match the normal build's"
