# SPDX-License-Identifier: GPL-2.0-only
# Source from shell tests that touch the real machine: holds the same lock as
# tests/lib/machine-lock.h until the shell exits.
exec {machine_lock_fd}>>/run/lock/peltd-tests.lock
flock "$machine_lock_fd"
