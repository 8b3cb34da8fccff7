#!/bin/sh
# tflite_libs.sh - prints what a program linking the whole of TFLite's
# library target (tensorflow-lite, every builtin kernel) needs, read off
# a configured TFLite build (CMake with ninja): the library's archive and
# those of its dependencies that the build makes (abseil, ruy, cpuinfo,
# fft2d, flatbuffers), or the system libraries and flags it links too.
#
# Usage: tflite_libs.sh BUILD_DIR archives|flags
# archives: paths relative to BUILD_DIR, one per line, libtensorflow-lite.a
#           first, in CMake's link order.
# flags:    the rest of the link line (system libraries found by the
#           configure step, -l options), on one line.
# The list is CMake's own: the link libraries of the one linked target in
# TFLite's build.ninja that takes the library with its whole interface,
# the Python wrapper (which is never built). Exit 1 when the build is not
# configured or that target is missing.
set -eu
build=$1
what=$2
[ -f "$build/build.ninja" ] || { echo "$0: $build: not configured" >&2; exit 1; }
libs=$(awk '
  /^build _pywrap_tensorflow_interpreter_wrapper\.so:/ { f = 1; next }
  f && /^build / { exit }
  f && /^ *LINK_LIBRARIES = / { sub(/^ *LINK_LIBRARIES = /, ""); print; exit }
' "$build/build.ninja")
[ -n "$libs" ] || { echo "$0: $build: no link line for the tensorflow-lite library" >&2; exit 1; }
case $what in
archives)
  printf '%s\n' $libs | awk '/^[^-\/].*\.a$/ && !seen[$0]++' ;;
flags)
  printf '%s\n' $libs | awk '!/^[^-\/].*\.a$/ && !seen[$0]++' | tr '\n' ' ' |
    sed 's/ $//'; echo ;;
*)
  echo "usage: $0 BUILD_DIR archives|flags" >&2; exit 1 ;;
esac
