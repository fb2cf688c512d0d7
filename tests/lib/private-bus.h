/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * A private system-type dbus-daemon for tests: there is no system bus to borrow here, and tests
 * must not touch one anyway. private_bus_start() sets DBUS_SYSTEM_BUS_ADDRESS for this process and
 * its children; private_bus_stop() ends the daemon and removes its directory.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-cleanup.h"

typedef struct PrivateBus {
        char dir[64];
        char address[256];
        pid_t pid;
} PrivateBus;

static inline bool private_bus_listening(const char *sock) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok;

        if (fd < 0)
                return false;
        if (strlen(sock) >= sizeof sa.sun_path) {
                close(fd);
                return false;
        }
        memcpy(sa.sun_path, sock, strlen(sock) + 1);
        ok = connect(fd, (const struct sockaddr *) &sa, sizeof sa) == 0;
        close(fd);
        return ok;
}

static inline int private_bus_start(PrivateBus *b) {
        char conf[128], sock[128];
        FILE *f;

        strcpy(b->dir, "/tmp/peltd-test-bus-XXXXXX");
        if (!test_mkdtemp(b->dir))
                return -1;
        snprintf(conf, sizeof conf, "%s/bus.conf", b->dir);
        snprintf(sock, sizeof sock, "%s/bus", b->dir);
        f = fopen(conf, "we");
        if (!f)
                return -1;
        fprintf(f,
                "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
                " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
                "<busconfig>\n"
                "  <type>system</type>\n"
                "  <listen>unix:path=%s</listen>\n"
                "  <auth>EXTERNAL</auth>\n"
                "  <policy context=\"default\">\n"
                "    <allow user=\"*\"/>\n"
                "    <allow own=\"*\"/>\n"
                "    <allow send_type=\"method_call\"/>\n"
                "    <allow send_type=\"signal\"/>\n"
                "    <allow send_type=\"method_return\"/>\n"
                "    <allow send_type=\"error\"/>\n"
                "    <allow receive_type=\"method_call\"/>\n"
                "    <allow receive_type=\"signal\"/>\n"
                "    <allow receive_type=\"method_return\"/>\n"
                "    <allow receive_type=\"error\"/>\n"
                "  </policy>\n"
                "</busconfig>\n",
                sock);
        fclose(f);

        b->pid = fork();
        if (b->pid < 0)
                return -1;
        if (b->pid == 0) {
                execlp("dbus-daemon", "dbus-daemon", "--nofork", "--nopidfile", "--nosyslog", "--config-file", conf,
                       (char *) NULL);
                _exit(127);
        }
        /*
         * Wait, at most 5 s, until the socket takes a connection: it is there once bound, but
         * refuses connections (ECONNREFUSED) until the daemon listens.
         */
        for (int i = 0; i < 500 && !private_bus_listening(sock); i++)
                usleep(10000);
        if (!private_bus_listening(sock))
                return -1;
        snprintf(b->address, sizeof b->address, "unix:path=%s", sock);
        setenv("DBUS_SYSTEM_BUS_ADDRESS", b->address, 1);
        return 0;
}

static inline void private_bus_stop(PrivateBus *b) {
        char cmd[128];

        if (b->pid > 0) {
                kill(b->pid, SIGTERM);
                waitpid(b->pid, NULL, 0);
                b->pid = 0;
        }
        if (b->dir[0]) {
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", b->dir);
                if (system(cmd) != 0)
                        fprintf(stderr, "private_bus_stop: cannot remove %s\n", b->dir);
        }
}
