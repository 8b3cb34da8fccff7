#!/bin/sh
# layers.sh - checks that the folders of planner/ and the parts of
# client/ use each other only one way, from the symbols of their
# archives and objects: every symbol a part needs from another part
# must come from one it may use.
#
# Usage: tests/layers.sh BUILD_DIR [PART=ALLOWED,ALLOWED ...]
#   The arguments after BUILD_DIR replace the allowed parts of one part
#   (an empty list: none), so that a test can check that a wrong map is
#   caught.
# Prints "layers: PART uses SYMBOL from OTHER" for every violation and
# "layers: ok (N parts)" when there is none. Exit status: 0 clean,
# 1 violations, 2 usage error or a missing archive.
#
# The allowed map is the one docs/architecture.md draws:
#   planner/: core (libc only) <- heuristics <- search <- run, and
#             core <- formats;
#   wire (proto/) uses core and formats;
#   client/:  lib (the C library) uses wire and the planner; cli
#             (arenactl) uses lib, wire and the planner; the adapters
#             tflm and tflite use lib and the planner, never cli; their
#             kernels (tflm_ops, and ops shared by both) use nothing of
#             arenad's but ops; the examples use the adapters, their
#             kernels, lib and the planner. Nothing uses cli or the
#             examples.
# The TensorFlow Lite adapter is checked when it was built (make tflite,
# or make test); the other parts must be there (make all tflm).
set -u
LC_ALL=C; export LC_ALL
build=${1:-}
[ -n "$build" ] || { echo "usage: tests/layers.sh BUILD_DIR [PART=A,B ...]" >&2; exit 2; }
shift
planner="core heuristics search run formats"
parts="$planner wire lib cli tflm tflm_ops ops tflite examples"
allow_core=""
allow_heuristics="core"
allow_search="core heuristics"
allow_run="core heuristics search"
allow_formats="core"
allow_wire="core formats"
allow_lib="wire $planner"
allow_cli="lib wire $planner"
allow_tflm="lib $planner"
allow_tflm_ops="ops"
allow_ops=""
allow_tflite="lib ops $planner"
allow_examples="tflm tflm_ops tflite ops lib $planner"
for o in "$@"; do
  f=${o%%=*}; v=$(echo "${o#*=}" | tr ',' ' ')
  case " $parts " in
    *" $f "*) eval "allow_$f=\$v" ;;
    *) echo "layers.sh: unknown part '$f'" >&2; exit 2 ;;
  esac
done

# files_of PART: the archives or objects that hold PART's code. The
# library's own objects are those of client/lib/ in the PIC build
# (libarenad-client.a also bundles wire and the planner).
files_of() {
  case $1 in
    core|heuristics|search|run|formats) echo "$build/libarena$1.a" ;;
    wire) echo "$build/libarenawire.a" ;;
    lib) echo "$build"/pic/client/lib/*.o ;;
    cli) echo "$build/libarenacli.a $build/client/cli/arenactl.o" ;;
    tflm) echo "$build/libarenad-tflm.a" ;;
    tflm_ops) echo "$build"/client/tflm/ops/*.o ;;
    ops) echo "$build"/client/ops/*.o ;;
    tflite) echo "$build"/client/tflite/*.o ;;
    examples) echo "$build"/client/examples/*.o ;;
  esac
}

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
checked=""
for f in $parts; do
  files=$(files_of "$f")
  present=1
  for a in $files; do [ -f "$a" ] || present=0; done
  if [ "$present" = 0 ]; then
    [ "$f" = tflite ] && continue # built only with TensorFlow Lite
    echo "layers.sh: $files is missing (run make all tflm first)" >&2
    exit 2
  fi
  checked="$checked $f"
  # shellcheck disable=SC2086 # the file lists are split on purpose
  nm -g --defined-only $files 2>/dev/null |
    awk -v f="$f" 'NF == 3 && $2 != "W" && $2 != "V" {print $3, f}' >> "$tmp/defs"
  # shellcheck disable=SC2086
  nm -u $files 2>/dev/null | awk 'NF == 2 && $1 == "U" {print $2}' |
    sort -u > "$tmp/undef.$f"
done
# A symbol several parts define (none should) counts for each of them.
sort -u "$tmp/defs" > "$tmp/defs.sorted"
bad=0
for f in $checked; do
  eval "allowed=\$allow_$f"
  # symbol, the part defining it: those this part needs from another
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
echo "layers: ok ($(echo $checked | wc -w) parts)"
exit 0
