#!/usr/bin/env bash
# Installs iotape's build and test dependencies (Debian bookworm, as root) and
# builds it into build/. Idempotent and quiet when everything is in place.
# With --deps-only it installs the dependencies and stops there.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config
  clang llvm libclang-rt-14-dev libbpf-dev bpftool libelf-dev zlib1g-dev
  liburing-dev libssl-dev libprotobuf-dev protobuf-compiler libzstd-dev zstd libbz2-dev liblzma-dev
  gzip bzip2 xz-utils
  catch2 libcli11-dev libfmt-dev nlohmann-json3-dev libbenchmark-dev
  fio blktrace e2fsprogs util-linux chromium qemu-system-x86 binutils
  python3 python3-venv python3-dev dpkg-dev file man-db systemd debootstrap
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Installs Debian packages PKG..., as root only.
install_packages() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "iotape setup: missing packages ($*); run as root to install them" >&2
    exit 1
  fi
  echo "iotape setup: installing $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
((${#missing[@]} == 0)) || install_packages "${missing[@]}"
[[ ${1:-} != --deps-only ]] || exit 0

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build --quiet 2>&1 | grep -v '^ninja: no work to do' || true
test -x build/cli/iotape

# The Python package, in a virtual environment of its own with pinned
# packages; PySpark needs a JVM.
command -v java >/dev/null || install_packages openjdk-17-jre-headless
venv=build/python-venv
[[ -x $venv/bin/python ]] || /usr/bin/python3 -m venv "$venv"
if ! cmp -s python/requirements.txt "$venv/requirements.installed"; then
  "$venv/bin/pip" install -q --disable-pip-version-check -r python/requirements.txt
  cp python/requirements.txt "$venv/requirements.installed"
fi
# A build directory that persists makes reinstalling after a change quick.
"$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --no-deps \
  --config-settings=build-dir="$PWD/build/python-wheel" ./python
