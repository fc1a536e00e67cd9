# Shared by the tests that run iotape in a debootstrapped Debian chroot
# (static_binary_test.sh, wheel_test.sh). Sourced after they set $root (the
# chroot), $work (their folder in it) and $tmp; the EXIT trap unmounts
# whatever is mounted under the chroot and removes both folders.

# Unmounts whatever is mounted at or under DIR (innermost first).
unmount_under() {
  local mounts
  mounts=$(findmnt -rn -o TARGET | awk -v d="$1" '$0 == d || index($0, d "/") == 1' | sort -r)
  [[ -z $mounts ]] || xargs -r -d '\n' umount <<<"$mounts"
}
cleanup() {
  [[ ! -d $root ]] || unmount_under "$root"
  rm -rf "$tmp" "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { [[ -z ${CI:-} ]] || fail "$* (CI skips nothing)"; echo "SKIP: $*"; exit 0; }
