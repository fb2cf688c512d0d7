# SPDX-License-Identifier: GPL-2.0-only
# Source from shell tests that touch the real machine: holds the same lock as
# tests/lib/machine-lock.h until the shell exits. The real machine needs root: without it the shell
# exits 77, meson's skip.
if [[ $(id -u) -ne 0 ]]; then
        echo "SKIP: the real machine (cgroups, CPUs, the machine lock) needs root"
        exit 77
fi
exec {machine_lock_fd}>>/run/lock/peltd-tests.lock
flock "$machine_lock_fd"
