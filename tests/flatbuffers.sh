#!/bin/sh
# flatbuffers.sh - checks the models `arenactl embed` writes with the
# official FlatBuffers verifier, independently of arenad's own reader.
#
# Generates the C++ accessors for the TFLite schema with flatc, builds a
# small program around tflite::VerifyModelBuffer (default options: bounds,
# alignment, nesting and table limits all checked), embeds a plan into
# every bundled model (and a second plan into each result, which replaces
# the first), and requires the verifier to accept every original and every
# output, and to reject a damaged file.
#
# Usage: tests/flatbuffers.sh BUILD_DIR SCHEMA.fbs
# Needs flatc (Debian flatbuffers-compiler), the FlatBuffers headers
# (libflatbuffers-dev) and a C++ compiler. Run by `make test-flatbuffers`.
set -u
build=$1
schema=$2
out=$build/flatbuffers
rm -rf "$out"
mkdir -p "$out"
fail() { echo "test-flatbuffers: FAIL: $*" >&2; exit 1; }

# flatc 2.0 does not know the "(deprecated)" attribute on enum values.
sed 's/ (deprecated),/,/' "$schema" >"$out/tflite.fbs"
flatc --cpp -o "$out" "$out/tflite.fbs" || fail "flatc could not read the schema"
cat >"$out/verify.cc" <<'EOF'
// Prints OK or FAIL per file; exits with the number of failures.
#include <cstdio>
#include <vector>
#include "tflite_generated.h"
int main(int argc, char **argv) {
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    std::vector<uint8_t> b;
    FILE *f = std::fopen(argv[i], "rb");
    if (f) {
      int c;
      while ((c = std::fgetc(f)) != EOF) b.push_back(static_cast<uint8_t>(c));
      std::fclose(f);
    }
    flatbuffers::Verifier v(b.data(), b.size());
    bool ok = f && !b.empty() && tflite::VerifyModelBuffer(v);
    std::printf("%s %s\n", ok ? "OK  " : "FAIL", argv[i]);
    bad += !ok;
  }
  return bad;
}
EOF
c++ -std=c++17 -O1 -I"$out" -o "$out/verify" "$out/verify.cc" ||
  fail "cannot build the verifier"

files=""
for m in tests/data/models/*.tflite; do
  n=$(basename "$m" .tflite)
  "$build/arenactl" embed "$m" -o "$out/$n.once.tflite" >/dev/null ||
    fail "embed $m"
  "$build/arenactl" embed --algo greedy-size "$out/$n.once.tflite" \
    -o "$out/$n.twice.tflite" >/dev/null || fail "embed again $m"
  files="$files $m $out/$n.once.tflite $out/$n.twice.tflite"
done
# shellcheck disable=SC2086
"$out/verify" $files || fail "the FlatBuffers verifier rejected a file"

# The check can fail: a vector length past the end must be rejected.
python3 - "$out/hello_world_float.once.tflite" "$out/damaged.tflite" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
root = struct.unpack_from('<I', b, 0)[0]
vt = root - struct.unpack_from('<i', b, root)[0]
slot = root + struct.unpack_from('<H', b, vt + 8)[0]      # subgraphs
vec = slot + struct.unpack_from('<I', b, slot)[0]
struct.pack_into('<I', b, vec, 0x7fffffff)
open(sys.argv[2], 'wb').write(b)
EOF
if "$out/verify" "$out/damaged.tflite" >/dev/null; then
  fail "the verifier accepted a damaged file"
fi
echo "test-flatbuffers: ok ($(echo $files | wc -w) models verified)"
