/* SPDX-License-Identifier: GPL-2.0-only */
#include <ctype.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include "peltd/hotplug.h"
#include "peltd/macro.h"
#include "peltd/parse.h"

/* The kernel's multicast group for uevents (udev re-broadcasts on group 2, which we do not want). */
#define UEVENT_GROUP_KERNEL 1U
/* A uevent is at most UEVENT_BUFFER_SIZE (2048) bytes of environment plus its header. */
#define UEVENT_SIZE_MAX 8192
/* Room for bursts (a whole package going offline at once) while the daemon is busy. */
#define UEVENT_RCVBUF (1024 * 1024)

#define CPU_DEVPATH "/devices/system/cpu/cpu"

int hotplug_open(void) {
        struct sockaddr_nl sa = {
                .nl_family = AF_NETLINK,
                .nl_groups = UEVENT_GROUP_KERNEL,
        };
        _cleanup_close_ int fd = -1;
        int size = UEVENT_RCVBUF;

        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
        if (fd < 0)
                return negative_errno();
        /* Best effort: a smaller buffer only means an earlier ENOBUFS, which callers handle. */
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

/* "cpu12" at the end of the devpath, nothing after it; -1 otherwise. */
static int devpath_cpu(const char *devpath) {
        const char *p = startswith(devpath, CPU_DEVPATH);
        unsigned cpu;

        if (!p || !isdigit((unsigned char) *p))
                return -1;
        for (const char *q = p; *q; q++)
                if (!isdigit((unsigned char) *q))
                        return -1;
        if (safe_atou(p, &cpu) < 0 || cpu > INT32_MAX)
                return -1;
        return (int) cpu;
}

int hotplug_parse_uevent(const char *buf, size_t len, HotplugEvent *ret) {
        const char *header, *at, *end = buf + len, *subsystem = NULL;
        size_t subsystem_len = 0;
        char action[16];
        HotplugAction a;
        size_t hlen;
        int cpu;

        if (!buf || len == 0)
                return -EINVAL;
        /* udev's own broadcasts start with "libudev" and a binary header: not the kernel's. */
        if (len >= 8 && memcmp(buf, "libudev", 8) == 0)
                return 0;

        header = buf;
        hlen = strnlen(header, len);
        at = memchr(header, '@', hlen);
        if (!at || at == header || (size_t) (at - header) >= sizeof action)
                return -EINVAL;
        memcpy(action, header, (size_t) (at - header));
        action[at - header] = 0;

        if (streq(action, "online"))
                a = HOTPLUG_ONLINE;
        else if (streq(action, "offline"))
                a = HOTPLUG_OFFLINE;
        else
                return 0;

        {
                char devpath[256];
                size_t dlen = hlen - (size_t) (at + 1 - header);

                if (dlen == 0 || dlen >= sizeof devpath)
                        return 0;
                memcpy(devpath, at + 1, dlen);
                devpath[dlen] = 0;
                cpu = devpath_cpu(devpath);
                if (cpu < 0)
                        return 0;
        }

        /* The KEY=VALUE fields after the header: SUBSYSTEM must be cpu when it is given. */
        for (const char *p = header + hlen + 1; p < end; p += strnlen(p, (size_t) (end - p)) + 1) {
                size_t l = strnlen(p, (size_t) (end - p));

                if (l >= 10 && strneq(p, "SUBSYSTEM=", 10)) {
                        subsystem = p + 10;
                        subsystem_len = l - 10;
                }
        }
        if (subsystem && !(subsystem_len == 3 && memcmp(subsystem, "cpu", 3) == 0))
                return 0;

        *ret = (HotplugEvent){ .action = a, .cpu = cpu };
        return 1;
}

int hotplug_receive(int fd, HotplugEvent *ret) {
        for (;;) {
                char buf[UEVENT_SIZE_MAX + 1];
                struct sockaddr_nl sa = {};
                struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf - 1 };
                struct msghdr msg = {
                        .msg_name = &sa,
                        .msg_namelen = sizeof sa,
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                };
                ssize_t n;
                int r;

                n = recvmsg(fd, &msg, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return 0;
                        return negative_errno();
                }
                /* Only the kernel (port 0) speaks on this group; anything else is not to be trusted. */
                if (msg.msg_namelen != sizeof sa || sa.nl_pid != 0 || (msg.msg_flags & MSG_TRUNC))
                        continue;
                buf[n] = 0;
                r = hotplug_parse_uevent(buf, (size_t) n, ret);
                if (r > 0)
                        return 1;
        }
}

int hotplug_drain(int fd) {
        int n = 0;

        for (;;) {
                HotplugEvent e;
                int r = hotplug_receive(fd, &e);

                if (r == -ENOBUFS) {
                        n++;
                        continue;
                }
                if (r < 0)
                        return r;
                if (r == 0)
                        return n;
                n++;
        }
}
