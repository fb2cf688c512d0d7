/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * /proc/locks (subtree-lock.c names the daemon holding a CgroupRoot): lines of any length and
 * shape. A holder is only ever a positive pid from an FLOCK line naming the device and inode asked
 * for (00:1c:4242 here).
 */
#include <sys/sysmacros.h>

#include "fuzz-util.h"
#include "peltd/macro.h"
#include "peltd/subtree-lock.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_string(data, size);
        pid_t pid = proc_locks_find_holder(s, makedev(0, 0x1c), 4242);

        FUZZ_CHECK(pid >= 0);
        FUZZ_CHECK(pid == 0 || strstr(s, "FLOCK"));
        return 0;
}
