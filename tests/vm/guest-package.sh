#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs in the Debian 12 test guest (tests/vm/run.sh; no network): the Debian package through an
# operator's day, with the commands README.md's "Operating peltd" gives.
#
#   1. a roll-out's drop-ins put in place first (a scope, a group's settings and DryRun=yes, as on
#      a canary), then `apt-get install ./DEB`: the unit enabled and active (Type=notify), the
#      configuration a conffile, the bus answering, "Would set" lines logged and nothing written;
#   2. live (the canary's drop-in removed, restart): a service placed through its unit, the
#      journal's PELTD_* fields; the policy changed by a drop-in and reload, then over the bus, and
#      a group's shares by a drop-in;
#   3. SIGKILL: ExecStopPost restores, Restart=on-failure starts it again, it places again, and a
#      stop leaves every value as it was before the package came;
#   4. peltd run by hand, killed, and `peltd --restore`;
#   5. `apt-get remove`: stopped, every value back, the configuration kept; `apt-get purge`: no
#      /etc/peltd, no /run/peltd.
#
# "As it was" is every cgroup's cpuset.cpus, cpuset.cpus.effective, cpu.weight and
# cgroup.subtree_control under /sys/fs/cgroup, and the test units' AllowedCPUs= and CPUWeight=,
# compared with a snapshot taken before the package was installed.
#
# Prints one "ok: ..." or "FAIL: ..." line per check; exit 1 when any failed.
#
#   guest-package.sh SOURCE_DIR DEB
set -u
src=$1
deb=$2
failures=0
# The services of README.md's examples, in system.slice, the subtree the roll-out's drop-in gives peltd.
web=postgresql.service db=nginx.service
web_cg=/system.slice/$web db_cg=/system.slice/$db
conf_d=/etc/peltd/peltd.conf.d
hand_pid=
tmp=$(mktemp -d /tmp/peltd-test-package.XXXXXX)

. "$src/tests/lib/cgroup-lib.sh"

fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}

cleanup() {
        [[ -n $hand_pid ]] && kill -KILL "$hand_pid" 2>/dev/null
        systemctl stop peltd.service "$web" "$db" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

show() { systemctl show -P "$2" "$1"; }
cg_file() { cat "/sys/fs/cgroup$1/$2" 2>/dev/null; }
file_is() { [[ $(cg_file "$1" "$2") == "$3" ]]; }
log() { journalctl -q -u peltd.service --no-pager -o cat "$@"; }
prop() { busctl get-property org.peltd1 /org/peltd1 org.peltd1.Manager "$1"; }
quiet_apt() { DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Use-Pty=0 "$@" >"$tmp/apt.log" 2>&1; }
peltd_fail() {
        fail "$@"
        echo "---- journalctl -u peltd ----"
        log | tail -n 30
        echo "-----------------------------"
}

# snapshot FILE: "PATH<TAB>FILE<TAB>VALUE" for every cgroup, then the test units' properties.
snapshot() {
        {
                find /sys/fs/cgroup -type d | while IFS= read -r d; do
                        p=${d#/sys/fs/cgroup}
                        for f in cpuset.cpus cpuset.cpus.effective cpu.weight cgroup.subtree_control; do
                                [[ -f $d/$f ]] && printf '%s\t%s\t%s\n' "${p:-/}" "$f" "$(cat "$d/$f" 2>/dev/null)"
                        done
                done
                for u in "$web" "$db"; do
                        printf '%s\t%s\t%s\n' "$u" AllowedCPUs "$(show "$u" AllowedCPUs)"
                        printf '%s\t%s\t%s\n' "$u" CPUWeight "$(show "$u" CPUWeight)"
                done
        } | sort >"$1"
}

# as_before WHEN: every value both snapshots have is as it was before the install (groups made or
# removed since, such as peltd.service's own, are not compared); the differences are printed.
as_before() {
        local diffs
        snapshot "$tmp/now"
        diffs=$(awk -F'\t' 'NR == FNR { v[$1 FS $2] = $3; next }
                ($1 FS $2) in v && v[$1 FS $2] != $3 { printf "    %s %s: \"%s\", was \"%s\"\n", $1, $2, $3, v[$1 FS $2] }
                ($1 FS $2) in v { n++ } END { if (n < 10) print "    only " n + 0 " values compared" }' \
                "$tmp/before" "$tmp/now")
        # Not vacuous: the test groups' values are among those compared.
        if [[ -z $diffs ]] && grep -q "^$web_cg"$'\t'cpu.weight$'\t' "$tmp/before" &&
                grep -q "^$web_cg"$'\t'cpu.weight$'\t' "$tmp/now"; then
                pass "$1: every value as before the install ($(wc -l <"$tmp/before") in all)"
        else
                peltd_fail "$1: values changed since before the install:"
                echo "$diffs"
        fi
}

placed() { # web on CPU 1 at weight 200 (AllowedCPUs=1, Shares=2048), through its unit
        [[ $(show "$web" AllowedCPUs) == 1 && $(show "$web" CPUWeight) == 200 ]] &&
                file_is "$web_cg" cpuset.cpus.effective 1 && file_is "$web_cg" cpu.weight 200
}

[[ $(cat /proc/1/comm) == systemd && -f /sys/fs/cgroup/cgroup.controllers ]] || {
        echo "FAIL: not a systemd + cgroup v2 guest (PID 1 $(cat /proc/1/comm))"
        exit 1
}
[[ -f $deb ]] || { echo "FAIL: no package $deb"; exit 1; }
all_cpus=$(cat /sys/devices/system/cpu/online)
[[ $all_cpus == 0-1 ]] || { echo "FAIL: the guest has CPUs $all_cpus; these checks need 0-1"; exit 1; }
echo "== guest: $(systemctl --version | head -n1), kernel $(uname -r), CPUs $all_cpus; package ${deb##*/}"

# Two services of the fleet's own; peltd is to keep the first on CPU 1, the second takes shares.
systemd-run -q --unit="$web" sleep infinity
systemd-run -q --unit="$db" -p CPUWeight=50 sleep infinity
snapshot "$tmp/before"

# ---- 1. Install on a canary: the roll-out's drop-ins first, DryRun=yes among them -------------
echo "== 1. apt-get install on a canary (drop-ins first, DryRun=yes)"
mkdir -p "$conf_d"
cat >"$conf_d/10-fleet.conf" <<EOF
[Daemon]
CgroupRoot=/system.slice
Policy=performance

[Group $web_cg]
AllowedCPUs=1
Shares=2048
EOF
printf '[Daemon]\nDryRun=yes\n' >"$conf_d/50-canary.conf"

# As README.md says it, from the directory that holds the package.
if (cd "$(dirname "$deb")" && quiet_apt install "./${deb##*/}"); then
        pass "apt-get install ./${deb##*/}: installed with no network (every dependency in the image)"
else
        fail "apt-get install ./${deb##*/} failed:"
        sed 's/^/    /' "$tmp/apt.log"
        exit 1
fi
[[ $(systemctl is-enabled peltd.service) == enabled && $(show peltd.service ActiveState) == active &&
        $(show peltd.service Type) == notify ]] &&
        pass "the unit is enabled and active (Type=notify: READY=1 came), started by the package" ||
        peltd_fail "unit: $(systemctl is-enabled peltd.service), $(show peltd.service ActiveState), Type=$(show peltd.service Type)"
systemctl status peltd >"$tmp/status" && grep -q 'Status: "Policy performance (dry run)' "$tmp/status" &&
        pass "systemctl status peltd: exit 0, $(grep -o 'Status: .*' "$tmp/status")" ||
        peltd_fail "systemctl status peltd: $(grep -o 'Status: .*' "$tmp/status")"
cf=$(dpkg-query -W -f='${Conffiles}' peltd | awk '{ print $1 }' | tr '\n' ' ')
[[ $cf == "/etc/peltd/peltd.conf " ]] && pass "conffiles: $cf" || fail "conffiles: \"$cf\""
if command -v peltctl >/dev/null && dpkg -S "$(command -v peltctl)" >/dev/null 2>&1; then
        # 80 columns (not a terminal): a long path keeps its end, the unit's name.
        peltctl status >"$tmp/peltctl" 2>&1 && grep -q "/$web " "$tmp/peltctl" &&
                pass "peltctl status: exit 0, lists $web_cg (as …/$web where the column is narrower)" ||
                { fail "peltctl status:"; sed 's/^/    /' "$tmp/peltctl"; }
else
        echo "note: the package has no peltctl; the bus is read with busctl"
fi
busctl get-property org.peltd1 /org/peltd1 org.peltd1.Manager Policy DryRun CgroupRoot >"$tmp/props" 2>&1 &&
        [[ $(tr '\n' ' ' <"$tmp/props") == 's "performance" b true s "/system.slice" ' ]] &&
        pass "busctl get-property ... Policy DryRun CgroupRoot: $(tr '\n' ' ' <"$tmp/props")" ||
        peltd_fail "busctl get-property ... Policy DryRun CgroupRoot: $(tr '\n' ' ' <"$tmp/props")"
d=$(prop DryRun) r=$(prop CgroupRoot) v=$(prop Version)
[[ $d == "b true" && $r == 's "/system.slice"' && $v == "s \"$(dpkg-query -W -f='${Version}' peltd | sed 's/-[^-]*$//')\"" ]] &&
        pass "busctl get-property org.peltd1: DryRun $d, CgroupRoot $r, Version $v" ||
        peltd_fail "busctl get-property org.peltd1: DryRun \"$d\", CgroupRoot \"$r\", Version \"$v\""
if wait_for 20 eval 'journalctl -q -u peltd --no-pager -o cat -g "^Would set" | grep -q "$web"'; then
        pass "dry run: $(log -g "^Would set" | grep -m1 "$web")"
else
        peltd_fail "dry run: no \"Would set\" line for $web"
fi
as_before "dry run"

# ---- 2. Live: the canary's drop-in goes, a restart; then a policy and shares by drop-ins -------
echo "== 2. live: placing, the journal's fields, policy and shares by drop-ins and reload"
rm "$conf_d/50-canary.conf"
systemctl restart peltd
if wait_for 30 placed; then
        pass "live: $web placed through its unit: AllowedCPUs=1, CPUWeight=200 (Shares=2048), cpu.weight 200"
else
        peltd_fail "live: $web AllowedCPUs=\"$(show "$web" AllowedCPUs)\" CPUWeight=$(show "$web" CPUWeight), effective CPUs \"$(cg_file "$web_cg" cpuset.cpus.effective)\""
fi
journalctl -u peltd -o verbose PELTD_GROUP="$web_cg" >"$tmp/verbose"
if grep -qx "    PELTD_CPUS=1" "$tmp/verbose" && grep -qx "    PELTD_SHARES=2048" "$tmp/verbose" &&
        grep -qx "    PELTD_POLICY=performance" "$tmp/verbose" && grep -q "^    PELTD_REASON=." "$tmp/verbose"; then
        pass "journalctl -o verbose PELTD_GROUP=$web_cg: PELTD_CPUS=1, PELTD_SHARES=2048, PELTD_POLICY, PELTD_REASON"
        grep -E '^    (MESSAGE|PELTD_[A-Z_]+)=' "$tmp/verbose" | head -n 8
else
        peltd_fail "journalctl -o verbose PELTD_GROUP=$web_cg:"
        sed 's/^/    /' "$tmp/verbose" | tail -n 20
fi
busctl call org.peltd1 /org/peltd1 org.peltd1.Manager GetGroup s "$web_cg" >"$tmp/group" 2>&1 &&
        grep -q "^(sdddtsss) \"$web_cg\" .* 2048 \"1\" \"performance\"" "$tmp/group" &&
        pass "busctl call ... GetGroup: $(cut -c1-100 "$tmp/group")" ||
        fail "busctl call ... GetGroup: $(cat "$tmp/group")"

printf '[Daemon]\nPolicy=power\n' >"$conf_d/20-policy.conf"
systemctl reload peltd && wait_for 5 eval '[[ $(prop Policy) == "s \"power\"" ]]' &&
        pass "policy by drop-in + systemctl reload: Policy power" || peltd_fail "policy by drop-in: Policy $(prop Policy)"
busctl call org.peltd1 /org/peltd1 org.peltd1.Manager SetPolicy s balanced && [[ $(prop Policy) == 's "balanced"' ]] &&
        pass "policy at run time: busctl call ... SetPolicy s balanced" || peltd_fail "SetPolicy balanced: Policy $(prop Policy)"
printf '[Group %s]\nShares=3072\n' "$db_cg" >"$conf_d/30-nginx.conf"
if systemctl reload peltd &&
        wait_for 20 eval '[[ $(show "$db" CPUWeight) == 300 ]] && file_is "$db_cg" cpu.weight 300'; then
        pass "a group's shares by drop-in + systemctl reload: $db at CPUWeight=300 (Shares=3072)"
else
        peltd_fail "shares by drop-in: $db CPUWeight=$(show "$db" CPUWeight)"
fi
printf '[Daemon]\nSampleIntervalMSec=5\n' >"$conf_d/60-broken.conf"
systemctl reload peltd
if wait_for 5 eval 'journalctl -u peltd -n 5 | grep -q "$conf_d/60-broken.conf:2: SampleIntervalMSec=5: "' &&
        [[ $(show peltd.service ActiveState) == active && $(prop SampleIntervalUSec) == "t 100000" ]]; then
        pass "a broken drop-in: reload keeps the old settings (100 ms rounds), journalctl -u peltd -n 5 names 60-broken.conf:2"
else
        peltd_fail "a broken drop-in: peltd $(show peltd.service ActiveState), $(prop SampleIntervalUSec), FILE:LINE in journalctl -u peltd -n 5?"
fi
rm "$conf_d/60-broken.conf"
[[ $(prop Policy) == 's "balanced"' ]] && placed &&
        pass "reloaded: the run-time policy (balanced) holds, $web still on CPU 1 (its AllowedCPUs=1)" ||
        peltd_fail "reloaded: Policy $(prop Policy), $web AllowedCPUs=\"$(show "$web" AllowedCPUs)\""

# ---- 3. A crash: ExecStopPost restores, Restart=on-failure brings it back ---------------------
echo "== 3. systemctl kill -s KILL peltd"
since=$(date '+%Y-%m-%d %H:%M:%S')
pid=$(show peltd.service MainPID)
systemctl kill -s KILL peltd
restarted() { [[ $(show peltd.service NRestarts) -ge 1 && $(show peltd.service ActiveState) == active && $(show peltd.service MainPID) != "$pid" ]]; }
if wait_for 30 restarted; then
        pass "killed: restarted (NRestarts=$(show peltd.service NRestarts), pid $pid -> $(show peltd.service MainPID))"
else
        peltd_fail "killed: $(show peltd.service ActiveState), NRestarts=$(show peltd.service NRestarts)"
fi
log --since "$since" | grep -q "^Every recorded original value is restored\.$" &&
        pass "killed: ExecStopPost's peltd --restore put the recorded values back" ||
        peltd_fail "killed: no \"Every recorded original value is restored.\" from ExecStopPost"
wait_for 30 placed && pass "restarted: $web placed again" || peltd_fail "restarted: $web not placed again"
systemctl stop peltd
[[ $(show peltd.service Result) == success && ! -s /run/peltd/originals ]] &&
        pass "stop: result success, nothing left in the state file" ||
        peltd_fail "stop: result $(show peltd.service Result), state file $(wc -c </run/peltd/originals 2>/dev/null) bytes"
as_before "crash, restart and stop"

# ---- 4. By hand: the daemon killed outside its unit, then peltd --restore ----------------------
echo "== 4. peltd by hand, SIGKILL, peltd --restore"
peltd 2>"$tmp/hand.log" &
hand_pid=$!
if wait_for 30 placed; then
        kill -KILL "$hand_pid"
        wait "$hand_pid" 2>/dev/null
        hand_pid=
        placed && [[ -s /run/peltd/originals ]] &&
                pass "killed by hand: $web left placed, the state file holds its originals" ||
                fail "killed by hand: $web AllowedCPUs=\"$(show "$web" AllowedCPUs)\", state file $(wc -c </run/peltd/originals 2>/dev/null) bytes"
        peltd --restore 2>"$tmp/restore.log" && grep -q "Every recorded original value is restored" "$tmp/restore.log" &&
                pass "peltd --restore: exit 0, \"$(tail -n1 "$tmp/restore.log")\"" ||
                { fail "peltd --restore:"; sed 's/^/    /' "$tmp/restore.log"; }
        as_before "peltd --restore"
else
        fail "peltd by hand did not place $web:"
        sed 's/^/    /' "$tmp/hand.log" | tail -n 20
fi

# ---- 5. Remove, purge -------------------------------------------------------------------------
echo "== 5. apt-get remove, apt-get purge"
systemctl start peltd
wait_for 30 placed || peltd_fail "start: $web not placed"
if quiet_apt remove peltd; then
        pass "apt-get remove peltd"
else
        fail "apt-get remove peltd:"
        sed 's/^/    /' "$tmp/apt.log"
fi
st=$(dpkg-query -W -f='${Status}' peltd 2>/dev/null)
[[ $st == "deinstall ok config-files" && $(show peltd.service ActiveState) == inactive && ! -e /usr/sbin/peltd &&
        ! -e /lib/systemd/system/peltd.service && -f /etc/peltd/peltd.conf ]] &&
        pass "removed: stopped, binary and unit gone, /etc/peltd/peltd.conf kept ($st)" ||
        fail "removed: status \"$st\", unit $(show peltd.service ActiveState), /usr/sbin/peltd $([[ -e /usr/sbin/peltd ]] && echo left)"
as_before "apt-get remove"
if quiet_apt purge peltd; then
        pass "apt-get purge peltd"
else
        fail "apt-get purge peltd:"
        sed 's/^/    /' "$tmp/apt.log"
fi
[[ ! -e /etc/peltd && ! -e /run/peltd && -z $(dpkg-query -W -f='${Status}' peltd 2>/dev/null) ]] &&
        pass "purged: no /etc/peltd (drop-ins included), no /run/peltd, unknown to dpkg" ||
        fail "purged: $(ls -d /etc/peltd /run/peltd 2>/dev/null | tr '\n' ' ')status \"$(dpkg-query -W -f='${Status}' peltd 2>/dev/null)\""

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all package checks passed"
