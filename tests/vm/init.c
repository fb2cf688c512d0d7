/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The test guest's whole initrd: load the modules an ext4 root on virtio-blk needs (listed one per
 * line in /modules, dependencies first), mount /dev/vda and hand over to systemd. Built static;
 * Debian's own initrd works too, but takes twice as long to boot.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void load_modules(void) {
        char line[256];
        FILE *f = fopen("/modules", "re");

        if (!f)
                return;
        while (fgets(line, sizeof line, f)) {
                int fd;

                line[strcspn(line, "\n")] = 0;
                if (!line[0])
                        continue;
                fd = open(line, O_RDONLY | O_CLOEXEC);
                /* EEXIST: built in, or already loaded as another's dependency. */
                if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST))
                        fprintf(stderr, "init: %s: %m\n", line);
                if (fd >= 0)
                        close(fd);
        }
        fclose(f);
}

int main(void) {
        struct stat st;

        mount("proc", "/proc", "proc", 0, NULL);
        mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
        load_modules();

        /* The disk appears once virtio_blk has probed it: wait up to 10 s. */
        for (int i = 0; i < 1000 && stat("/dev/vda", &st) < 0; i++)
                nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
        if (mount("/dev/vda", "/root", "ext4", 0, NULL) < 0) {
                fprintf(stderr, "init: mounting /dev/vda: %m\n");
                return 1;
        }

        mount("/dev", "/root/dev", NULL, MS_MOVE, NULL);
        umount2("/proc", MNT_DETACH);
        if (chdir("/root") < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/") < 0) {
                fprintf(stderr, "init: switching to the root filesystem: %m\n");
                return 1;
        }
        execl("/sbin/init", "/sbin/init", (char *) NULL);
        fprintf(stderr, "init: exec /sbin/init: %m\n");
        return 1;
}
