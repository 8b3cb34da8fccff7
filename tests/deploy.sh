#!/bin/sh
# deploy.sh - the shell half of the deploy suite (tests/check_deploy_static.c
# runs each step and checks its output).
#
# Usage: tests/deploy.sh STEP BUILD_DIR
#   units     systemd-analyze verify on the units (ExecStart pointed at the
#             built arenad, man pages from a staging install), proof that
#             verify does reject a broken unit, and the sysusers.d and
#             tmpfiles.d snippets applied to a throwaway root
#   security  prints systemd-analyze security's overall exposure line
#   man       every man page renders with groff -ww and man --warnings
#             without a single warning
#   install   installs into a DESTDIR, checks the tree, builds
#             client/examples/plan_example.c with only pkg-config and runs
#             it against the daemon at $ARENAD_SOCKET, then uninstalls
#   deb       builds the .deb and checks its metadata, files and binaries
#   symbols   the shared library exports exactly the functions that
#             client/lib/arenad_client.h declares with ARENAD_CLIENT_API
#   maint     runs the maintainer scripts against stub commands
#   syscalls  every system call arenad makes in a session is allowed by
#             the unit's SystemCallFilter=, and the files it touches fit
#             the unit's file system sandbox
# Environment: SANFLAGS, the sanitizer flags the library was built with
# (a sanitized library needs them at link time too).
# Prints "FAIL: ..." lines and exits 1 on the first failed check.
set -u

step=${1:?step}
build=$(cd "${2:?build dir}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arenad-deploy.XXXXXX")
spid=
# A daemon left running would keep the caller's output pipe open.
trap '[ -z "$spid" ] || kill -KILL "$spid" 2>/dev/null; rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $*"
  exit 1
}
need() {
  command -v "$1" >/dev/null 2>&1 || fail "$1 is not installed (run make deps)"
}

stage() { # PREFIX UNITDIR -> staging tree in $tmp/root
  DESTDIR=$tmp/root PREFIX=$1 UNITDIR=$2 \
    sh "$src/deploy/install.sh" install "$build" > "$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "install.sh install"; }
}

step_units() {
  need systemd-analyze
  need man
  stage /usr /usr/lib/systemd/system
  mkdir -p "$tmp/units"
  sed "s|^ExecStart=/usr/sbin/arenad\$|ExecStart=$build/arenad|" \
    "$src/deploy/arenad.service" > "$tmp/units/arenad.service"
  grep -q "^ExecStart=$build/arenad\$" "$tmp/units/arenad.service" ||
    fail "arenad.service has no ExecStart=/usr/sbin/arenad"
  cp "$src/deploy/arenad.socket" "$tmp/units/"
  out=$(cd "$tmp/units" && MANPATH=$tmp/root/usr/share/man \
    systemd-analyze verify arenad.service arenad.socket 2>&1)
  rc=$?
  [ $rc -eq 0 ] && [ -z "$out" ] || { echo "$out"; fail "verify exit $rc"; }
  echo "verify: clean"
  # The same check must notice a misspelt key and a missing binary.
  sed -e 's/^WatchdogSec=/WatchdogSecs=/' \
    -e "s|^ExecStart=.*|ExecStart=$tmp/no-such-arenad|" \
    "$tmp/units/arenad.service" > "$tmp/units/broken.service"
  out=$(cd "$tmp/units" && MANPATH=$tmp/root/usr/share/man \
    systemd-analyze verify broken.service 2>&1)
  echo "$out" | grep -q "WatchdogSecs" || fail "verify missed a bad key: $out"
  echo "$out" | grep -q "no-such-arenad" || fail "verify missed a bad ExecStart: $out"
  echo "verify: rejects a broken copy"
  for k in Type=notify WatchdogSec= Restart=on-failure StateDirectory=arenad \
    RuntimeDirectory=arenad User=arenad Group=arenad ProtectSystem=strict \
    ProtectHome=yes PrivateTmp=yes PrivateDevices=yes NoNewPrivileges=yes \
    RestrictAddressFamilies=AF_UNIX IPAddressDeny=any \
    SystemCallFilter=@system-service MemoryDenyWriteExecute=yes \
    LockPersonality=yes RestrictRealtime=yes RestrictNamespaces=yes \
    'CapabilityBoundingSet=$' UMask=0007 MemoryMax= TasksMax= \
    Environment=UV_THREADPOOL_SIZE= 'ExecReload=/bin/kill -HUP \$MAINPID'; do
    grep -q "^$k" "$src/deploy/arenad.service" || fail "arenad.service lacks $k"
  done
  for k in ListenStream=/run/arenad/arenad.sock SocketUser=arenad \
    SocketGroup=arenad SocketMode=0660; do
    grep -q "^$k\$" "$src/deploy/arenad.socket" || fail "arenad.socket lacks $k"
  done
  echo "units: ok"

  # The sysusers.d and tmpfiles.d snippets, applied to a throwaway root.
  r=$tmp/sysroot
  mkdir -p "$r/etc"
  systemd-sysusers --root="$r" "$src/deploy/arenad.sysusers" > "$tmp/sysusers.log" 2>&1 ||
    { cat "$tmp/sysusers.log"; fail "systemd-sysusers"; }
  pw=$(grep '^arenad:' "$r/etc/passwd") || fail "sysusers created no user arenad"
  uid=$(echo "$pw" | cut -d: -f3)
  gid=$(echo "$pw" | cut -d: -f4)
  [ "$uid" -lt 1000 ] || fail "arenad is not a system user: $pw"
  echo "$pw" | grep -q ':/var/lib/arenad:/usr/sbin/nologin$' || fail "home or shell: $pw"
  grep -q "^arenad:x:$gid:" "$r/etc/group" || fail "no group arenad"
  if [ "$(id -u)" != 0 ]; then
    echo "*** snippets: tmpfiles.d check SKIPPED: it needs root to chown (CI runs as root) ***"
    echo "snippets: user arenad ($uid:$gid) in a throwaway root"
    return 0
  fi
  systemd-tmpfiles --root="$r" --create "$src/deploy/arenad.tmpfiles" > "$tmp/tmpfiles.log" 2>&1 ||
    { cat "$tmp/tmpfiles.log"; fail "systemd-tmpfiles"; }
  [ "$(stat -c '%a %u %g' "$r/run/arenad")" = "755 $uid $gid" ] ||
    fail "/run/arenad: $(stat -c '%a %u %g' "$r/run/arenad")"
  [ "$(stat -c '%a %u %g' "$r/var/lib/arenad")" = "750 $uid $gid" ] ||
    fail "/var/lib/arenad: $(stat -c '%a %u %g' "$r/var/lib/arenad")"
  echo "snippets: user arenad ($uid:$gid) and its directories in a throwaway root"
}

step_security() {
  need systemd-analyze
  out=$(systemd-analyze security --offline=yes --no-pager \
    "$src/deploy/arenad.service" 2>&1) || { echo "$out"; fail "security"; }
  echo "$out" | grep 'Overall exposure level' || fail "no overall exposure line"
}

step_man() {
  need groff
  need man
  for p in "$src"/deploy/man/*.[1-8]; do
    w=$(groff -man -ww -z "$p" 2>&1)
    [ -z "$w" ] || { echo "$w"; fail "groff warns about $p"; }
    w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
    [ -z "$w" ] || { echo "$w"; fail "man warns about $p"; }
    MANWIDTH=80 man -l "$p" 2>/dev/null | grep -q '^SEE ALSO' ||
      fail "$p has no SEE ALSO section"
    echo "man: $(basename "$p") clean"
  done
  # Every option of arenad --help is documented.
  for o in $("$build/arenad" --help | grep -o -- '--[a-z-]*' | sort -u); do
    grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" "$src/deploy/man/arenad.8" ||
      fail "arenad.8 does not mention $o"
  done
  # Every arenactl command is documented, in the manual page and with a
  # section of its own in docs/arenactl.md, and so is every option its
  # --help lists.
  for c in $("$build/arenactl" --help | sed -n '/^Commands:/,/^$/p' |
    awk 'NF > 1 { print $1 }'); do
    grep -q "^\.SS \"\{0,1\}$c\b" "$src/deploy/man/arenactl.1" ||
      fail "arenactl.1 does not document '$c'"
    grep -Eq "^#{2,3} arenactl .*\b$c\b" "$src/docs/arenactl.md" ||
      fail "docs/arenactl.md has no section for '$c'"
    for o in $("$build/arenactl" "$c" --help | grep -o -- '--[a-z-]*' | sort -u); do
      grep -q -- "$o" "$src/docs/arenactl.md" ||
        fail "docs/arenactl.md does not mention $c $o"
      grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" "$src/deploy/man/arenactl.1" ||
        fail "arenactl.1 does not mention $c $o"
    done
  done
  # Every key of the default configuration is documented.
  for k in $(sed -n 's/^#\([a-z_]*\) = .*/\1/p' "$src/deploy/arenad.conf"); do
    grep -q "^\.BR $k " "$src/deploy/man/arenad.conf.5" ||
      fail "arenad.conf.5 does not document $k"
  done
  echo "man: ok"
}

step_install() {
  need pkg-config
  dest=$tmp/root
  stage /usr/local /usr/local/lib/systemd/system
  for f in usr/local/sbin/arenad usr/local/bin/arenactl \
    usr/local/lib/libarenad-client.a usr/local/lib/libarenad-client.so.1.1.0 \
    usr/local/include/arenad/arenad_client.h usr/local/include/arenad/planner.h \
    usr/local/include/arenad/arena_error.h \
    usr/local/lib/pkgconfig/arenad-client.pc \
    usr/local/lib/systemd/system/arenad.service \
    usr/local/lib/systemd/system/arenad.socket \
    usr/local/lib/sysusers.d/arenad.conf usr/local/lib/tmpfiles.d/arenad.conf \
    usr/local/share/man/man8/arenad.8 usr/local/share/man/man5/arenad.conf.5 \
    usr/local/share/man/man1/arenactl.1 etc/arenad/arenad.conf; do
    [ -f "$dest/$f" ] || fail "missing $f"
  done
  [ -x "$dest/usr/local/sbin/arenad" ] || fail "arenad not executable"
  [ "$(readlink "$dest/usr/local/lib/libarenad-client.so.1")" = libarenad-client.so.1.1.0 ] ||
    fail "bad soname link"
  [ "$(readlink "$dest/usr/local/lib/libarenad-client.so")" = libarenad-client.so.1 ] ||
    fail "bad development link"
  readelf -d "$dest/usr/local/lib/libarenad-client.so.1.1.0" |
    grep -q 'SONAME.*\[libarenad-client.so.1\]' || fail "library soname"
  grep -q '^ExecStart=/usr/local/sbin/arenad$' \
    "$dest/usr/local/lib/systemd/system/arenad.service" || fail "ExecStart not rewritten"
  grep -q '^prefix=/usr/local$' "$dest/usr/local/lib/pkgconfig/arenad-client.pc" ||
    fail "pkg-config prefix"
  cmp -s "$src/deploy/arenad.conf" "$dest/etc/arenad/arenad.conf" || fail "config copy"
  # The headers are exactly the three the library's API needs.
  [ "$(ls "$dest/usr/local/include/arenad" | tr '\n' ' ')" = "arena_error.h arenad_client.h planner.h " ] ||
    fail "headers in include/arenad: $(ls "$dest/usr/local/include/arenad")"
  [ -z "$(find "$dest/usr/local/include" -maxdepth 1 -type f)" ] ||
    fail "headers directly in include/: $(find "$dest/usr/local/include" -maxdepth 1 -type f)"
  echo "install: tree ok"

  # A second install into the same DESTDIR keeps an edited configuration
  # and puts the new default beside it; an unedited one is simply
  # replaced, with no arenad.conf.new.
  stage /usr/local /usr/local/lib/systemd/system
  [ -e "$dest/etc/arenad/arenad.conf.new" ] && fail "arenad.conf.new for an unedited file"
  printf '[daemon]\nworkers = 1\n' > "$dest/etc/arenad/arenad.conf"
  stage /usr/local /usr/local/lib/systemd/system
  grep -qx 'workers = 1' "$dest/etc/arenad/arenad.conf" ||
    fail "a second DESTDIR install overwrote the edited configuration"
  cmp -s "$src/deploy/arenad.conf" "$dest/etc/arenad/arenad.conf.new" ||
    fail "no arenad.conf.new beside the edited configuration"
  grep -q "kept your $dest/etc/arenad/arenad.conf; the new default is" "$tmp/install.log" ||
    fail "the DESTDIR install did not say it kept the file"
  cp "$src/deploy/arenad.conf" "$dest/etc/arenad/arenad.conf"
  stage /usr/local /usr/local/lib/systemd/system
  [ -e "$dest/etc/arenad/arenad.conf.new" ] && fail "arenad.conf.new left beside an unedited file"
  echo "install: a second DESTDIR install keeps an edited configuration"

  # A client build that sees only the installed tree: the .pc says
  # prefix=/usr/local, as installed for real, and PKG_CONFIG_SYSROOT_DIR
  # puts the DESTDIR in front of its -I and -L paths (the sources'
  # client/ and planner/ are on no include path).
  export PKG_CONFIG_PATH="$dest/usr/local/lib/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$dest"
  pc=pkg-config
  $pc --exists arenad-client || fail "pkg-config cannot find arenad-client"
  [ "$($pc --modversion arenad-client)" = "$(sed -n 's/^Version: *//p' "$build/arenad-client.pc")" ] ||
    fail "pkg-config version"
  cflags=$($pc --cflags arenad-client)
  libs=$($pc --libs arenad-client)
  echo "pkg-config: $cflags $libs" | sed "s|$dest|DESTDIR|g"
  # Programs name the headers <arenad/...>: their generic names (planner.h)
  # stay off the include path, so they cannot shadow a program's own.
  case " $cflags " in *" -I$dest/usr/local/include "*) ;; *) fail "pkg-config --cflags: $cflags" ;; esac
  case $cflags in *include/arenad*) fail "pkg-config --cflags names include/arenad: $cflags" ;; esac
  # shellcheck disable=SC2086
  echo '#include <arenad/arenad_client.h>' | ${CC:-cc} -E $cflags -x c - > /dev/null 2>&1 ||
    fail "<arenad/arenad_client.h> not found with the pkg-config flags"
  # shellcheck disable=SC2086
  echo '#include <planner.h>' | ${CC:-cc} -E $cflags -x c - > /dev/null 2>&1 &&
    fail "<planner.h> is on the include path"
  echo "headers: <arenad/arenad_client.h>, nothing else on the include path"
  cp "$src/client/examples/plan_example.c" "$tmp/plan_example.c"
  # shellcheck disable=SC2086
  ${CC:-cc} -std=c11 -Wall -Wextra -Werror ${SANFLAGS:-} $cflags \
    -o "$tmp/plan_example" "$tmp/plan_example.c" $libs ||
    fail "the example does not build against the installed library"
  readelf -d "$tmp/plan_example" | grep -q 'NEEDED.*\[libarenad-client.so.1\]' ||
    fail "the example is not linked to the shared library"
  export LD_LIBRARY_PATH="$dest/usr/local/lib"
  [ -n "${ARENAD_SOCKET:-}" ] || fail "ARENAD_SOCKET is not set"
  out=$("$tmp/plan_example" 2>&1) || { echo "$out"; fail "plan_example exit"; }
  echo "$out" | grep -q '^source: daemon$' || { echo "$out"; fail "first run not planned by the daemon"; }
  out=$("$tmp/plan_example" 2>&1) || { echo "$out"; fail "plan_example exit"; }
  echo "$out" | grep -q '^source: daemon cache$' || { echo "$out"; fail "second run not from the cache"; }
  echo "example: daemon, then daemon cache"
  out=$("$tmp/plan_example" "$tmp/no-daemon.sock" 2>&1) || fail "fallback exit"
  echo "$out" | grep -q '^source: planned locally$' || fail "no local fallback"
  echo "example: local fallback without a daemon"
  unset LD_LIBRARY_PATH PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

  DESTDIR=$dest PREFIX=/usr/local UNITDIR=/usr/local/lib/systemd/system \
    sh "$src/deploy/install.sh" uninstall "$build" > "$tmp/uninstall.log" 2>&1 ||
    fail "uninstall"
  left=$(find "$dest" ! -type d)
  [ -z "$left" ] || fail "uninstall left: $left"
  echo "uninstall: nothing left"

  # Without DESTDIR (a live install, here into a scratch prefix and
  # configuration directory) an edited configuration survives a second
  # install and the uninstall.
  live() {
    PREFIX=$tmp/live SYSCONFDIR=$tmp/etc sh "$src/deploy/install.sh" "$1" "$build" \
      > "$tmp/live.log" 2>&1 || { cat "$tmp/live.log"; fail "live $1"; }
  }
  live install
  conf=$tmp/etc/arenad/arenad.conf
  cmp -s "$src/deploy/arenad.conf" "$conf" || fail "live install: no configuration"
  printf '[daemon]\nworkers = 1\n' > "$conf"
  live install
  grep -q '^workers = 1$' "$conf" || fail "a second install overwrote the configuration"
  cmp -s "$src/deploy/arenad.conf" "$conf.new" || fail "no arenad.conf.new"
  grep -q "kept your" "$tmp/live.log" || fail "the install did not say it kept the file"
  live uninstall
  [ -f "$conf" ] || fail "uninstall removed an edited configuration"
  left=$(find "$tmp/live" ! -type d)
  [ -z "$left" ] || fail "live uninstall left: $left"
  echo "install: an edited configuration is kept"
}

step_deb() {
  need dpkg-deb
  need dpkg-shlibdeps
  sh "$src/deploy/mkdeb.sh" "$build" "$tmp/out" > "$tmp/debs" || fail "mkdeb.sh"
  ver=$(sed -n 's/^Version: *//p' "$build/arenad-client.pc")
  arch=$(dpkg --print-architecture)
  ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
  d=$tmp/out/arenad_${ver}_$arch.deb
  l=$tmp/out/libarenad-client1_${ver}_$arch.deb
  v=$tmp/out/libarenad-client-dev_${ver}_$arch.deb
  [ "$(wc -l < "$tmp/debs")" -eq 3 ] && [ -f "$d" ] && [ -f "$l" ] && [ -f "$v" ] ||
    fail "expected 3 packages, got: $(cat "$tmp/debs")"
  echo "deb: $(basename "$d") $(basename "$l") $(basename "$v")"
  for p in "$d" "$l" "$v"; do
    [ "$(dpkg-deb -f "$p" Version)" = "$ver" ] || fail "$p: Version"
    [ "$(dpkg-deb -f "$p" Architecture)" = "$arch" ] || fail "$p: Architecture"
    dpkg-deb -c "$p" | awk '{ print $2 }' | grep -qv '^root/root$' &&
      fail "$p: files not owned by root"
    dpkg-deb -c "$p" | grep -q "/usr/share/doc/$(dpkg-deb -f "$p" Package)/changelog.gz" ||
      fail "$p: no changelog"
    pkg=$(dpkg-deb -f "$p" Package)
    dpkg-deb --fsys-tarfile "$p" | tar -xO "./usr/share/doc/$pkg/copyright" \
      > "$tmp/copyright.$pkg" 2>/dev/null || fail "$p: no /usr/share/doc/$pkg/copyright"
    cmp -s "$src/deploy/debian/copyright" "$tmp/copyright.$pkg" ||
      fail "$p: copyright differs from deploy/debian/copyright"
  done
  # The copyright file in Debian's machine-readable format (1.0): the
  # Format line, a Files: * stanza, and a License paragraph with text for
  # every license a Files stanza names.
  c=$src/deploy/debian/copyright
  head -1 "$c" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
    fail "copyright: no Format line"
  grep -qx 'Files: \*' "$c" || fail "copyright: no Files: * stanza"
  awk '
    /^Files:/ { files = 1 }
    /^$/ { files = 0 }
    /^License:/ {
      name = $2
      if (files) used[name] = 1
      else { getline; if ($0 ~ /^ /) text[name] = 1 }
    }
    END { for (n in used) if (!(n in text)) { print n; bad = 1 } exit bad }
  ' "$c" > "$tmp/licenses" || fail "copyright: no license text for $(cat "$tmp/licenses")"
  grep -q '^Copyright: .*The arenad Authors$' "$c" || fail "copyright: no line for arenad"
  # LICENSE: arenad's copyright line, then the license text exactly as
  # Debian ships it (base-files).
  grep -q '^Copyright .* The arenad Authors$' "$src/LICENSE" || fail "LICENSE: no copyright line"
  tail -n +8 "$src/LICENSE" | cmp -s /usr/share/common-licenses/Apache-2.0 - ||
    fail "LICENSE does not hold the full Apache License 2.0 after its header"
  echo "deb: copyright in every package"

  # arenad: the daemon's own shared libraries, its conffile and scripts.
  dep=$(dpkg-deb -f "$d" Depends)
  for x in libc6 libuv1 libprotobuf-c1 libsqlite3-0 libsystemd0 libinih1; do
    echo "$dep" | grep -q "\b$x\b" || fail "arenad Depends lacks $x: $dep"
  done
  echo "$dep" | grep -q libarenad-client && fail "arenad depends on the client library: $dep"
  echo "arenad Depends: $dep"
  info=$(dpkg-deb -I "$d")
  for x in postinst prerm postrm conffiles md5sums; do
    echo "$info" | grep -q " $x " || fail "arenad control archive lacks $x"
  done
  dpkg-deb -e "$d" "$tmp/c.arenad" || fail "dpkg-deb -e"
  grep -qx /etc/arenad/arenad.conf "$tmp/c.arenad/conffiles" || fail "conffiles"
  list=$(dpkg-deb -c "$d")
  for f in ./usr/sbin/arenad ./usr/bin/arenactl ./lib/systemd/system/arenad.service \
    ./lib/systemd/system/arenad.socket ./usr/lib/sysusers.d/arenad.conf \
    ./usr/lib/tmpfiles.d/arenad.conf ./usr/share/man/man8/arenad.8.gz \
    ./usr/share/man/man5/arenad.conf.5.gz ./usr/share/man/man1/arenactl.1.gz \
    ./etc/arenad/arenad.conf; do
    echo "$list" | grep -q " $f\$" || fail "arenad lacks $f"
  done

  # libarenad-client1: the shared library, its shlibs and ldconfig trigger.
  dep=$(dpkg-deb -f "$l" Depends)
  echo "$dep" | grep -q '\blibprotobuf-c1\b' || fail "library Depends: $dep"
  echo "libarenad-client1 Depends: $dep"
  dpkg-deb -e "$l" "$tmp/c.lib" || fail "dpkg-deb -e"
  grep -qx "libarenad-client 1 libarenad-client1 (>= $ver)" "$tmp/c.lib/shlibs" || fail "shlibs"
  grep -q ldconfig "$tmp/c.lib/triggers" || fail "triggers"
  dpkg-deb -c "$l" | grep -q " ./usr/lib/$ma/libarenad-client.so.1 -> libarenad-client.so.1.1.0\$" ||
    fail "library package lacks the soname link"

  # libarenad-client-dev: exact library version and protobuf-c's .pc.
  dep=$(dpkg-deb -f "$v" Depends)
  echo "$dep" | grep -q "libarenad-client1 (= $ver)" || fail "dev Depends: $dep"
  echo "$dep" | grep -q 'libprotobuf-c-dev' || fail "dev Depends lacks libprotobuf-c-dev: $dep"
  for h in arenad_client.h planner.h arena_error.h; do
    dpkg-deb -c "$v" | grep -q " ./usr/include/arenad/$h\$" || fail "dev package lacks usr/include/arenad/$h"
  done
  echo "libarenad-client-dev Depends: $dep"
  echo "deb: metadata ok"

  # Unpacked into a throwaway root: checksums match, the binaries run and
  # agree on paths, and a client builds from the -dev package alone.
  x=$tmp/x
  for p in "$d" "$l" "$v"; do
    rm -rf "$tmp/c"
    dpkg-deb -x "$p" "$x" && dpkg-deb -e "$p" "$tmp/c" || fail "dpkg-deb -x/-e $p"
    (cd "$x" && md5sum --quiet -c "$tmp/c/md5sums") || fail "$p: md5sums do not match"
  done
  "$x/usr/sbin/arenad" --version | grep -q "^arenad $ver\$" || fail "unpacked arenad"
  "$x/usr/sbin/arenad" --config "$x/etc/arenad/arenad.conf" --check-config |
    grep -q '^database = /var/lib/arenad/cache.db$' || fail "unpacked config"
  grep -q '^ExecStart=/usr/sbin/arenad$' "$x/lib/systemd/system/arenad.service" ||
    fail "ExecStart in the package"
  "$x/usr/bin/arenactl" --version > /dev/null || fail "unpacked arenactl"
  cp "$src/client/examples/plan_example.c" "$tmp/plan_example.c"
  pc() {
    PKG_CONFIG_PATH=$x/usr/lib/$ma/pkgconfig PKG_CONFIG_SYSROOT_DIR=$x \
      pkg-config "$@" arenad-client
  }
  # shellcheck disable=SC2046,SC2086
  ${CC:-cc} -std=c11 -Wall -Wextra -Werror ${SANFLAGS:-} $(pc --cflags) \
    -o "$tmp/plan_example" "$tmp/plan_example.c" $(pc --libs) ||
    fail "a client does not build from -dev"
  LD_LIBRARY_PATH=$x/usr/lib/$ma "$tmp/plan_example" "$tmp/no-daemon.sock" |
    grep -q '^source: planned locally$' || fail "the packaged library does not run"
  echo "deb: unpacked binaries run, a client builds from the -dev package"
}

# The dynamic symbols libarenad-client.so defines are exactly the
# functions arenad_client.h marks ARENAD_CLIENT_API, and the header
# declares no function without the mark. Names that start with "__" are
# left out: sanitizer builds add such reserved names of their own, which
# no program can name in C.
step_symbols() {
  need nm
  h=$src/client/lib/arenad_client.h
  lib=$build/$(readlink "$build/libarenad-client.so")
  [ -f "$lib" ] || fail "no shared library in $build"
  sed -n 's/^ARENAD_CLIENT_API .*[ *]\(arenad_client_[a-z0-9_]*\)(.*/\1/p' "$h" |
    sort > "$tmp/declared"
  [ "$(wc -l < "$tmp/declared")" -ge 8 ] || fail "found no ARENAD_CLIENT_API functions in $h"
  unmarked=$(grep -E '^[a-z].*[ *]arenad_client_[a-z0-9_]*\(' "$h" | grep -v '^ARENAD_CLIENT_API ')
  [ -z "$unmarked" ] || fail "declared without ARENAD_CLIENT_API: $unmarked"
  nm -D --defined-only "$lib" | awk '{ print $3 }' | grep -v '^__' | sort > "$tmp/exported"
  if ! cmp -s "$tmp/declared" "$tmp/exported"; then
    diff "$tmp/declared" "$tmp/exported" | sed 's/^/  /'
    fail "exported symbols (>) differ from arenad_client.h (<)"
  fi
  echo "symbols: $(wc -l < "$tmp/exported") exported, each an ARENAD_CLIENT_API function of arenad_client.h"
}

# The syscalls of systemd filter groups, recursively (systemd-analyze
# lists nested @groups by name), and of plain system call names as given.
expand_filter() {
  for g in "$@"; do
    case $g in @*) ;; *) echo "$g"; continue ;; esac
    systemd-analyze syscall-filter "$g" | sed -n '2,$p' | grep -v '^ *#' |
      awk 'NF { print $1 }' | while read -r n; do
        case $n in @*) expand_filter "$n" ;; *) echo "$n" ;; esac
      done
  done
}

# Runs arenad under strace, as an unprivileged user like the unit's
# User=arenad when this runs as root, through a session that touches
# every path (accept, plan, cache hit, sqlite writes, list, evict, stats,
# SIGHUP, drain), and checks every system call it made against the
# unit's own SystemCallFilter= lines.
step_syscalls() {
  need strace
  need systemd-analyze
  unit=$src/deploy/arenad.service
  # systemd reads the SystemCallFilter= lines in order: the first, an
  # allow-list, sets the list; a later allow line adds to it, a "~" line
  # takes from it. The list that results is what the daemon may call.
  sed -n 's/^SystemCallFilter=//p' "$unit" > "$tmp/filters"
  allow=$(head -n 1 "$tmp/filters")
  case $allow in "" | "~"*) fail "the unit's first SystemCallFilter= must be an allow-list" ;; esac
  : > "$tmp/allowed"
  while IFS= read -r line; do
    case $line in
    "~"*)
      # shellcheck disable=SC2086
      expand_filter ${line#\~} | sort -u > "$tmp/taken"
      comm -23 "$tmp/allowed" "$tmp/taken" > "$tmp/next" ;;
    *)
      # shellcheck disable=SC2086
      { cat "$tmp/allowed"; expand_filter $line; } | sort -u > "$tmp/next" ;;
    esac
    mv "$tmp/next" "$tmp/allowed"
  done < "$tmp/filters"
  allow=$(tr '\n' ' ' < "$tmp/filters")
  [ "$(wc -l < "$tmp/allowed")" -gt 100 ] || fail "could not expand $allow"
  d=$tmp/sc
  mkdir -p "$d"
  cp "$build/arenad" "$d/arenad"
  printf '[daemon]\nsocket = %s/s.sock\ndatabase = %s/c.db\n' "$d" "$d" > "$d/c.conf"
  as=
  if [ "$(id -u)" = 0 ]; then
    chmod 0755 "$tmp" "$d"
    chown 61234:61234 "$d"
    as="setpriv --reuid=61234 --regid=61234 --clear-groups --"
  else
    echo "syscalls: not root, so the daemon runs as $(id -un), not as a system user"
  fi
  # LeakSanitizer cannot run under a tracer; the leak checks run elsewhere.
  # ThreadSanitizer's runtime creates a scratch file in $TMPDIR at start
  # (tsan.rodata.PID): under SANITIZE=thread it goes to the daemon's own
  # directory, so that the runtime's file is not taken for arenad's.
  tsan_env=
  case ${SANFLAGS:-} in *thread*) tsan_env="TMPDIR=$d" ;; esac
  # shellcheck disable=SC2086
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    $as env $tsan_env strace -f -qq -s 512 -o "$d/trace" "$d/arenad" \
    --config "$d/c.conf" > "$d/log" 2>&1 &
  spid=$!
  ctl() { "$build/arenactl" -s "$d/s.sock" "$@" > /dev/null 2>&1; }
  i=0
  until ctl ping; do
    i=$((i + 1))
    kill -0 $spid 2>/dev/null && [ $i -lt 200 ] ||
      { cat "$d/log"; fail "arenad did not start under strace (is ptrace allowed here?)"; }
    sleep 0.05
  done
  model=$src/tests/data/models/person_detect.csv
  ctl plan --no-fallback "$model" || fail "plan"
  ctl plan --no-fallback "$model" || fail "cached plan"
  ctl plan --no-fallback --algo exact --align 16 "$model" || fail "exact plan"
  ctl stats || fail "stats"
  ctl status || fail "status"
  ctl ls || fail "ls"
  ctl evict --all || fail "evict"
  apid=$(sed -n '1s/^\([0-9]*\) .*/\1/p' "$d/trace")
  [ -n "$apid" ] || fail "no trace"
  kill -HUP "$apid"
  ctl ping || fail "ping after SIGHUP"
  kill -TERM "$apid"
  i=0
  while kill -0 $spid 2>/dev/null && [ $i -lt 600 ]; do
    i=$((i + 1))
    sleep 0.05
  done
  kill -0 $spid 2>/dev/null && fail "arenad did not stop within 30 s of SIGTERM"
  wait $spid
  rc=$?
  spid=
  [ $rc -eq 0 ] || { cat "$d/log"; fail "arenad exit $rc"; }
  grep -q 'configuration reloaded' "$d/log" || fail "SIGHUP not handled"
  sed -n 's/^[0-9][0-9]* *\([a-z_0-9]*\)(.*/\1/p' "$d/trace" | sort -u > "$tmp/used"
  for c in accept4 epoll_wait pwrite64 fdatasync rt_sigreturn; do
    grep -qx "$c" "$tmp/used" || fail "the session never made $c: the trace is incomplete"
  done
  bad=$(comm -23 "$tmp/used" "$tmp/allowed" | tr '\n' ' ')
  [ -z "$bad" ] || fail "not allowed by the lines SystemCallFilter=$allow: $bad"
  echo "syscalls: $(wc -l < "$tmp/used") distinct system calls, all allowed by the unit's filter"

  # The files it touched fit the sandbox: it modifies nothing outside its
  # state and runtime directories (here both are $d; ProtectSystem=strict
  # makes everything else read-only), opens only the devices
  # PrivateDevices= leaves, and reads nothing that ProtectHome=,
  # ProcSubset=pid or ProtectKernelTunables= hide.
  grep -E '^[0-9]+ +(open|openat|creat|mkdir|mkdirat|unlink|unlinkat|rename|renameat|renameat2|link|linkat|symlink|symlinkat|chmod|fchmodat|chown|lchown|fchownat|truncate|bind|mknod|mknodat)\(' \
    "$d/trace" > "$tmp/fs" || fail "no file system calls in the trace"
  writes=0
  while IFS= read -r line; do
    case $line in
    *" open("* | *" openat("*)
      echo "$line" | grep -Eq 'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC' || continue ;;
    esac
    case $line in *"= -1 EEXIST"*) continue ;; esac # an existing ancestor
    writes=$((writes + 1))
    for p in $(echo "$line" | grep -o '"[^"]*"' | tr -d '"'); do
      case $p in "$d" | "$d"/*) ;; *) fail "writes outside its directories: $line" ;; esac
    done
  done < "$tmp/fs"
  [ $writes -gt 3 ] || fail "only $writes writes traced"
  grep -o '"/[^"]*"' "$d/trace" | tr -d '"' | sort -u > "$tmp/paths"
  bad=$(grep -E '^/(home|root|run/user|sys|proc/sys)(/|$)' "$tmp/paths" | tr '\n' ' ')
  [ -z "$bad" ] || fail "touches paths the sandbox hides: $bad"
  bad=$(grep -E '^/dev/' "$tmp/paths" | grep -Ev '^/dev/(null|zero|full|random|urandom)$' | tr '\n' ' ')
  [ -z "$bad" ] || fail "opens devices PrivateDevices= removes: $bad"
  echo "syscalls: $writes writes, all in its own directories; no hidden paths or devices"
}

# Each maintainer script runs with PATH holding only stubs that log their
# arguments, so nothing touches this machine.
stubs() { # names...
  mkdir -p "$tmp/stub"
  for n in "$@"; do
    printf '#!/bin/sh\necho "%s $*" >> "%s"\n' "$n" "$tmp/calls" > "$tmp/stub/$n"
    chmod +x "$tmp/stub/$n"
  done
  printf '#!/bin/sh\necho "getent $*" >> "%s"\nexit 2\n' "$tmp/calls" > "$tmp/stub/getent"
  chmod +x "$tmp/stub/getent"
}
maint() { # script args...
  s=$1; shift
  : > "$tmp/calls"
  PATH=$tmp/stub /bin/sh "$src/deploy/debian/$s" "$@" || fail "$s $* exit"
}

step_maint() {
  for s in postinst prerm postrm; do
    /bin/sh -n "$src/deploy/debian/$s" || fail "$s syntax"
  done
  stubs systemd-sysusers systemd-tmpfiles systemctl groupadd useradd mkdir chown chmod rm
  maint postinst configure
  grep -qx "systemd-sysusers /usr/lib/sysusers.d/arenad.conf" "$tmp/calls" ||
    fail "postinst does not run systemd-sysusers: $(cat "$tmp/calls")"
  grep -qx "systemd-tmpfiles --create /usr/lib/tmpfiles.d/arenad.conf" "$tmp/calls" ||
    fail "postinst does not run systemd-tmpfiles"
  grep -Eq "enable|start" "$tmp/calls" && fail "postinst enables or starts: $(cat "$tmp/calls")"
  echo "postinst: sysusers and tmpfiles, nothing enabled"
  # Without systemd's tools: groupadd/useradd and plain directories.
  rm -f "$tmp/stub/systemd-sysusers" "$tmp/stub/systemd-tmpfiles"
  maint postinst configure
  grep -q "^groupadd --system arenad$" "$tmp/calls" || fail "no groupadd fallback"
  grep -q "^useradd --system --gid arenad .* arenad$" "$tmp/calls" || fail "no useradd fallback"
  grep -q "^chown arenad:arenad /var/lib/arenad$" "$tmp/calls" || fail "no state dir fallback"
  echo "postinst: useradd fallback"
  maint postrm remove
  grep -q "^rm " "$tmp/calls" && fail "postrm remove deletes: $(cat "$tmp/calls")"
  maint postrm purge
  grep -q "^rm -rf /var/lib/arenad" "$tmp/calls" || fail "postrm purge keeps the cache"
  echo "postrm: remove keeps the cache, purge deletes it"
}

case $step in
units) step_units ;;
security) step_security ;;
man) step_man ;;
install) step_install ;;
deb) step_deb ;;
maint) step_maint ;;
syscalls) step_syscalls ;;
symbols) step_symbols ;;
*) fail "unknown step $step" ;;
esac
echo "step $step: ok"
