/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Uevent datagrams (hotplug.c): "ACTION@DEVPATH" and NUL-separated KEY=VALUE pairs, or anything a
 * socket may deliver. The datagram is passed in a buffer of exactly its size, without the NUL
 * hotplug_receive() adds, so that a read past it is caught. A CPU event is only ever reported for
 * an online/offline header naming a CPU device.
 */
#include "fuzz-util.h"
#include "peltd/hotplug.h"
#include "peltd/macro.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *buf = fuzz_nonnull(malloc(MAX(size, (size_t) 1)));
        HotplugEvent e = { .cpu = -1 };
        const char *p;
        int r;

        memcpy(buf, data, size);
        r = hotplug_parse_uevent(buf, size, &e);
        FUZZ_CHECK(r == 0 || r == 1 || r == -EINVAL);
        if (r != 1)
                return 0;
        FUZZ_CHECK(e.cpu >= 0);
        p = e.action == HOTPLUG_ONLINE ? "online@/devices/system/cpu/cpu" : "offline@/devices/system/cpu/cpu";
        FUZZ_CHECK(e.action == HOTPLUG_ONLINE || e.action == HOTPLUG_OFFLINE);
        FUZZ_CHECK(size > strlen(p) && memcmp(buf, p, strlen(p)) == 0);
        return 0;
}
