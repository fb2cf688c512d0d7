/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * CPU hotplug events from the kernel's uevent netlink socket (NETLINK_KOBJECT_UEVENT, multicast group
 * 1). No udev is needed: the kernel sends "offline@/devices/system/cpu/cpuN" and "online@..." itself.
 *
 * The daemon watches the fd in its sd-event loop (EPOLLIN), calls hotplug_drain() when it is
 * readable and topology_refresh() when that returns more than 0; topology_online_changed() once a
 * round is the fallback for a socket that could not be opened or lost messages.
 */
typedef enum HotplugAction {
        HOTPLUG_OFFLINE,
        HOTPLUG_ONLINE,
} HotplugAction;

typedef struct HotplugEvent {
        HotplugAction action;
        int cpu;
} HotplugEvent;

/* Opens the socket, non-blocking and close-on-exec. Returns the fd or -errno. */
int hotplug_open(void);

/*
 * Parses one uevent datagram (header "ACTION@DEVPATH", then NUL-separated KEY=VALUE pairs). Returns
 * 1 and fills *ret for a CPU going online or offline, 0 for any other uevent (other devices, other
 * actions, udev's "libudev" messages), -EINVAL for a datagram that is no uevent.
 */
int hotplug_parse_uevent(const char *buf, size_t len, HotplugEvent *ret);

/*
 * Receives the next CPU hotplug event: 1 with *ret filled, 0 when nothing is pending, -ENOBUFS when
 * the kernel dropped messages (re-read the topology; later calls go on), other -errno on failure.
 * Other uevents and datagrams that do not come from the kernel are skipped.
 */
int hotplug_receive(int fd, HotplugEvent *ret);

/*
 * Reads everything pending. Returns the number of CPU hotplug events seen, counting a loss of
 * messages as one (something may have changed), or -errno.
 */
int hotplug_drain(int fd);
