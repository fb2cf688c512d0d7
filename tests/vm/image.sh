#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds (once) the Debian 12 guest the real systemd + cgroup v2 tests boot, and prints the
# directory that holds it: vmlinux, initrd.img, rootfs.img.
#
# The image is cached in PELTD_VM_CACHE (default /var/cache/peltd-vm), under a key made from this
# recipe (this script and init.c): a changed recipe builds a new image, an unchanged one is reused.
# Packages come from the mirror this machine's apt sources name (PELTD_VM_MIRROR overrides it);
# debootstrap keeps them in the cache too. Needs root, debootstrap, e2fsprogs, cpio, gcc.
#
# The guest: debootstrap minbase with systemd as PID 1 (cgroup v2, the unified hierarchy), dbus and
# the libraries peltd and its tests link; Debian's kernel, booted with a tiny static /init as initrd;
# on boot, a oneshot unit runs /mnt/host/run.sh (a 9p share), writes its output and exit status
# to /mnt/host/out/ and powers off.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
cache=${PELTD_VM_CACHE:-/var/cache/peltd-vm}
suite=bookworm

# What the guest needs beyond minbase: systemd and the bus, the libraries peltd, duty-cycle and
# the real-kernel tests link (libsystemd0 comes with systemd; libbpf1 for the BPF sampler), jq for
# the checks that read peltd's JSON, kmod for the 9p modules, polkitd (it decides who but root may
# change peltd's settings over the bus; libpam-systemd gives the logind it needs). No udev: nothing
# here waits for a device, and its coldplug costs seconds of every boot under emulation.
packages=systemd,systemd-sysv,dbus,kmod,procps,libinih1,libcgroup2,libjson-c5,libcmocka0,libbpf1,jq,libpam-systemd,polkitd

die() {
        echo "vm/image: $*" >&2
        exit 1
}

[[ $(id -u) -eq 0 ]] || die "building the guest image needs root (debootstrap, chroot)"
for tool in debootstrap mkfs.ext4 cpio gcc dpkg-deb xz; do
        command -v "$tool" >/dev/null || die "$tool is missing (scripts/lib.sh installs it)"
done

key=$(cat "$0" "$here/init.c" | sha256sum | cut -c1-16)
image=$cache/image-$key
if [[ -f $image/complete ]]; then
        echo "$image"
        exit 0
fi

mkdir -p "$cache/debs"
exec {lock}>>"$cache/build.lock"
flock "$lock"
if [[ -f $image/complete ]]; then # built while we waited
        echo "$image"
        exit 0
fi

# The first URI this machine's apt sources give for the suite itself (one-line and deb822 files).
find_mirror() {
        local f
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
                [[ -r $f ]] || continue
                awk -v s="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++;
                        if ($(i + 1) == s) { print $i; exit } }' "$f"
        done
        for f in /etc/apt/sources.list.d/*.sources; do
                [[ -r $f ]] || continue
                awk -v s="$suite" 'BEGIN { RS = ""; FS = "\n" }
                        { types = uris = suites = enabled = ""
                          for (i = 1; i <= NF; i++) {
                                  if ($i ~ /^Types:/) types = $i
                                  if ($i ~ /^URIs:/) uris = $i
                                  if ($i ~ /^Suites:/) suites = $i
                                  if ($i ~ /^Enabled: *no/) enabled = "no"
                          }
                          if (enabled != "no" && types ~ /[ \t]deb([ \t]|$)/ && (suites " ") ~ ("[ \t]" s "[ \t]")) {
                                  sub(/^URIs:[ \t]*/, "", uris); split(uris, u, /[ \t]+/); print u[1]; exit
                          } }' "$f"
        done
}
mirror=${PELTD_VM_MIRROR:-$(find_mirror | head -n1)}
[[ -n $mirror ]] || die "no apt source for $suite found in /etc/apt: set PELTD_VM_MIRROR to a Debian mirror"

work=$(mktemp -d "$cache/build-$key.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
log=$cache/build-$key.log
: >"$log"
start=$(date +%s)
echo "vm/image: building the guest image $key from $mirror (about a minute; log in $log)" >&2

# ---- The root filesystem ---------------------------------------------------------------------
if ! debootstrap --variant=minbase --include="$packages" --cache-dir="$cache/debs" \
        "$suite" "$rootfs" "$mirror" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        grep -qiE "Failed getting release file|Couldn't download|Failure trying to run|Temporary failure|unable to fetch|Could not resolve" "$log" &&
                die "debootstrap could not download from the Debian mirror $mirror: is it reachable from this machine?"
        die "debootstrap failed (see above)"
fi

# ---- The kernel: the package linux-image-amd64 depends on, unpacked without its maintainer scripts
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n1)
if [[ -z $kpkg ]]; then
        apt-get update -qq >>"$log" 2>&1 || die "apt-get update failed: is the Debian mirror reachable from this machine?"
        kpkg=$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n1)
fi
[[ -n $kpkg ]] || die "apt knows no linux-image-amd64: check this machine's apt sources"
kver=$(apt-cache policy "$kpkg" | sed -n 's/^ *Candidate: //p')
kdeb=$cache/debs/${kpkg}_${kver//:/%3a}_amd64.deb
if [[ ! -f $kdeb ]]; then
        (cd "$cache/debs" && apt-get download -o APT::Sandbox::User=root "$kpkg=$kver") >>"$log" 2>&1 ||
                die "downloading $kpkg $kver failed: is the Debian mirror reachable from this machine?"
fi
dpkg-deb -x "$kdeb" "$work/kernel"
uname_r=${kpkg#linux-image-}
# Not into the rootfs directly: the package's /lib would replace merged /usr's /lib symlink.
mkdir -p "$rootfs/usr/lib/modules"
mv "$work/kernel/lib/modules/$uname_r" "$rootfs/usr/lib/modules/"
chroot "$rootfs" /sbin/depmod "$uname_r"
# The uncompressed kernel boots faster: it starts at the xz magic inside vmlinuz.
vmlinuz=$work/kernel/boot/vmlinuz-$uname_r
offset=$(grep -aboF "$(printf '\3757zXZ')" "$vmlinuz" | head -n1 | cut -d: -f1)
[[ -n $offset ]] || die "no xz stream in $vmlinuz"
tail -c +"$((offset + 1))" "$vmlinuz" | xz -dc >"$work/vmlinux" 2>/dev/null || [[ -s $work/vmlinux ]] ||
        die "could not decompress $vmlinuz"

# ---- The initrd: /init and the modules it loads, dependencies first ----------------------------
mods=$rootfs/usr/lib/modules/$uname_r
mkdir -p "$work/initrd"/{dev,proc,root,lib/modules}
order=()
add_module() { # NAME: its dependencies (modules.dep lists them), then itself
        local name=$1 path deps d
        path=$(awk -F: -v n="$name" '{ f = $1; sub(/.*\//, "", f); sub(/\.ko(\..*)?$/, "", f); gsub(/-/, "_", f)
                if (f == n) { print $1; exit } }' "$mods/modules.dep")
        [[ -n $path ]] || return 0 # built in
        for d in "${order[@]}"; do [[ $d == "$path" ]] && return 0; done
        deps=$(awk -F': *' -v p="$path" '$1 == p { print $2; exit }' "$mods/modules.dep")
        for d in $deps; do
                d=${d##*/}
                d=${d%%.ko*}
                add_module "${d//-/_}"
        done
        order+=("$path")
}
for m in virtio_pci virtio_blk crc32c_generic ext4; do add_module "$m"; done
for p in "${order[@]}"; do
        f=${p##*/}
        case $f in
        *.ko.xz) xz -dc "$mods/$p" >"$work/initrd/lib/modules/${f%.xz}" ;;
        *.ko.zst) zstd -qdc "$mods/$p" >"$work/initrd/lib/modules/${f%.zst}" ;;
        *) cp "$mods/$p" "$work/initrd/lib/modules/$f" ;;
        esac
        echo "/lib/modules/${f%.ko*}.ko"
done >"$work/initrd/modules"
gcc -static -Os -Wall -Wextra -Werror -o "$work/initrd/init" "$here/init.c"
(cd "$work/initrd" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$work/initrd.img"

# ---- Configuration -----------------------------------------------------------------------------
echo peltd-vm >"$rootfs/etc/hostname"
# A fixed machine ID: without one every boot is a "first boot" (presets applied, firstboot run).
tr -d - </proc/sys/kernel/random/uuid >"$rootfs/etc/machine-id"
mkdir -p "$rootfs/mnt/host"
cat >"$rootfs/etc/fstab" <<'EOF'
/dev/vda / ext4 rw,noatime 0 1
hostshare /mnt/host 9p trans=virtio,version=9p2000.L,msize=262144,nofail 0 0
EOF
mkdir -p "$rootfs/etc/modules-load.d" "$rootfs/etc/systemd/system/multi-user.target.wants"
printf '9p\n9pnet_virtio\n' >"$rootfs/etc/modules-load.d/9p.conf"
# Units that only cost boot time here (not systemd-logind: polkitd needs it).
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer \
        dpkg-db-backup.timer getty@tty1.service serial-getty@ttyS0.service getty.target \
        systemd-update-utmp.service systemd-update-utmp-runlevel.service \
        systemd-journal-flush.service modprobe@drm.service modprobe@dm_mod.service modprobe@fuse.service \
        modprobe@loop.service dev-hugepages.mount sys-kernel-tracing.mount sys-kernel-debug.mount \
        systemd-firstboot.service systemd-random-seed.service systemd-user-sessions.service \
        systemd-sysusers.service systemd-ask-password-console.path systemd-ask-password-wall.path; do
        ln -sf /dev/null "$rootfs/etc/systemd/system/$u"
done
cat >"$rootfs/etc/systemd/system/peltd-vm-run.service" <<'EOF'
[Unit]
Description=Run /mnt/host/run.sh, keep its output and status, power off
After=basic.target dbus.socket
Wants=dbus.socket
RequiresMountsFor=/mnt/host
# In [Unit]: in [Service] these would be ignored and the guest would never power off.
SuccessAction=poweroff-immediate
FailureAction=poweroff-immediate

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'mkdir -p /mnt/host/out; /mnt/host/run.sh >/mnt/host/out/output 2>&1; echo $? >/mnt/host/out/status; sync'

[Install]
WantedBy=multi-user.target
EOF
ln -sf ../peltd-vm-run.service "$rootfs/etc/systemd/system/multi-user.target.wants/peltd-vm-run.service"
rm -f "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*_Packages

# ---- The disk image ----------------------------------------------------------------------------
mkfs.ext4 -q -F -L peltd-vm -d "$rootfs" "$work/rootfs.img" 1536M >>"$log" 2>&1 || die "mkfs.ext4 failed (log: $log)"
mkdir "$work/image"
mv "$work/vmlinux" "$work/initrd.img" "$work/rootfs.img" "$work/image/"
echo "$uname_r" >"$work/image/kernel-version"
touch "$work/image/complete"
rm -f "$log"
rm -rf "$image"
mv "$work/image" "$image"

# Older recipes' images: keep the newest three.
ls -1dt "$cache"/image-* 2>/dev/null | tail -n +4 | xargs -r rm -rf
echo "vm/image: built $image in $(($(date +%s) - start)) s" >&2
echo "$image"
