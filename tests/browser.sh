#!/bin/sh
# browser.sh - renders a real model with `arenactl render --html`, loads the
# page in headless Chromium and checks that it loaded cleanly: the DOM
# Chromium built holds the picture with one rectangle per planned tensor
# and the full tensor table, the console reported no error, and the
# screenshot is not blank (many colours, enough non-white pixels); then
# that every label of a rendered picture lies inside it, measured by
# Chromium with the installed fonts, and that it is at most 1800 px wide.
#
# Usage: tests/browser.sh BUILD_DIR MODEL.tflite
# Needs chromium and python3 (for the PNG check). Run by `make test-browser`.
# Keeps the screenshot as BUILD_DIR/browser/page.png for a human to look at.
set -u
build=$1
model=$2
out=$build/browser
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "test-browser: FAIL: $*" >&2; exit 1; }

"$build/arenactl" render --html "$model" -o "$out/page.html" ||
  fail "arenactl render --html failed"
planned=$("$build/arenactl" import "$model" | grep -cv -e '^#' -e '^id,')
page="file://$(cd "$out" && pwd)/page.html"

flags="--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --hide-scrollbars --enable-logging=stderr --v=0"
# shellcheck disable=SC2086
chromium $flags --user-data-dir="$tmp/profile1" --virtual-time-budget=3000 \
  --dump-dom "$page" >"$out/dom.html" 2>"$out/dom.log" ||
  fail "chromium --dump-dom failed (see $out/dom.log)"
# shellcheck disable=SC2086
chromium $flags --user-data-dir="$tmp/profile2" --window-size=1800,1500 \
  --screenshot="$out/page.png" "$page" >"$out/shot.log" 2>&1 ||
  fail "chromium --screenshot failed (see $out/shot.log)"

# The page as Chromium parsed it.
grep -q '<svg' "$out/dom.html" || fail "no <svg> in the loaded page"
rects=$(grep -o '<rect class="t' "$out/dom.html" | wc -l)
[ "$rects" -eq "$planned" ] ||
  fail "$rects tensor rectangles in the page, $planned planned tensors"
rows=$(grep -o '<tr[ >]' "$out/dom.html" | wc -l)
[ "$rows" -gt "$planned" ] || fail "tensor table has $rows rows"
if grep -E 'CONSOLE|Uncaught|Failed to load|net::ERR_' "$out/dom.log" \
     "$out/shot.log" >"$out/errors.txt"; then
  cat "$out/errors.txt" >&2
  fail "the page logged errors"
fi

# The screenshot: decode the PNG and measure it.
python3 - "$out/page.png" <<'EOF' || fail "screenshot check failed"
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, hdr = 8, b'', None
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        hdr = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = hdr
assert depth == 8 and interlace == 0 and ctype in (2, 6), hdr
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours, inked = set(), 0
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[i] = (line[i] + pr) & 255
    if y % 4 == 0:
        for x in range(0, w, 4):
            px = bytes(line[x * bpp:x * bpp + 3])
            colours.add(px)
            if px != b'\xff\xff\xff':
                inked += 1
    prev = line
samples = ((h + 3) // 4) * ((w + 3) // 4)
share = inked / samples
print('screenshot %dx%d: %d colours, %.1f%% non-white' % (w, h, len(colours), 100 * share))
assert len(colours) >= 8, 'too few colours: blank page?'
assert share >= 0.05, 'almost all white: blank page?'
EOF
# Every label inside the picture, as Chromium lays the text out with the
# installed fonts: the model's picture, a 7-operator graph and a trace of
# 10^6 operators, each measured by a script in a copy of the SVG (the
# page itself has no scripts).
python3 - "$out/seven.csv" "$out/long.csv" <<'EOF' || fail "cannot write the traces"
import random, sys
random.seed(7)
for path, n, ops in ((sys.argv[1], 7, 7), (sys.argv[2], 2000, 1000000)):
    with open(path, 'w') as f:
        f.write('id,size,first,last\n')
        for i in range(n):
            first = ops - 1 if i == n - 1 else random.randrange(ops)
            last = min(ops - 1, first + random.randrange(ops // 7 + 1))
            f.write('%d,%d,%d,%d\n' % (i, random.randint(1, 1 << 20), first, last))
EOF
for src in "$model" "$out/seven.csv" "$out/long.csv"; do
  name=$(basename "$src" | sed 's/\.[a-z]*$//')
  "$build/arenactl" render --algo greedy-size "$src" -o "$out/$name.svg" ||
    fail "arenactl render $src failed"
  {
    echo '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">'
    sed 1d "$out/$name.svg"
    cat <<'EOF'
<script>
const svg = document.querySelector('svg'), r = svg.getBoundingClientRect();
let n = 0, bad = [];
for (const t of svg.querySelectorAll('text')) {
  const b = t.getBoundingClientRect();
  n++;
  if (b.left < r.left - 0.5 || b.top < r.top - 0.5 ||
      b.right > r.right + 0.5 || b.bottom > r.bottom + 0.5)
    bad.push(t.textContent + ' at ' + [b.left - r.left, b.top - r.top,
             b.right - r.left, b.bottom - r.top].map(v => v.toFixed(1)));
}
const p = document.createElement('pre');
p.id = 'result';
p.textContent = 'texts=' + n + ' outside=' + bad.length + ' width=' +
                svg.viewBox.baseVal.width + (bad.length ? '\n' + bad.join('\n') : '');
document.body.appendChild(p);
</script></body></html>
EOF
  } > "$out/$name.measure.html"
  # shellcheck disable=SC2086
  chromium $flags --user-data-dir="$tmp/profile-$name" --virtual-time-budget=5000 \
    --dump-dom "file://$(cd "$out" && pwd)/$name.measure.html" \
    >"$out/$name.measure.dom" 2>"$out/$name.measure.log" ||
    fail "chromium could not measure $name.svg (see $out/$name.measure.log)"
  result=$(sed -n '/<pre id="result">/,/<\/pre>/p' "$out/$name.measure.dom" |
    sed 's/<[^>]*>//g')
  echo "test-browser: $name.svg: $result" | head -5
  case $result in
  *" outside=0 "*) ;;
  *) fail "$name.svg: labels outside the picture" ;;
  esac
  width=${result##*width=}
  [ "${width%%[!0-9]*}" -le 1800 ] || fail "$name.svg is $width px wide"
done

echo "test-browser: ok ($rects tensor rectangles; screenshot $out/page.png)"
