#!/usr/bin/env bash
# Writes iotape's bash completion to OUT from the --help output of the built
# binary, so that it completes the subcommands and options it has.
# Usage: gen_completion.sh IOTAPE OUT
set -euo pipefail
iotape=$1 out=$2

# The lines of one section ("Options:", "Subcommands:") of a --help text.
section() { sed -n "/^$1:\$/,/^\$/{/^  [^ ]/p}"; }

subcommands=$("$iotape" --help | section Subcommands | awk '{print $1}' | xargs)

# A failed run leaves no OUT that looks up to date.
exec >"$out.tmp"
cat <<EOF
# bash completion for iotape; generated from \`iotape --help\` and
# \`iotape COMMAND --help\` by cmake/gen_completion.sh.
_iotape() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} sub= i
  # The top level has flags only: the first other word is the subcommand.
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ \${COMP_WORDS[i]} == -* ]] || { sub=\${COMP_WORDS[i]}; break; }
  done
  local words
  case \$sub in
    '') words="--help --version $subcommands" ;;
EOF
choices=()
for sub in $subcommands; do
  longs=()
  while read -r flags rest; do
    term="$flags $rest"
    term=${term%%  *}
    for flag in ${flags//,/ }; do
      [[ $flag == --* ]] && longs+=("$flag")
      if [[ $term =~ :\{([^}]*)\} ]]; then
        choices+=("    '$sub $flag') words=\"${BASH_REMATCH[1]//,/ }\" ;;")
      fi
    done
  done < <("$iotape" "$sub" --help | section Options | grep '^  -')
  echo "    $sub) words=\"${longs[*]}\" ;;"
done
cat <<EOF
    *) return ;;
  esac
  # Option values: the choices an option has; other values are files.
  case "\$sub \$prev" in
$(printf '%s\n' "${choices[@]}")
    *) [[ -z \$sub || \$cur == -* ]] || return ;;
  esac
  COMPREPLY=(\$(compgen -W "\$words" -- "\$cur"))
}
complete -o default -F _iotape iotape
EOF
mv "$out.tmp" "$out"
