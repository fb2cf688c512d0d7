#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Boots the Debian 12 test guest (tests/vm/image.sh builds it once) under QEMU, runs a script in it
# and returns the script's exit status; its output goes to stdout.
#
#   run.sh [--smp N] [--mem MB] [--timeout SECONDS] [--share DIR]... SCRIPT [ARGS...]
#
# Each --share DIR is mounted over 9p at the same path in the guest, so that a build directory's
# absolute paths hold there too (programs built here run unchanged: the guest is Debian 12 too);
# one inside another is shared with it.
# SCRIPT must lie in a shared directory; it runs as root in the guest once systemd has reached
# basic.target with the system bus, and the guest powers off when it ends. The disk is opened with
# snapshot=on: nothing a run does survives it. The machine lock is held while the guest runs (it
# keeps both CPUs busy). Exit status: the script's, or 1 when the guest never reported one (its
# console is printed then).
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
smp=2
mem=1024
timeout=300
shares=()

die() {
        echo "vm/run: $*" >&2
        exit 1
}

while (($#)); do
        case $1 in
        --smp) smp=$2; shift 2 ;;
        --mem) mem=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --share) shares+=("$(readlink -f "$2")"); shift 2 ;;
        --) shift; break ;;
        -*) die "unknown option $1" ;;
        *) break ;;
        esac
done
(($#)) || die "usage: run.sh [--smp N] [--mem MB] [--timeout SECONDS] [--share DIR]... SCRIPT [ARGS...]"
[[ $smp =~ ^[0-9]+$ && $mem =~ ^[0-9]+$ && $timeout =~ ^[0-9]+$ && $timeout -ge 30 ]] ||
        die "--smp, --mem and --timeout take numbers (--timeout at least 30)"
script=$(readlink -f "$1")
shift
# A share inside another one is there already.
kept=()
for d in "${shares[@]}"; do
        inner=0
        for o in "${shares[@]}"; do [[ $d == "$o"/* ]] && inner=1; done
        ((inner)) || kept+=("$d")
done
shares=("${kept[@]}")
inside=0
for d in "${shares[@]}"; do [[ $script == "$d"/* ]] && inside=1; done
((inside)) || die "$script is not in a shared directory (--share DIR)"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing (scripts/lib.sh installs qemu-system-x86)"

# The machine lock: other real-kernel tests and benchmarks must not run beside the guest.
. "$here/../lib/machine-lock.sh"

image=$("$here/image.sh") || exit 1

ctl=$(mktemp -d /tmp/peltd-vm.XXXXXX)
trap 'rm -rf "$ctl"' EXIT
mkdir "$ctl/out"

# What the guest's oneshot unit runs: mount the shares, then the script, bounded in time so that
# its output still comes back when it hangs.
{
        echo '#!/bin/sh'
        echo 'set -u'
        i=0
        for d in "${shares[@]}"; do
                printf 'mkdir -p %q && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share%d %q || exit 125\n' \
                        "$d" "$i" "$d"
                i=$((i + 1))
        done
        printf 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PELTD_VM_GUEST=1\n'
        printf 'cd %q 2>/dev/null || cd /\n' "$(pwd)"
        printf 'exec timeout -k 5 %d %q' "$((timeout - 25))" "$script"
        printf ' %q' "$@"
        echo
} >"$ctl/run.sh"
chmod +x "$ctl/run.sh"

# KVM only where it is the real thing (VM.md): a paravirtual KVM cannot boot Debian's kernel.
accel=(-accel tcg,thread=multi -cpu max)
if [[ -w /dev/kvm && ! -d /sys/module/kvm_pvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
        accel=(-accel kvm -cpu host)
fi

virtfs=(-virtfs "local,path=$ctl,mount_tag=hostshare,security_model=none,id=hostshare")
i=0
for d in "${shares[@]}"; do
        virtfs+=(-virtfs "local,path=$d,mount_tag=share$i,security_model=none,id=share$i")
        i=$((i + 1))
done

start=$(date +%s%N)
timeout -k 5 "$timeout" qemu-system-x86_64 "${accel[@]}" -smp "$smp" -m "$mem" -M pc \
        -nodefaults -no-user-config -display none -serial "file:$ctl/console" -no-reboot \
        -kernel "$image/vmlinux" -initrd "$image/initrd.img" \
        -append "console=ttyS0 systemd.unified_cgroup_hierarchy=1 panic=-1 quiet mitigations=off" \
        -drive "file=$image/rootfs.img,format=raw,if=virtio,snapshot=on" \
        "${virtfs[@]}" </dev/null >"$ctl/qemu.log" 2>&1
qemu_status=$?
elapsed=$((($(date +%s%N) - start) / 1000000))

[[ -f $ctl/out/output ]] && cat "$ctl/out/output"
if [[ -f $ctl/out/status ]]; then
        status=$(<"$ctl/out/status")
        printf 'vm/run: guest ran %s in %d.%d s (exit %s)\n' "${script##*/}" $((elapsed / 1000)) $((elapsed % 1000 / 100)) "$status" >&2
        exit "$status"
fi
if ((qemu_status == 124 || qemu_status == 137)); then
        echo "FAIL: the guest did not finish within $timeout s"
else
        echo "FAIL: the guest stopped without reporting an exit status (qemu exit $qemu_status)"
fi
echo "---- qemu ----"
tail -n 20 "$ctl/qemu.log"
echo "---- guest console ----"
tail -n 60 "$ctl/console"
exit 1
