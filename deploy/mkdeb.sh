#!/bin/sh
# mkdeb.sh - builds arenad's Debian packages from a finished build with
# dpkg-deb: what `make deb` runs.
#
# Usage: deploy/mkdeb.sh BUILD_DIR OUT_DIR
# Prints the path of each .deb it wrote, one per line.
#
# The files are those of `deploy/install.sh install` with PREFIX=/usr, the
# units in /lib/systemd/system (Debian 12's place) and the library in
# /usr/lib/<multiarch triplet>, ELF files stripped and man pages
# compressed, split as Debian splits a library:
#   arenad                 the daemon, its units, sysusers.d/tmpfiles.d
#                          snippets and configuration (a conffile),
#                          arenactl (which links the library statically)
#                          and the man pages; the maintainer scripts are
#                          deploy/debian/{postinst,prerm,postrm}
#   libarenad-client1      the shared library, with a shlibs file
#   libarenad-client-dev   headers, static library, the .so link and the
#                          pkg-config file
# Each package has /usr/share/doc/<package>/changelog.gz and copyright
# (deploy/debian/copyright, in Debian's machine-readable format).
# Depends comes from dpkg-shlibdeps, i.e. from the shlibs of libuv1,
# libprotobuf-c1, libsqlite3-0, libsystemd0, libinih1 and libc6 as the
# binaries really link them. DEB_MAINTAINER sets the Maintainer field.
set -eu

[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 64; }
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)

version=$(sed -n 's/^Version: *//p' "$build/arenad-client.pc")
arch=$(dpkg --print-architecture)
maintainer=${DEB_MAINTAINER:-arenad maintainers <arenad@localhost>}
work=$(mktemp -d "${TMPDIR:-/tmp}/arenad-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/stage

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=usr/lib/$multiarch
DESTDIR=$stage PREFIX=/usr SYSCONFDIR=/etc UNITDIR=/lib/systemd/system \
  LIBDIR=/$lib sh "$src/deploy/install.sh" install "$build"
soname=$(readlink "$stage/$lib/libarenad-client.so")
realname=$(readlink "$stage/$lib/$soname")
sover=${soname##*.so.}
libpkg=libarenad-client$sover

strip --strip-unneeded --remove-section=.comment --remove-section=.note \
  "$stage/usr/sbin/arenad" "$stage/usr/bin/arenactl" "$stage/$lib/$realname"
strip --strip-debug "$stage/$lib/libarenad-client.a"
gzip -9n "$stage"/usr/share/man/man*/*

# take PACKAGE PATH... moves staged paths into a package's tree.
take() {
  p=$1
  shift
  for f in "$@"; do
    mkdir -p "$(dirname "$work/$p/$f")"
    mv "$stage/$f" "$work/$p/$f"
  done
}
take "$libpkg" "$lib/$realname" "$lib/$soname"
take libarenad-client-dev usr/include/arenad "$lib/libarenad-client.a" \
  "$lib/libarenad-client.so" "$lib/pkgconfig"
take arenad etc lib usr/sbin usr/bin usr/lib/sysusers.d usr/lib/tmpfiles.d \
  usr/share/man
left=$(find "$stage" ! -type d)
[ -z "$left" ] || { echo "$0: files in no package: $left" >&2; exit 1; }

# shlibdeps PACKAGE ELF... prints the shlibs:Depends of those files.
# dpkg-shlibdeps reads debian/control of the source it thinks it is in.
mkdir -p "$work/src/debian"
printf 'Source: arenad\n\nPackage: arenad\nArchitecture: any\n' \
  > "$work/src/debian/control"
shlibdeps() {
  p=$1
  shift
  args=
  for f in "$@"; do args="$args -e$work/$p/$f"; done
  # shellcheck disable=SC2086
  d=$(cd "$work/src" && dpkg-shlibdeps -O $args 2> "$work/shlibdeps.err" |
    sed -n 's/^shlibs:Depends=//p') || { cat "$work/shlibdeps.err" >&2; exit 1; }
  [ -n "$d" ] || { echo "$0: dpkg-shlibdeps found nothing for $p" >&2; exit 1; }
  echo "$d"
}

# control PACKAGE SECTION DEPENDS SUMMARY DESCRIPTION-FILE
control() {
  r=$work/$1
  mkdir -p "$r/DEBIAN" "$r/usr/share/doc/$1"
  gzip -9nc "$src/deploy/debian/changelog" > "$r/usr/share/doc/$1/changelog.gz"
  install -m 0644 "$src/deploy/debian/copyright" "$r/usr/share/doc/$1/copyright"
  size=$(du -sk --exclude=DEBIAN "$r" | cut -f1)
  {
    echo "Package: $1"
    echo "Source: arenad"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $size"
    echo "Depends: $3"
    [ "$1" != "$libpkg" ] || echo "Multi-Arch: same"
    echo "Section: $2"
    echo "Priority: optional"
    echo "Description: $4"
    sed 's/^/ /; s/^ $/ ./' "$5"
  } > "$r/DEBIAN/control"
}

cat > "$work/d.arenad" <<'EOF'
arenad plans the tensor arenas of neural-network interpreters: processes
send the lifetime graph of a model over a Unix socket and receive
verified byte offsets for every intermediate tensor, served from a
sqlite cache that survives restarts.

This package holds the daemon, a hardened systemd service with an
optional socket unit, and the arenactl command-line tool. Processes
that want plans must be in the group "arenad". Nothing is enabled on
installation: systemctl enable --now arenad.socket
EOF
cat > "$work/d.lib" <<'EOF'
libarenad-client asks the arenad daemon for verified arena plans and
plans in the calling process when the daemon cannot be reached.

This package holds the shared library.
EOF
cat > "$work/d.dev" <<'EOF'
libarenad-client asks the arenad daemon for verified arena plans and
plans in the calling process when the daemon cannot be reached.

This package holds the header arenad/arenad_client.h with the headers
it includes, the static library and the pkg-config file arenad-client.
EOF

control arenad admin \
  "$(shlibdeps arenad usr/sbin/arenad usr/bin/arenactl)" \
  "memory-planning daemon for on-device neural-network inference" "$work/d.arenad"
echo /etc/arenad/arenad.conf > "$work/arenad/DEBIAN/conffiles"
for s in postinst prerm postrm; do
  install -m 0755 "$src/deploy/debian/$s" "$work/arenad/DEBIAN/$s"
done

control "$libpkg" libs "$(shlibdeps "$libpkg" "$lib/$realname")" \
  "client library of the arenad memory-planning daemon" "$work/d.lib"
echo "libarenad-client $sover $libpkg (>= $version)" > "$work/$libpkg/DEBIAN/shlibs"
install -m 0644 "$src/deploy/debian/triggers" "$work/$libpkg/DEBIAN/triggers"

control libarenad-client-dev libdevel \
  "$libpkg (= $version), libprotobuf-c-dev" \
  "client library of the arenad memory-planning daemon - development files" \
  "$work/d.dev"

for p in arenad "$libpkg" libarenad-client-dev; do
  r=$work/$p
  (cd "$r" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' |
    LC_ALL=C sort | xargs md5sum) > "$r/DEBIAN/md5sums"
  find "$r/DEBIAN" -type f ! -name postinst ! -name prerm ! -name postrm \
    -exec chmod 0644 {} +
  deb=$out/${p}_${version}_$arch.deb
  dpkg-deb --root-owner-group -Zxz --build "$r" "$deb" > /dev/null
  echo "$deb"
done
