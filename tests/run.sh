#!/bin/sh
# run.sh - runs every test binary given and sums Check's results.
# Usage: tests/run.sh BUILD_DIR check_a check_b ...
# Each binary prints Check's own "N%: Checks: X, Failures: Y, Errors: Z"
# line; this script adds a final "tests: P passed, F failed" line and exits
# non-zero when any binary failed or crashed.
#
# The programs the tests run come from BUILD_DIR, never from another
# build: the script exports their absolute paths as ARENAD, ARENACTL,
# ARENAD_FAULTS, TFLM_INFER, TFLITE_INFER and POISON_DB (and BUILD_DIR),
# which the suites read through tu_bin() (tests/testutil.h), failing
# loudly when one is unset. So `make BUILD=build-asan SANITIZE=... test`
# runs the sanitized daemon and CLI, whatever else the tree holds.
build=$1; shift
[ -d "$build" ] || { echo "run.sh: no build directory '$build'" >&2; exit 2; }
BUILD_DIR=$(cd "$build" && pwd)
ARENAD=$BUILD_DIR/arenad
ARENACTL=$BUILD_DIR/arenactl
ARENAD_FAULTS=$BUILD_DIR/tests/arenad-faults
TFLM_INFER=$BUILD_DIR/examples/tflm_infer
TFLITE_INFER=$BUILD_DIR/tests/tflite_infer
POISON_DB=$BUILD_DIR/tests/poison_db
export BUILD_DIR ARENAD ARENACTL ARENAD_FAULTS TFLM_INFER TFLITE_INFER POISON_DB
total=0; bad=0; status=0
for t in "$@"; do
  echo "== $t"
  out=$("$build/tests/$t" 2>&1); rc=$?
  printf '%s\n' "$out"
  line=$(printf '%s\n' "$out" | grep -E '^[0-9]+%: Checks: ' | tail -n 1)
  if [ -n "$line" ]; then
    n=$(echo "$line" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
    f=$(echo "$line" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
    e=$(echo "$line" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
    total=$((total + n)); bad=$((bad + f + e))
  else
    echo "$t: no Check summary (exit $rc)"; bad=$((bad + 1)); total=$((total + 1))
  fi
  [ $rc -eq 0 ] || status=1
done
echo "tests: $((total - bad)) passed, $bad failed"
[ $bad -eq 0 ] || status=1
exit $status
