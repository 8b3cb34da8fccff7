#!/bin/sh
# install.sh - installs or removes a built arenad: what `make install`,
# `make uninstall` and `make deb` run.
#
# Usage: deploy/install.sh install|uninstall|list BUILD_DIR
#
# Settings come from the environment (the Makefile passes them):
#   DESTDIR      staging root, prepended to every path (default: empty)
#   PREFIX       /usr/local by default; binaries, library, headers, man
#                pages, units and the sysusers.d/tmpfiles.d snippets go
#                below it
#   SYSCONFDIR   /etc by default; arenad reads /etc/arenad/arenad.conf
#                whatever the prefix, so change this only for a staging tree
#   UNITDIR      systemd units (default PREFIX/lib/systemd/system)
#   LIBDIR       libraries and pkgconfig/ (default PREFIX/lib; Debian's
#                packages use PREFIX/lib/<multiarch triplet>)
#
# The units' ExecStart is rewritten to PREFIX/sbin/arenad. The pkg-config
# file gets prefix=PREFIX and the library directory. An existing
# configuration file that differs from the default is never overwritten,
# into the live system or below a DESTDIR alike: the new default goes
# next to it as arenad.conf.new, and install says so (an unedited one is
# replaced by the new default, and a leftover arenad.conf.new removed). `uninstall` removes
# exactly what `install` put there, the configuration file only when it
# is still the default, and never the plan cache in /var/lib/arenad.
# `list` prints the installed paths, one per line.
set -eu

usage() {
  echo "usage: $0 install|uninstall|list BUILD_DIR" >&2
  exit 64
}
[ $# -eq 2 ] || usage
action=$1
build=$2
src=$(cd "$(dirname "$0")/.." && pwd)

DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
SYSCONFDIR=${SYSCONFDIR:-/etc}
UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
bindir=$PREFIX/bin
sbindir=$PREFIX/sbin
libdir=${LIBDIR:-$PREFIX/lib}
incdir=$PREFIX/include/arenad
pcdir=$libdir/pkgconfig
mandir=$PREFIX/share/man
confdir=$SYSCONFDIR/arenad
sysusersdir=$PREFIX/lib/sysusers.d
tmpfilesdir=$PREFIX/lib/tmpfiles.d

# The shared library: the build names the real file after its soname;
# installed, the real file is soname.MINOR.PATCH of the library version
# (libarenad-client.so.1.1.0 for 0.1.0), and the soname and the
# development name are symlinks to it, as ldconfig expects.
soname=$(readlink "$build/libarenad-client.so" 2>/dev/null || echo libarenad-client.so.1)
version=$(sed -n 's/^Version: *//p' "$build/arenad-client.pc" 2>/dev/null || true)
[ -n "$version" ] || version=0.1.0
realname=$soname.${version#*.}

# Every installed regular file: mode, source, destination (no DESTDIR).
files() {
  cat <<EOF
0755 $build/arenad $sbindir/arenad
0755 $build/arenactl $bindir/arenactl
0644 $build/libarenad-client.a $libdir/libarenad-client.a
0644 $build/$soname $libdir/$realname
0644 $src/client/lib/arenad_client.h $incdir/arenad_client.h
0644 $src/planner/core/planner.h $incdir/planner.h
0644 $src/planner/core/arena_error.h $incdir/arena_error.h
0644 @pc $pcdir/arenad-client.pc
0644 @unit:$src/deploy/arenad.service $UNITDIR/arenad.service
0644 @unit:$src/deploy/arenad.socket $UNITDIR/arenad.socket
0644 $src/deploy/arenad.sysusers $sysusersdir/arenad.conf
0644 $src/deploy/arenad.tmpfiles $tmpfilesdir/arenad.conf
0644 $src/deploy/man/arenad.8 $mandir/man8/arenad.8
0644 $src/deploy/man/arenad.conf.5 $mandir/man5/arenad.conf.5
0644 $src/deploy/man/arenactl.1 $mandir/man1/arenactl.1
EOF
}
links() {
  cat <<EOF
$realname $libdir/$soname
$soname $libdir/libarenad-client.so
EOF
}
conf=$confdir/arenad.conf

do_list() {
  files | while read -r _ _ dst; do echo "$dst"; done
  links | while read -r _ dst; do echo "$dst"; done
  echo "$conf"
}

put() { # mode source destination
  mkdir -p "$(dirname "$3")"
  case $2 in
  @pc)
    case $libdir in
    "$PREFIX"/*) pclib="\${exec_prefix}${libdir#"$PREFIX"}" ;;
    *) pclib=$libdir ;;
    esac
    sed -e "s|^prefix=.*|prefix=$PREFIX|" -e "s|^libdir=.*|libdir=$pclib|" \
      "$build/arenad-client.pc" > "$3.tmp" ;;
  @unit:*)
    sed "s|^ExecStart=/usr/sbin/arenad|ExecStart=$sbindir/arenad|" \
      "${2#@unit:}" > "$3.tmp" ;;
  *)
    cp "$2" "$3.tmp" ;;
  esac
  chmod "$1" "$3.tmp"
  mv -f "$3.tmp" "$3"
}

# Into the live system (no DESTDIR), as root, in a directory the dynamic
# linker searches: refresh its cache so that the new soname is found.
refresh_ld_cache() {
  [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] || return 0
  command -v ldconfig > /dev/null || return 0
  case $libdir in
  /usr/lib | /usr/lib/* | /usr/local/lib | /usr/local/lib/* | /lib | /lib/*) ldconfig ;;
  esac
}

do_install() {
  for f in arenad arenactl libarenad-client.a "$soname" arenad-client.pc; do
    [ -f "$build/$f" ] || { echo "$0: $build/$f is missing; run make first" >&2; exit 1; }
  done
  files | while read -r mode from to; do
    put "$mode" "$from" "$DESTDIR$to"
  done
  links | while read -r target name; do
    ln -sfn "$target" "$DESTDIR$name"
  done
  mkdir -p "$DESTDIR$confdir"
  if [ -e "$DESTDIR$conf" ] && ! cmp -s "$src/deploy/arenad.conf" "$DESTDIR$conf"; then
    put 0644 "$src/deploy/arenad.conf" "$DESTDIR$conf.new"
    echo "install: kept your $DESTDIR$conf; the new default is $DESTDIR$conf.new"
  else
    put 0644 "$src/deploy/arenad.conf" "$DESTDIR$conf"
    rm -f "$DESTDIR$conf.new"
  fi
  refresh_ld_cache
  if [ -z "$DESTDIR" ]; then
    cat <<EOF
install: done. To run arenad as a service:
  systemd-sysusers && systemd-tmpfiles --create
  systemctl daemon-reload && systemctl enable --now arenad.socket
  usermod -aG arenad USER    # each user whose processes ask for plans
EOF
  fi
}

do_uninstall() {
  files | while read -r _ _ to; do rm -f "$DESTDIR$to"; done
  links | while read -r _ name; do rm -f "$DESTDIR$name"; done
  if [ -f "$DESTDIR$conf" ] && cmp -s "$src/deploy/arenad.conf" "$DESTDIR$conf"; then
    rm -f "$DESTDIR$conf"
  elif [ -f "$DESTDIR$conf" ]; then
    echo "uninstall: kept $DESTDIR$conf (changed from the default)"
  fi
  rm -f "$DESTDIR$conf.new"
  # Directories that only we used, when empty.
  for d in "$incdir" "$confdir"; do
    rmdir "$DESTDIR$d" 2>/dev/null || true
  done
  refresh_ld_cache
}

case $action in
install) do_install ;;
uninstall) do_uninstall ;;
list) do_list ;;
*) usage ;;
esac
