#!/bin/sh
# mkdeb.sh - builds the arenad Debian package from a finished build with
# dpkg-deb: what `make deb` runs.
#
# Usage: deploy/mkdeb.sh BUILD_DIR OUT_DIR
# Prints the path of the .deb it wrote.
#
# The tree is `deploy/install.sh install` with PREFIX=/usr and the units
# in /lib/systemd/system (Debian 12's place), ELF files stripped and man
# pages compressed. Depends comes from dpkg-shlibdeps (the shlibs of
# libuv1, libprotobuf-c1, libsqlite3-0, libsystemd0, libinih1, libc6 as
# the binaries really link them). /etc/arenad/arenad.conf is a conffile.
# The maintainer scripts are deploy/debian/{postinst,prerm,postrm}.
set -eu

[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 64; }
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)

version=$(sed -n 's/^Version: *//p' "$build/arenad-client.pc")
arch=$(dpkg --print-architecture)
work=$(mktemp -d "${TMPDIR:-/tmp}/arenad-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root

DESTDIR=$root PREFIX=/usr SYSCONFDIR=/etc UNITDIR=/lib/systemd/system \
  sh "$src/deploy/install.sh" install "$build"

strip --strip-unneeded --remove-section=.comment --remove-section=.note \
  "$root/usr/sbin/arenad" "$root/usr/bin/arenactl" \
  "$root"/usr/lib/libarenad-client.so.*.*
strip --strip-debug "$root/usr/lib/libarenad-client.a"
gzip -9n "$root"/usr/share/man/man*/*
mkdir -p "$root/usr/share/doc/arenad"
cp "$src/README.md" "$root/usr/share/doc/arenad/README.md"

# dpkg-shlibdeps reads debian/control of the source it thinks it is in.
mkdir -p "$work/src/debian"
printf 'Source: arenad\n\nPackage: arenad\nArchitecture: any\n' \
  > "$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O \
  -e"$root/usr/sbin/arenad" -e"$root/usr/bin/arenactl" \
  -e"$(ls "$root"/usr/lib/libarenad-client.so.*.*)" 2>"$work/shlibdeps.err" |
  sed -n 's/^shlibs:Depends=//p') || {
  cat "$work/shlibdeps.err" >&2
  exit 1
}
[ -n "$depends" ] || { echo "$0: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

mkdir -p "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" \
  -e "s|@DEPENDS@|$depends|" "$src/deploy/debian/control.in" \
  > "$root/DEBIAN/control"
echo /etc/arenad/arenad.conf > "$root/DEBIAN/conffiles"
for s in postinst prerm postrm; do
  install -m 0755 "$src/deploy/debian/$s" "$root/DEBIAN/$s"
done
install -m 0644 "$src/deploy/debian/triggers" "$root/DEBIAN/triggers"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' |
  LC_ALL=C sort | xargs md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/conffiles" "$root/DEBIAN/control"

deb=$out/arenad_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
