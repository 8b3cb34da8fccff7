#!/bin/sh
# tflite_objects.sh - prints the object files of a configured TFLite
# build (CMake with ninja) that arenad's programs need: every object of
# the tensorflow-lite target whose source file is named in LIST
# (tflite_objects.txt), and every object of ruy and cpuinfo.
#
# Usage: tflite_objects.sh BUILD_DIR LIST
# Paths are printed relative to BUILD_DIR, one per line, sorted; exit 1
# when the build is not configured or a name in LIST matches no object.
set -eu
build=$1
list=$2
[ -f "$build/build.ninja" ] || { echo "$0: $build: not configured" >&2; exit 1; }
objs=$(ninja -C "$build" -t targets all | sed -n 's/^\(.*\.o\): .*/\1/p' |
awk -v list="$list" '
  BEGIN {
    while ((getline line < list) > 0) {
      sub(/#.*/, "", line); gsub(/[ \t]/, "", line)
      if (line != "") want[line ".o"] = 1
    }
  }
  {
    n = split($0, part, "/")
    if ($0 ~ /^CMakeFiles\/tensorflow-lite\.dir\// && (part[n] in want)) {
      print; seen[part[n]] = 1
    } else if ($0 ~ /^_deps\/ruy-build\// || $0 ~ /^_deps\/cpuinfo-build\/CMakeFiles\/cpuinfo\.dir\//) {
      print
    }
  }
  END {
    bad = 0
    for (w in want) if (!(w in seen)) { print "tflite_objects.sh: no object for " w > "/dev/stderr"; bad = 1 }
    exit bad
  }')
printf '%s\n' "$objs" | sort
