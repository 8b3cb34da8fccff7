#!/bin/sh
# tflite_check.sh - `make tflite-check`: the tflite_infer that `make
# tflite` builds, with every TFLite builtin kernel, runs the generated
# models of tests/data/generated/ and the bundled ones of
# tests/data/models/ on arenad's plan with outputs identical to TFLite's
# own planner. Outside `make test`, which never builds the whole of
# TFLite.
#
# Usage: tests/tflite_check.sh TFLITE_INFER
# For each model: `TFLITE_INFER --socket NONE --invokes 3 --values 0
# MODEL` (no daemon: the plan is made in the process) must exit 0, say
# "plan: from local" with at least one tensor placed, and print the same
# outputs digest and outputs as `--planner tflite`. The models TFLite
# itself refuses (their operators are not TFLite builtins, or TFLite
# rejects their quantization) must exit 65 with an error that says why
# (refused(), below). Prints one line a model and a summary; exit 1 when
# any model failed, 2 on a bad command line.
bin=$1
[ -x "$bin" ] || { echo "tflite_check.sh: usage: tflite_check.sh TFLITE_INFER" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
nosock=$tmp/no.sock
pass=0; fail=0

# The bundled models TFLite refuses: prints what the error must say
# (tests/check_tflite_rt.cc says why), nothing for a model that runs.
refused() {
  case $(basename "$1" .tflite) in
  audio_preprocessor_int8)
    echo "has no kernel for custom operator 'SignalWindow' (version 1)" ;;
  person_detect)
    echo "TFLite said: quantized_dimension must be in range" ;;
  esac
}

# Why the run of ours (exit status rc, output in file a) does not match
# TFLite's own (rc2, b); nothing when it does.
verdict() {
  rc=$1; rc2=$2; a=$3; b=$4
  plan=$(grep '^plan: ' "$a")
  placed=$(printf '%s\n' "$plan" | sed -n 's/.* tensors (\([0-9]*\) placed.*/\1/p')
  d1=$(grep '^outputs digest: ' "$a")
  d2=$(grep '^outputs digest: ' "$b")
  if [ "$rc" -ne 0 ]; then
    echo "exit $rc: $(grep '^tflite_infer:' "$a" | head -n 1)"
  elif [ "$rc2" -ne 0 ]; then
    echo "--planner tflite: exit $rc2"
  elif ! printf '%s\n' "$plan" | grep -q '^plan: from local[ ,]'; then
    echo "not on arenad's plan: $plan"
  elif [ "${placed:-0}" -eq 0 ]; then
    echo "no tensor placed: $plan"
  elif [ -z "$d1" ] || [ "$d1" != "$d2" ]; then
    echo "digests differ: '$d1' and '$d2'"
  elif [ "$(sed -n '/^output /,$p' "$a")" != "$(sed -n '/^output /,$p' "$b")" ]; then
    echo "outputs differ"
  fi
}

for m in tests/data/generated/*.tflite tests/data/models/*.tflite; do
  name=$(basename "$m" .tflite)
  "$bin" --socket "$nosock" --invokes 3 --values 0 "$m" > "$tmp/ours" 2>&1
  rc=$?
  said=$(refused "$m")
  if [ -n "$said" ]; then
    line=$(grep '^tflite_infer:' "$tmp/ours" | head -n 1)
    if [ $rc -ne 65 ]; then
      echo "FAIL $name: expected exit 65, got $rc"; fail=$((fail + 1))
    elif ! printf '%s\n' "$line" | grep -qF "$said"; then
      echo "FAIL $name: the error does not say \"$said\": $line"; fail=$((fail + 1))
    else
      echo "ok   $name: refused (exit 65): $line" | cut -c1-200
      pass=$((pass + 1))
    fi
    continue
  fi
  "$bin" --planner tflite --invokes 3 --values 0 "$m" > "$tmp/theirs" 2>&1
  why=$(verdict $rc $? "$tmp/ours" "$tmp/theirs")
  if [ -n "$why" ]; then
    echo "FAIL $name: $why"; fail=$((fail + 1))
  else
    echo "ok   $name: $(sed -n 's/^plan: from \([a-z]*\)[^,]*, /\1, /p' "$tmp/ours"); digest $(sed -n 's/^outputs digest: \(.\{16\}\).*/\1.../p' "$tmp/ours")"
    pass=$((pass + 1))
  fi
done
echo "tflite-check: $pass passed, $fail failed"
[ $fail -eq 0 ]
