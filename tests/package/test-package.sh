#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The meson test of suite "package": the Debian package of debian/, as a fleet builds and installs it.
#
#   1. scripts/package builds it into BUILD_DIR/package (the package build runs the unit and
#      fixture suites) and fails on any lintian error or warning;
#   2. its files are the ones `meson install` puts in a DESTDIR with --prefix=/usr, whatever they
#      are: less /usr/share/doc/peltd/ and the lintian overrides (the packaging's own), manual pages
#      uncompressed, /lib/ read as /usr/lib/ (merged /usr: one directory); with the same contents
#      (binaries aside: the package's are stripped), and every file in /etc a conffile;
#   3. tests/vm/guest-package.sh installs it in the Debian 12 guest and takes it through an
#      operator's day, install to purge.
#
#   test-package.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$(readlink -f "$1")
build=$(readlink -f "$2")
pkgdir=$build/package
tmp=$(mktemp -d /tmp/peltd-test-package.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
failures=0

pass() { echo "ok: $*"; }
fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}
elapsed() { echo $(($(date +%s) - $1)); }

# ---- 1. Build and lintian ----------------------------------------------------------------------
start=$(date +%s)
if ! "$src/scripts/package" "$pkgdir" >/dev/null 2>"$tmp/package.log"; then
        cat "$tmp/package.log"
        echo "FAIL: scripts/package"
        exit 1
fi
sed 's/^/    /' "$tmp/package.log"
version=$(cd "$src" && dpkg-parsechangelog -S Version)
deb=$pkgdir/peltd_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb
[[ -f $deb ]] && pass "scripts/package: ${deb##*/} built, lintian clean, in $(elapsed "$start") s" ||
        { echo "FAIL: scripts/package made no $deb"; exit 1; }

# ---- 2. The package's files against meson install's ----------------------------------------------
start=$(date +%s)
meson setup --prefix=/usr "$tmp/build" "$src" >"$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; echo "FAIL: meson setup"; exit 1; }
# Only what meson installs is built; tests and benchmarks are not.
mapfile -t targets < <(meson introspect --targets "$tmp/build" |
        jq -r '.[] | select(.installed) | .filename[]' | sed "s|^$tmp/build/||")
ninja -C "$tmp/build" "${targets[@]}" >"$tmp/ninja.log" 2>&1 || { cat "$tmp/ninja.log"; echo "FAIL: ninja"; exit 1; }
meson install -C "$tmp/build" --no-rebuild --destdir "$tmp/destdir" >"$tmp/install.log" 2>&1 ||
        { cat "$tmp/install.log"; echo "FAIL: meson install"; exit 1; }
(cd "$tmp/destdir" && find . ! -type d | sed 's|^\.||' | sort) >"$tmp/meson.list"

mkdir "$tmp/deb"
dpkg-deb -x "$deb" "$tmp/deb"
# path in the package -> path as meson installs it (or nothing: the packaging's own files)
as_meson() {
        sed -e '\|^/usr/share/doc/peltd/|d' -e '\|^/usr/share/lintian/overrides/peltd$|d' \
                -e 's#^/\(lib\|bin\|sbin\)/#/usr/\1/#' -e '\|^/usr/share/man/|s|\.gz$||'
}
(cd "$tmp/deb" && find . ! -type d | sed 's|^\.||' | sort) >"$tmp/deb.raw"
as_meson <"$tmp/deb.raw" | sort >"$tmp/deb.list"
echo "    the package's files:"
sed 's/^/      /' "$tmp/deb.raw"
if diff -u --label "meson install --prefix=/usr" --label "${deb##*/}" "$tmp/meson.list" "$tmp/deb.list" >"$tmp/list.diff" &&
        grep -qx /usr/sbin/peltd "$tmp/deb.list"; then
        pass "the package holds what meson install does ($(wc -l <"$tmp/meson.list") files), less /usr/share/doc/peltd/ and its lintian overrides"
else
        fail "the package's files differ from meson install's:"
        cat "$tmp/list.diff"
fi
if grep -Eqx '/usr/share/doc/peltd/README\.md(\.gz)?' "$tmp/deb.raw" && grep -Eqx '/usr/share/doc/peltd/SECURITY\.md(\.gz)?' "$tmp/deb.raw"; then
        pass "the operator's guide shipped: /usr/share/doc/peltd/README.md, SECURITY.md"
else
        fail "the package lacks the operator's guide (README.md, SECURITY.md in /usr/share/doc/peltd/)"
fi

different=()
while IFS= read -r f; do
        m=$tmp/destdir$(as_meson <<<"$f")
        p=$tmp/deb$f
        [[ -f $m ]] || continue
        if [[ $f == /usr/share/man/*.gz ]]; then
                zcat "$p" | cmp -s - "$m" || different+=("$f")
        elif [[ $(head -c4 "$m") != $'\x7fELF' ]]; then
                cmp -s "$p" "$m" || different+=("$f")
        fi
done <"$tmp/deb.raw"
((${#different[@]} == 0)) && pass "every file but the binaries is byte for byte what meson installs" ||
        fail "differ from meson install's: ${different[*]}"

conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles 2>/dev/null | sort)
etc=$(grep '^/etc/' "$tmp/deb.raw" | sort)
[[ -n $etc && $conffiles == "$etc" ]] && pass "every file in /etc is a conffile: $(echo $conffiles)" ||
        fail "conffiles \"$(echo $conffiles)\", files in /etc \"$(echo $etc)\""
echo "    file lists compared in $(elapsed "$start") s"

# ---- 3. In the guest ---------------------------------------------------------------------------
start=$(date +%s)
"$src/tests/vm/run.sh" --smp 2 --timeout 420 --share "$src" --share "$pkgdir" \
        "$src/tests/vm/guest-package.sh" "$src" "$deb" >"$tmp/guest.log" 2>&1
status=$?
cat "$tmp/guest.log"
((status == 0)) && ! grep -q '^FAIL' "$tmp/guest.log" && pass "in the guest, install to purge, in $(elapsed "$start") s" ||
        fail "in the guest (exit $status)"

((failures)) && { echo "package: $failures check(s) failed"; exit 1; }
echo "package: all passed"
