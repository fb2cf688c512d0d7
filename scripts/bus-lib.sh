# SPDX-License-Identifier: GPL-2.0-only
# A private system bus, configured as Debian's system bus is (deny by default: no name owned, no
# method call sent unless a policy allows it) with the project's conf/org.peltd1.conf included.
# Sourced by scripts/run (on a machine with no system bus) and by tests/lib/dbus-lib.sh.
#
#   dbus_start DIR [CONF...]
#                     starts dbus-daemon listening on DIR/system_bus_socket and exports
#                     DBUS_SYSTEM_BUS_ADDRESS; dbus_pid holds its pid, DIR/dbus.log its output. Each
#                     CONF (a busconfig file) is included too, as /etc/dbus-1/system.d/ files are
#   dbus_stop         stops it

bus_lib_conf=$(cd "$(dirname "${BASH_SOURCE[0]}")/../conf" && pwd)
dbus_pid=

dbus_start() {
        local dir=$1 i extra=
        shift
        for i in "$@"; do extra+="  <include>$i</include>\n"; done
        sed -e '/<user>/d' -e '/<fork\/>/d' -e '/<pidfile>/d' -e '/<syslog\/>/d' \
            -e '/<standard_system_servicedirs\/>/d' -e '/<servicehelper>/d' \
            -e '/<includedir>/d' -e '/<include /d' \
            -e "s|<listen>.*</listen>|<listen>unix:path=$dir/system_bus_socket</listen>|" \
            -e "s|</busconfig>|  <include>$bus_lib_conf/org.peltd1.conf</include>\n$extra</busconfig>|" \
            /usr/share/dbus-1/system.conf > "$dir/system.conf" || return 1
        grep -q "$dir/system_bus_socket" "$dir/system.conf" || { echo "dbus_start: no <listen> in system.conf" >&2; return 1; }
        rm -f "$dir/system_bus_socket"
        dbus-daemon --config-file="$dir/system.conf" --nofork --nopidfile 2> "$dir/dbus.log" &
        dbus_pid=$!
        for i in $(seq 100); do
                [ -S "$dir/system_bus_socket" ] && break
                kill -0 "$dbus_pid" 2>/dev/null || { cat "$dir/dbus.log" >&2; return 1; }
                sleep 0.05
        done
        [ -S "$dir/system_bus_socket" ] || { echo "dbus_start: the bus did not come up" >&2; return 1; }
        # Let every user reach the socket (the bus, not the file mode, decides).
        chmod 0755 "$dir"
        chmod 0666 "$dir/system_bus_socket"
        export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$dir/system_bus_socket"
}

dbus_stop() {
        [ -n "$dbus_pid" ] || return 0
        kill "$dbus_pid" 2>/dev/null
        wait "$dbus_pid" 2>/dev/null
        dbus_pid=
}
