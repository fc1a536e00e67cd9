#!/usr/bin/env bash
# Installs a built tree into a scratch prefix, then as the Debian package, and
# checks what lands where: binary, systemd unit, bash completion, manual pages
# and docs. The package part installs and purges iotape on this machine, so it
# needs root (without root it is skipped, except under CI). Tools a container
# may lack (systemd-analyze, man) are named when missing, and fail under CI.
# The package of a static build (IOTAPE_STATIC) must depend on nothing.
# Usage: install_test.sh BUILD_DIR VERSION
set -euo pipefail
build=$(realpath "$1") version=$2
source_dir=$(realpath "$(dirname "$0")/..")
cmake=${CMAKE:-cmake} cpack=${CPACK:-cpack}
tmp=$(mktemp -d)
package_installed=
cleanup() {
  [[ -z $package_installed ]] || apt-get purge -y -qq -o DPkg::Lock::Timeout=120 iotape >/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { [[ -z ${CI:-} ]] || fail "$* (CI skips nothing)"; echo "SKIP: $*"; }
have() { command -v "$1" >/dev/null || { skip "$1 is not installed: $2"; return 1; }; }

# What the completion script $completion offers for the words WORD... (sorted).
offered() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _iotape
           printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$completion" "$@"
}

# Checks everything the install promises, found under the prefix PREFIX.
check_tree() {
  local prefix=$1 bin=$1/bin/iotape
  [[ -x $bin ]] || fail "no executable $bin"
  [[ $("$bin" --version) == "iotape $version" ]] || fail "$bin --version: $("$bin" --version)"

  local unit=$prefix/lib/systemd/system/iotape-record.service
  [[ -f $unit ]] || fail "no unit $unit"
  grep -q "^ExecStart=/bin/sh -c 'exec $bin record " "$unit" ||
    fail "the unit does not start $bin: $(grep ExecStart "$unit")"
  if have systemd-analyze "the unit is not verified"; then
    local verify
    verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $verify"
    [[ -z $verify ]] || fail "systemd-analyze verify: $verify"
    echo "systemd-analyze verify $unit: clean"
  fi

  local completion=$prefix/share/bash-completion/completions/iotape
  bash -n "$completion" || fail "bash -n $completion"
  [[ $(bash -c 'source "$1"; complete -p iotape' _ "$completion") == *"-F _iotape iotape" ]] ||
    fail "sourcing $completion does not register a completion for iotape"
  [[ $(offered iotape '') == "$(printf '%s\n' --help --version "${subcommands[@]}" | sort)" ]] ||
    fail "iotape <TAB> does not offer the subcommands"
  [[ $(offered iotape cat --format '' | xargs) == "csv jsonl text" ]] ||
    fail "iotape cat --format <TAB> does not offer the formats"

  local man1=$prefix/share/man/man1 pages sub
  pages=$(cd "$man1" && printf '%s\n' iotape*.1.gz | sort)
  [[ $pages == "$(printf '%s.1.gz\n' iotape "${subcommands[@]/#/iotape-}" | sort)" ]] ||
    fail "manual pages $(xargs <<<"$pages") are not one per subcommand (${subcommands[*]})"
  local can_render=
  have man "manual pages not rendered" && can_render=1
  for sub in '' "${subcommands[@]}"; do
    local page=iotape${sub:+-$sub} options words
    words=(iotape ${sub:+"$sub"})
    options=$("$bin" "${words[@]:1}" --help | sed -n '/^Options:$/,/^$/p' |
      grep -oE '^  (-[a-zA-Z],)?--[a-z0-9-]+' | grep -oE -- '--.*' | sort)
    [[ $(offered "${words[@]}" --) == "$options" ]] || fail "${words[*]} --<TAB> does not offer: $options"
    [[ -n $can_render ]] || continue
    local rendered warnings
    rendered=$(MANWIDTH=250 man --warnings -l "$man1/$page.1.gz" 2>"$tmp/warnings")
    warnings=$(<"$tmp/warnings")
    [[ -z $warnings ]] || fail "man $page: $warnings"
    [[ $(lexgrog "$man1/$page.1.gz") == *": \"$page - "* ]] || fail "$page has no NAME line man-db reads"
    for option in $options; do
      grep -qF -- "$option" <<<"$rendered" || fail "man $page does not describe $option"
    done
  done

  local doc
  for doc in "$source_dir"/README.md "$source_dir"/docs/*.md; do
    cmp -s "$doc" "$prefix/share/doc/iotape/${doc##*/}" || fail "docs: no ${doc#"$source_dir"/}"
  done
}

"$cmake" --install "$build" --prefix "$tmp/prefix" >/dev/null
mapfile -t subcommands < <("$tmp/prefix/bin/iotape" --help |
  sed -n '/^Subcommands:$/,/^$/{/^  [^ ]/p}' | awk '{print $1}')
((${#subcommands[@]})) || fail "iotape --help lists no subcommands"
check_tree "$tmp/prefix"
echo "cmake --install --prefix: binary, unit, completion, ${#subcommands[@]}+1 manual pages, docs"

if [[ $(id -u) -ne 0 ]]; then
  skip "the Debian package: installing it needs root"
  exit 0
fi
dpkg-query -W iotape >/dev/null 2>&1 && fail "a package iotape is installed already; this test would replace it"
[[ ! -e /usr/bin/iotape ]] || fail "/usr/bin/iotape exists; this test would replace it"
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/package" >"$tmp/cpack.log" 2>&1 ||
  fail "cpack: $(<"$tmp/cpack.log")"
deb=$tmp/package/iotape_${version}_$(dpkg --print-architecture).deb
[[ -f $deb ]] || fail "cpack wrote no $deb"
depends=$(dpkg-deb -f "$deb" Depends)
if [[ $(ldd "$build/cli/iotape" 2>&1) == *"not a dynamic executable"* ]]; then
  # The static build (IOTAPE_STATIC): a package that needs no other.
  [[ -z $depends ]] || fail "the static binary's package has Depends: $depends"
else
  for lib in libc6 libbpf1 liburing2 libzstd1 libprotobuf32 libfmt9; do
    pattern=", $lib[ ,]"
    [[ ", $depends," =~ $pattern ]] || fail "Depends lacks $lib: $depends"
  done
fi
package_installed=1
apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=120 "$deb" >"$tmp/apt.log" 2>&1 ||
  fail "apt-get install $deb: $(<"$tmp/apt.log")"
check_tree /usr
files=(/usr/bin/iotape /usr/lib/systemd/system/iotape-record.service
       /usr/share/bash-completion/completions/iotape /usr/share/man/man1/iotape.1.gz)
for sub in "${subcommands[@]}"; do files+=("/usr/share/man/man1/iotape-$sub.1.gz"); done
listed=$(dpkg -L iotape)
for file in "${files[@]}"; do
  grep -qx -- "$file" <<<"$listed" || fail "dpkg -L iotape does not list $file"
done
if have man "man -w not tried"; then
  [[ $(man -w iotape-replay) == /usr/share/man/man1/iotape-replay.1.gz ]] || fail "man does not find iotape-replay"
fi
apt-get purge -y -qq -o DPkg::Lock::Timeout=120 iotape >/dev/null
package_installed=
! dpkg-query -W iotape >/dev/null 2>&1 && [[ ! -e /usr/bin/iotape ]] || fail "the purge left iotape behind"
echo "${deb##*/} ($(stat -c %s "$deb") bytes): apt-get install, the same checks under /usr, dpkg -L, purge"
echo "Depends: ${depends:-(none)}"
