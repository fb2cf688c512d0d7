/* SPDX-License-Identifier: GPL-2.0-only */
/* Modes whose pipeline stage is not built yet. Each moves to its own file when it is. */
#include "peltd/commands.h"
#include "peltd/log.h"

static int pending(const char *what) {
        log_error("%s is not available in this build.", what);
        return 1;
}

int cmd_once(_unused_ const Args *args) {
        return pending("--once");
}

int cmd_restore(_unused_ const Args *args) {
        return pending("--restore");
}

int cmd_daemon(_unused_ const Args *args) {
        return pending("The daemon");
}
