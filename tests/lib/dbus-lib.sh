# SPDX-License-Identifier: GPL-2.0-only
# A private system bus for tests, configured as Debian's system bus is (deny by default: no name
# owned, no method call sent unless a policy allows it) with the project's conf/org.peltd1.conf
# included. Source it (after tests/lib/cgroup-lib.sh), then (dbus_start and dbus_stop come from
# scripts/bus-lib.sh, which scripts/run sources too):
#
#   dbus_start DIR [CONF...]
#                     starts dbus-daemon listening on DIR/system_bus_socket and exports
#                     DBUS_SYSTEM_BUS_ADDRESS; dbus_pid holds its pid. Each CONF (a busconfig
#                     file) is included too, as /etc/dbus-1/system.d/ files are (tests/lib/fake-polkit
#                     needs one to own its name)
#   dbus_stop         stops it (also run by dbus_cleanup, which the caller's EXIT trap calls)
#   polkit_conf FILE  writes FILE, a CONF for dbus_start that lets root own org.freedesktop.PolicyKit1
#                     and everyone call its Authority: what the stand-in polkit (tests/lib/fake-polkit)
#                     needs
#   polkit_start FAKE_POLKIT ANSWER OUT
#                     (re)starts the stand-in polkit, answering ANSWER, its output in OUT;
#                     polkit_pid holds its pid. Fails unless it says READY within 5 s
#   polkit_stop       stops it (also run by dbus_cleanup)
#
# The caller's EXIT/INT/TERM/HUP traps must call dbus_cleanup.

dbus_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# dbus_start, dbus_stop and dbus_pid: shared with scripts/run.
. "$dbus_lib_dir/../../scripts/bus-lib.sh"
polkit_pid=

polkit_conf() {
        cat > "$1" <<'EOF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <policy user="root"><allow own="org.freedesktop.PolicyKit1"/></policy>
  <policy context="default">
    <allow send_destination="org.freedesktop.PolicyKit1" send_interface="org.freedesktop.PolicyKit1.Authority"/>
  </policy>
</busconfig>
EOF
}

polkit_start() {
        polkit_stop
        "$1" "$2" > "$3" 2>&1 &
        polkit_pid=$!
        wait_for 5 grep -q READY "$3"
}

polkit_stop() {
        [ -n "$polkit_pid" ] || return 0
        kill "$polkit_pid" 2>/dev/null
        wait "$polkit_pid" 2>/dev/null
        polkit_pid=
}

dbus_cleanup() {
        polkit_stop
        dbus_stop
}
