#!/bin/sh
# layers.sh - checks that the folders of planner/ use each other only one
# way, from the symbols of their archives: every symbol an archive needs
# from another planner archive must come from one it may use.
#
# Usage: tests/layers.sh BUILD_DIR [FOLDER=ALLOWED,ALLOWED ...]
#   The arguments after BUILD_DIR replace the allowed folders of one
#   folder (an empty list: none), so that a test can check that a wrong
#   map is caught.
# Prints "layers: FOLDER uses SYMBOL from OTHER" for every violation and
# "layers: ok (N archives)" when there is none. Exit status: 0 clean,
# 1 violations, 2 usage error or a missing archive.
#
# The allowed map is the one README.md and docs/architecture.md draw:
#   core (libc only) <- heuristics <- search <- run, and core <- formats.
set -u
LC_ALL=C; export LC_ALL
build=${1:-}
[ -n "$build" ] || { echo "usage: tests/layers.sh BUILD_DIR [FOLDER=A,B ...]" >&2; exit 2; }
shift
folders="core heuristics search run formats"
allow_core=""
allow_heuristics="core"
allow_search="core heuristics"
allow_run="core heuristics search"
allow_formats="core"
for o in "$@"; do
  f=${o%%=*}; v=$(echo "${o#*=}" | tr ',' ' ')
  case " $folders " in
    *" $f "*) eval "allow_$f=\$v" ;;
    *) echo "layers.sh: unknown folder '$f'" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
for f in $folders; do
  a="$build/libarena$f.a"
  [ -f "$a" ] || { echo "layers.sh: $a is missing (run make first)" >&2; exit 2; }
  nm -g --defined-only "$a" 2>/dev/null | awk -v f="$f" 'NF == 3 {print $3, f}' >> "$tmp/defs"
  nm -u "$a" 2>/dev/null | awk 'NF == 2 && $1 == "U" {print $2}' | sort -u > "$tmp/undef.$f"
done
sort -u "$tmp/defs" > "$tmp/defs.sorted"
bad=0
for f in $folders; do
  eval "allowed=\$allow_$f"
  # symbol, the folder defining it: those this folder needs from another
  join "$tmp/undef.$f" "$tmp/defs.sorted" | while read -r sym from; do
    [ "$from" = "$f" ] && continue
    case " $allowed " in *" $from "*) continue ;; esac
    echo "layers: $f uses $sym from $from"
  done > "$tmp/bad.$f"
  n=$(wc -l < "$tmp/bad.$f")
  cat "$tmp/bad.$f"
  bad=$((bad + n))
done
if [ "$bad" -ne 0 ]; then
  echo "layers: $bad violations"
  exit 1
fi
echo "layers: ok ($(echo $folders | wc -w) archives)"
exit 0
