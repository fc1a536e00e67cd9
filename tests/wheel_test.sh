#!/usr/bin/env bash
# The binary wheel (scripts/build_wheel.sh, into $IOTAPE_WHEEL_BUILD, default
# build-wheel/ of the checkout): its extension needs no shared library but
# glibc's, auditwheel tags it manylinux, and in a minimal Debian bookworm
# chroot with no -dev package and no compiler, pip installs it into a fresh
# virtual environment, where iotape.open().to_arrow() of the real samples'
# imports equals `iotape cat --format csv` of the normal build BUILD_DIR, and
# a trace iotape.write() makes there is read the same by that `iotape cat`;
# the developer build's package (BUILD_DIR/python-venv), when there, must fail
# to load there for want of a shared library.
# The chroot (debootstrap --variant=minbase, with python3 and python3-venv)
# is made once and kept in the wheel build folder, as are the wheels of the
# wheel's dependencies (pyarrow, downloaded from PyPI by pip on this machine)
# that pip installs there with --no-index; /proc is bind-mounted into it
# only while the commands run. Needs root and the real samples
# ($IOTAPE_REAL_TRACES): without them it is skipped, except under CI.
# Usage: wheel_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
source_dir=$(realpath "$(dirname "$0")/..")
wheel_build=$(realpath -m "${IOTAPE_WHEEL_BUILD:-$source_dir/build-wheel}")
real=${IOTAPE_REAL_TRACES:-$source_dir/../shared/traces/real}
mirror=${IOTAPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$wheel_build/bookworm-root
work=$root/iotape-test
tmp=$(mktemp -d)

# shellcheck source=tests/chroot_test_support.sh
source "$source_dir/tests/chroot_test_support.sh"

start=$SECONDS
wheel=$("$source_dir/scripts/build_wheel.sh" "$wheel_build")
echo "wheel: ${wheel##*/}, $(du -k "$wheel" | cut -f1) KiB, built in $((SECONDS - start)) s"
[[ ${wheel##*/} =~ ^iotape-[0-9.]+-cp3[0-9]+-cp3[0-9]+-manylinux_2_[0-9]+_x86_64\.whl$ ]] ||
  fail "${wheel##*/} is not a manylinux wheel"

# The extension in the wheel needs glibc alone.
mkdir "$tmp/unpacked"
python3 -m zipfile -e "$wheel" "$tmp/unpacked"
ext=("$tmp"/unpacked/iotape/_ext.*.so)
[[ -f ${ext[0]} ]] || fail "no extension in $wheel"
needed=$(readelf -dW "${ext[0]}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
while read -r lib; do
  case $lib in
    libc.so.6 | libm.so.6 | ld-linux-x86-64.so.2 | libpthread.so.0 | libdl.so.2 | librt.so.1) ;;
    *) fail "the wheel's extension needs $lib (all it needs: $(tr '\n' ' ' <<<"$needed"))" ;;
  esac
done <<<"$needed"
show=$("$wheel_build/venv/bin/auditwheel" show "$wheel")
echo "the extension needs $(tr '\n' ' ' <<<"$needed")"
echo "auditwheel show: $(grep -o 'consistent with.*' <<<"${show//$'\n'/ }" | grep -o '"[^"]*"' | head -1)"

[[ $(id -u) -eq 0 ]] || skip "the bookworm chroot: chroot and debootstrap need root"
[[ -f $real/msr-hm0-sample.csv ]] || skip "no real trace samples in $real"
command -v debootstrap >/dev/null || PATH=$PATH:/usr/sbin:/sbin
command -v debootstrap >/dev/null || skip "debootstrap is not installed"

if [[ ! -x $root/usr/bin/python3 ]]; then
  start=$SECONDS
  unmount_under "$root.tmp"
  rm -rf "$root.tmp" "$root"
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$root.tmp" "$mirror" \
    >"$tmp/debootstrap.log" 2>&1 || {
    unmount_under "$root.tmp"; fail "debootstrap: $(tail -20 "$tmp/debootstrap.log")"; }
  unmount_under "$root.tmp"
  mv "$root.tmp" "$root"
  echo "debootstrap --variant=minbase bookworm: $((SECONDS - start)) s, $(du -sh "$root" | cut -f1)"
fi

# The wheel's dependencies, as wheels for the chroot's Python (the same
# version as this machine's /usr/bin/python3: Debian bookworm's).
deps=$wheel_build/chroot-wheels
pyarrow_pin=$(grep -E '^pyarrow==' "$source_dir/python/requirements.txt")
if ! compgen -G "$deps/pyarrow-${pyarrow_pin#pyarrow==}-*.whl" >/dev/null; then
  "$wheel_build/venv/bin/pip" download -q --disable-pip-version-check --only-binary=:all: \
    -d "$deps" "$pyarrow_pin" || fail "pip download $pyarrow_pin"
fi

# The chroot has no compiler and no -dev package.
dev=$(chroot "$root" dpkg -l | grep -- -dev || true)
[[ -z $dev ]] || fail "the chroot has -dev packages: $dev"
for cc in gcc cc g++ c++ x86_64-linux-gnu-gcc; do
  ! chroot "$root" /bin/sh -c "command -v $cc" >/dev/null || fail "the chroot has $cc"
done

# Here: the samples imported and printed as CSV by the normal build.
rm -rf "$work"
mkdir -p "$work/data"
import_sample() {
  "$build/cli/iotape" import "$@" >"$tmp/import.log" 2>&1 || fail "iotape import $*: $(cat "$tmp/import.log")"
}
import_sample msr "$real/msr-hm0-sample.csv" -o "$work/data/msr.iot"
import_sample vscsi "$real/cloudphysics-sample.vscsi" -o "$work/data/vscsi.iot"
import_sample blktrace "$real/lvm-sda.blktrace.0" "$real/lvm-sda.blktrace.1" -o "$work/data/blktrace.iot"
for t in msr vscsi blktrace; do
  "$build/cli/iotape" cat --format csv "$work/data/$t.iot" >"$work/data/$t.csv"
done
cp "$wheel" "$work/"
cp -r "$deps" "$work/wheels"
cp "$source_dir/tests/wheel_check.py" "$source_dir/python/tests/cat_columns.py" "$work/"
# For contrast, the package as the developer build installs it (scripts/setup.sh
# into BUILD_DIR/python-venv), linked to Debian's shared libraries, when there.
dev_package=$(compgen -G "$build/python-venv/lib/python3*/site-packages/iotape" | head -1 || true)
[[ -z $dev_package ]] || cp -r "$dev_package" "$work/dev-package"

mount --bind /proc "$root/proc"
start=$SECONDS
release=$(cat "$root/etc/debian_version")
glibc=$(chroot "$root" ldd --version)
glibc=${glibc%%$'\n'*}
chroot "$root" python3 -m venv /iotape-test/venv
chroot "$root" /iotape-test/venv/bin/pip install -q --disable-pip-version-check --no-index \
  --find-links /iotape-test/wheels "/iotape-test/${wheel##*/}" >"$tmp/pip.log" 2>&1 ||
  fail "pip install of the wheel in the chroot: $(cat "$tmp/pip.log")"
installed=$(chroot "$root" /iotape-test/venv/bin/pip list --disable-pip-version-check --format=freeze)
chroot "$root" /iotape-test/venv/bin/python /iotape-test/wheel_check.py /iotape-test/data msr vscsi blktrace
if [[ -n $dev_package ]]; then
  mkdir "$work/dev"
  mv "$work/dev-package" "$work/dev/iotape"
  if dev_import=$(chroot "$root" /bin/sh -c \
      'cd /iotape-test/dev && /iotape-test/venv/bin/python -c "import iotape._ext"' 2>&1); then
    fail "the developer build's extension loads in the chroot too, which then proves nothing"
  fi
  [[ $dev_import == *"cannot open shared object file"* ]] ||
    fail "the developer build's extension fails in the chroot, not for a missing library: $dev_import"
  echo "the developer build's extension does not load there: ${dev_import##*$'\n'}"
fi
umount "$root/proc"
echo "Debian $release chroot ($glibc), no -dev package, no compiler: pip installed $(grep -E '^(iotape|pyarrow)==' <<<"$installed" | tr '\n' ' ')in $((SECONDS - start)) s"

# The trace the wheel wrote, read by the normal build.
"$build/cli/iotape" cat --format csv "$work/data/written.iot" >"$tmp/written.csv"
cmp -s "$work/data/vscsi.csv" "$tmp/written.csv" ||
  fail "iotape cat of the trace the wheel wrote differs from the vscsi trace it copied:
$(diff "$work/data/vscsi.csv" "$tmp/written.csv" | head -10)"
echo "iotape cat reads the trace iotape.write() made in the chroot as the trace it copied"
