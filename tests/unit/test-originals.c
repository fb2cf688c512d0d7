/* SPDX-License-Identifier: GPL-2.0-only */
/* The state file of original values: recorded before each write, reloaded after a crash, locked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/originals.h"
#include "test-cleanup.h"

static char tmpdir[] = "/tmp/peltd-test-originals-XXXXXX";
static char path[300];

static void test_record_reload_forget(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        const Original *e;
        struct stat st;

        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        assert_int_equal(o->n_entries, 0);

        assert_int_equal(originals_put(o, "cpuset", "/a", "cpuset.cpus", "0-1", "0"), 0);
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(originals_put(o, "cpu", "/a", "cpu.shares", "1024", "2048"), 0);
        assert_int_equal(originals_commit(o), 0);
        /* A second write keeps the first original and takes the new value. */
        assert_int_equal(originals_put(o, "cpuset", "/a", "cpuset.cpus", "0", "1"), 0);
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(o->n_entries, 2);

        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);

        /* What a restarted daemon sees after a crash. */
        assert_int_equal(originals_load_checked(path, &again, NULL), 0);
        assert_int_equal(again->n_entries, 2);
        e = originals_find(again, "cpuset", "/a", "cpuset.cpus");
        assert_non_null(e);
        assert_string_equal(e->original, "0-1");
        assert_string_equal(e->written, "1");
        assert_null(originals_find(again, "cpuset", "/b", "cpuset.cpus"));

        assert_int_equal(originals_drop(o, "cpuset", "/a", "cpuset.cpus"), 0);
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(originals_drop(o, "cpuset", "/a", "cpuset.cpus"), 0);
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(o->n_entries, 1);
        assert_int_equal(originals_drop(o, "cpu", "/a", "cpu.shares"), 0);
        assert_int_equal(originals_commit(o), 0);
        /* Nothing left: the file is gone. */
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(errno, ENOENT);
}

static void test_values_with_odd_characters(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;

        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        assert_int_equal(originals_put(o, "systemd", "my\\x22odd\\x22@1.service", "AllowedCPUs", "", "0-3\n"), 0);
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(originals_load_checked(path, &again, NULL), 0);
        assert_string_equal(again->entries[0].group, "my\\x22odd\\x22@1.service");
        assert_string_equal(again->entries[0].original, "");
        assert_string_equal(again->entries[0].written, "0-3\n");
        assert_int_equal(originals_drop(o, "systemd", "my\\x22odd\\x22@1.service", "AllowedCPUs"), 0);
        assert_int_equal(originals_commit(o), 0);
}

/* Every byte a cgroup name may hold (0x01..0xff but '/'), in group names peltd records: read back the same. */
static void test_every_byte_in_a_name(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        char names[3][300];
        size_t n[3] = { 0 };

        for (unsigned b = 1; b < 256; b++) {
                char *name = names[b % 3];

                if (b == '/')
                        continue;
                if (n[b % 3] == 0)
                        name[n[b % 3]++] = '/';
                name[n[b % 3]++] = (char) b;
        }
        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        for (size_t i = 0; i < 3; i++) {
                names[i][n[i]] = 0;
                assert_null(original_check(&(Original){ .hierarchy = (char *) "cpuset", .group = names[i], .file = (char *) "cpuset.cpus" }));
                assert_int_equal(originals_put(o, "cpuset", names[i], "cpuset.cpus", "0-1", "0"), 0);
        }
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(originals_load_checked(path, &again, NULL), 0);
        assert_int_equal(again->n_entries, 3);
        assert_int_equal(again->n_refused, 0);
        for (size_t i = 0; i < 3; i++) {
                assert_non_null(originals_find(again, "cpuset", names[i], "cpuset.cpus"));
                assert_int_equal(originals_drop(o, "cpuset", names[i], "cpuset.cpus"), 0);
        }
        assert_int_equal(originals_commit(o), 0);
}

static void test_bad_file(_unused_ void **state) {
        static const char *const bad[] = {
                "garbage", "{}", "{\"version\": 2, \"entries\": []}", "{\"version\": 1, \"entries\": []} x",
                /* A root key given twice: json-c would keep the last. */
                "{\"version\": 1, \"entries\": [], \"entries\": []}",
                "{\"version\": 1, \"entries\": [], \"entr\\u0069es\": []}",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                Originals *o = NULL;
                FILE *f = fopen(path, "we");

                fputs(bad[i], f);
                fclose(f);
                assert_int_equal(originals_load_checked(path, &o, NULL), -EBADMSG);
                assert_null(o);
        }
        unlink(path);
}

static void test_unwritable_records_nothing(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;

        /* /proc refuses new files: the record fails and leaves nothing behind in memory. */
        assert_int_equal(originals_load_checked("/proc/peltd-test/originals", &o, NULL), 0);
        assert_int_equal(originals_put(o, "cpu", "/a", "cpu.shares", "1024", "2048"), 0);
        assert_true(originals_commit(o) < 0);
        /* Still unsaved: the caller takes back what it staged. */
        assert_true(originals_dirty(o));
        originals_rollback(o);
        assert_int_equal(o->n_entries, 0);
        assert_false(originals_dirty(o));
}

static void test_lock_is_exclusive(_unused_ void **state) {
        int fd = originals_lock_checked(path, NULL);
        pid_t pid;
        int status;

        assert_true(fd >= 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                /* flock is per open file: a second process (or open) must be refused. */
                int k = originals_lock_checked(path, NULL);
                _exit(k == -EBUSY ? 0 : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(fd);

        /* Released with its fd. */
        fd = originals_lock_checked(path, NULL);
        assert_true(fd >= 0);
        close(fd);
}

static void write_state(const char *text, mode_t mode) {
        FILE *f;

        (void) unlink(path);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        assert_int_equal(chmod(path, mode), 0);
}

/* A forged state file must not make root write anywhere but the files peltd places. */
static void test_forged_entries_refused(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        static const char *const forged[][3] = {
                { "cpuset", "/../../../../tmp/x", "cpuset.cpus" },  /* traversal */
                { "cpuset", "/a/../../b", "cpuset.cpus" },
                { "cpuset", "/a/./b", "cpuset.cpus" },
                { "cpuset", "/a//b", "cpuset.cpus" },               /* not normalized */
                { "cpuset", "a/b", "cpuset.cpus" },                 /* not absolute */
                { "cpuset", "/a/", "cpuset.cpus" },
                { "cpuset", "/", "release_agent" },                 /* not a placed file */
                { "cpuset", "/a", "cgroup.procs" },
                { "cpuset", "/a", "../../../etc/passwd" },
                { "cpuset", "/a", "cpu.shares" },                   /* a placed file, of another hierarchy */
                { "cpu", "/a", "cpuset.cpus" },
                { "unified", "/a", "cgroup.procs" },
                { "memory", "/a", "memory.limit_in_bytes" },        /* a hierarchy peltd never writes */
                { "../../tmp", "/a", "cpuset.cpus" },
                { "systemd", "../x.service", "AllowedCPUs" },       /* not a unit name */
                { "systemd", "x", "AllowedCPUs" },
                { "systemd", "x.service", "ExecStart" },            /* not a property peltd sets */
                { "systemd", "x.timer", "AllowedCPUs" },            /* a unit type without a cgroup */
        };
        char text[8192] = "{\"version\": 1, \"entries\": [";
        size_t n = strlen(text);

        for (size_t i = 0; i < ELEMENTSOF(forged); i++)
                n += (size_t) snprintf(text + n, sizeof text - n,
                                       "{\"hierarchy\": \"%s\", \"group\": \"%s\", \"file\": \"%s\", \"original\": \"x\", \"written\": \"y\"},",
                                       forged[i][0], forged[i][1], forged[i][2]);
        snprintf(text + n, sizeof text - n,
                 "{\"hierarchy\": \"cpuset\", \"group\": \"/.hidden/b\", \"file\": \"cpuset.cpus\", \"original\": \"0-1\", \"written\": \"0\"},"
                 "{\"hierarchy\": \"systemd\", \"group\": \"web@1.service\", \"file\": \"CPUWeight\", \"original\": \"\", \"written\": \"200\"},"
                 /* Every unit type with a cgroup is placed through systemd: mounts too (a 9p mount's helper). */
                 "{\"hierarchy\": \"systemd\", \"group\": \"mnt-host.mount\", \"file\": \"AllowedCPUs\", \"original\": \"\", \"written\": \"0\"},"
                 "{\"hierarchy\": \"systemd\", \"group\": \"dbus.socket\", \"file\": \"CPUWeight\", \"original\": \"\", \"written\": \"50\"},"
                 "{\"hierarchy\": \"systemd\", \"group\": \"dev-vdb.swap\", \"file\": \"AllowedCPUs\", \"original\": \"\", \"written\": \"1\"}]}");
        write_state(text, 0600);

        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        /* Only the valid entries are kept; every forged one is described for the log. */
        assert_int_equal(o->n_entries, 5);
        assert_string_equal(o->entries[0].group, "/.hidden/b");
        assert_string_equal(o->entries[1].group, "web@1.service");
        assert_string_equal(o->entries[2].group, "mnt-host.mount");
        assert_string_equal(o->entries[3].group, "dbus.socket");
        assert_string_equal(o->entries[4].group, "dev-vdb.swap");
        assert_int_equal(o->n_refused, ELEMENTSOF(forged));
        assert_non_null(strstr(o->refused[0], "/../../../../tmp/x"));
        assert_non_null(strstr(o->refused[6], "release_agent"));
        unlink(path);
}

static void test_untrusted_state_files(_unused_ void **state) {
        char target[400], link[400], dir[400];
        const char *why = NULL;
        Originals *o = NULL;

        /* Writable by others, or another user's: refused, with the reason. */
        write_state("{\"version\": 1, \"entries\": []}", 0666);
        assert_int_equal(originals_load_checked(path, &o, &why), -EPERM);
        assert_string_equal(why, "is writable by group or others");
        assert_int_equal(chmod(path, 0600), 0);
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_int_equal(originals_load_checked(path, &o, &why), -EPERM);
        assert_string_equal(why, "is owned by another user");
        unlink(path);

        /* A FIFO: refused at once, never read (an open that blocked would hang this test). */
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(originals_load_checked(path, &o, &why), -EPERM);
        assert_string_equal(why, "is a FIFO");
        unlink(path);

        /* A symlink, to a good file or to a device: never followed. */
        snprintf(target, sizeof target, "%s/target", tmpdir);
        write_state("{\"version\": 1, \"entries\": []}", 0600);
        assert_int_equal(rename(path, target), 0);
        assert_int_equal(symlink(target, path), 0);
        assert_int_equal(originals_load_checked(path, &o, &why), -ELOOP);
        assert_string_equal(why, "is a symbolic link");
        unlink(path);
        assert_int_equal(symlink("/dev/null", path), 0);
        assert_int_equal(originals_load_checked(path, &o, &why), -ELOOP);
        unlink(path);
        assert_null(o);

        /* A directory others may write to: whoever can write there could plant the file. */
        snprintf(dir, sizeof dir, "%s/run/peltd", tmpdir);
        assert_int_equal(chmod(dir, 0777), 0);
        assert_int_equal(originals_load_checked(path, &o, &why), -EPERM);
        assert_string_equal(why, "is writable by group or others");
        assert_int_equal(originals_lock_checked(path, &why), -EPERM);
        assert_int_equal(chmod(dir, 0755), 0);

        /* A symlink planted at the lock: refused, its target neither created nor locked. */
        snprintf(link, sizeof link, "%s.lock", path);
        unlink(link);
        snprintf(target, sizeof target, "%s/lock-target", tmpdir);
        assert_int_equal(symlink(target, link), 0);
        assert_int_equal(originals_lock_checked(path, &why), -ELOOP);
        assert_int_equal(access(target, F_OK), -1);
        unlink(link);
}

/* A symlink planted at StateFile.tmp: the save neither truncates its target nor renames the link in. */
static void test_tmp_symlink_left_alone(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        char tmp[400], target[400], buf[64] = {};
        struct stat st;
        FILE *f;

        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        snprintf(target, sizeof target, "%s/precious", tmpdir);
        f = fopen(target, "we");
        assert_non_null(f);
        fputs("precious\n", f);
        fclose(f);
        unlink(path);
        assert_int_equal(symlink(target, tmp), 0);

        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        assert_int_equal(originals_put(o, "cpu", "/a", "cpu.shares", "1024", "2048"), 0);
        assert_int_equal(originals_commit(o), 0);
        f = fopen(target, "re");
        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof buf, f));
        fclose(f);
        assert_string_equal(buf, "precious\n");
        /* The state file is a regular file of its own, not the link. */
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(originals_drop(o, "cpu", "/a", "cpu.shares"), 0);
        assert_int_equal(originals_commit(o), 0);
        unlink(target);
}

/* originals_parse() reads n bytes and no more: text after the JSON need not end in a NUL. */
static void test_parse_exact_buffer(_unused_ void **state) {
        static const char json[] = "{\"version\": 1, \"entries\": []}\n \n";
        static const char junk[] = "{\"version\": 1, \"entries\": []}\n x";
        char *buf = malloc(sizeof json - 1);
        Originals *o = NULL;

        assert_non_null(buf);
        memcpy(buf, json, sizeof json - 1);
        assert_int_equal(originals_parse(path, buf, sizeof json - 1, &o), 0);
        assert_int_equal(o->n_entries, 0);
        originals_free(o);
        o = NULL;
        free(buf);
        buf = malloc(sizeof junk - 1);
        assert_non_null(buf);
        memcpy(buf, junk, sizeof junk - 1);
        assert_int_equal(originals_parse(path, buf, sizeof junk - 1, &o), -EBADMSG);
        free(buf);
}

/* Changes staged in memory reach the disk together, in one save, and only when something changed. */
static void test_staged_changes_saved_once(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        unsigned saves;
        struct stat st;
        char group[32];

        unlink(path);
        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        for (int i = 0; i < 500; i++) {
                snprintf(group, sizeof group, "/g%d", i);
                assert_int_equal(originals_put(o, "cpuset", group, "cpuset.cpus", "0-3", "0"), 0);
                assert_int_equal(originals_put(o, "cpu", group, "cpu.shares", "1024", "2048"), 0);
        }
        assert_true(originals_dirty(o));
        /* Nothing on disk until the commit, then everything with one save. */
        assert_int_equal(stat(path, &st), -1);
        saves = o->n_saves;
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(o->n_saves, saves + 1);
        assert_false(originals_dirty(o));
        assert_int_equal(originals_load_checked(path, &again, NULL), 0);
        assert_int_equal(again->n_entries, 1000);
        assert_string_equal(originals_find(again, "cpu", "/g499", "cpu.shares")->written, "2048");
        originals_free(TAKE_PTR(again));

        /* Nothing changed: no save. The same written value again changes nothing either. */
        assert_int_equal(originals_put(o, "cpuset", "/g7", "cpuset.cpus", "1-2", "0"), 0);
        assert_false(originals_dirty(o));
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(o->n_saves, saves + 1);

        /* Someone else's value taken as the original, a new written value, a drop: one save. */
        assert_int_equal(originals_set_original(o, "cpuset", "/g7", "cpuset.cpus", "1-2"), 0);
        assert_int_equal(originals_put(o, "cpuset", "/g7", "cpuset.cpus", "9-9", "1"), 0);
        assert_int_equal(originals_drop(o, "cpu", "/g7", "cpu.shares"), 0);
        assert_int_equal(originals_set_original(o, "cpu", "/g7", "cpu.shares", "1"), -ENOENT);
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(o->n_saves, saves + 2);
        assert_int_equal(originals_load_checked(path, &again, NULL), 0);
        assert_int_equal(again->n_entries, 999);
        assert_string_equal(originals_find(again, "cpuset", "/g7", "cpuset.cpus")->original, "1-2");
        assert_string_equal(originals_find(again, "cpuset", "/g7", "cpuset.cpus")->written, "1");
        assert_null(originals_find(again, "cpu", "/g7", "cpu.shares"));

        /* Everything dropped: the file goes, with one save. */
        while (o->n_entries > 0)
                assert_int_equal(originals_drop(o, o->entries[0].hierarchy, o->entries[0].group, o->entries[0].file), 0);
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(o->n_saves, saves + 3);
        assert_int_equal(stat(path, &st), -1);
}

/*
 * A commit that cannot be saved keeps every change in memory, unsaved: the next commit saves them
 * again, and never says "saved" with nothing written. The caller takes back what it staged for its
 * own writes (to its mark); older changes stay.
 */
static void test_failed_commit_keeps_changes_unsaved(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        char *saved_path;
        unsigned saves;
        size_t mark;

        unlink(path);
        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        assert_int_equal(originals_put(o, "cpuset", "/a", "cpuset.cpus", "0-3", "0"), 0);
        assert_int_equal(originals_put(o, "cpuset", "/b", "cpuset.cpus", "0-3", "1"), 0);
        assert_int_equal(originals_put(o, "cpu", "/b", "cpu.shares", "1024", "512"), 0);
        assert_int_equal(originals_commit(o), 0);

        /* Unwritable from now on (/proc takes no new files). */
        saved_path = o->path;
        o->path = strdup("/proc/peltd-test/originals");
        assert_non_null(o->path);

        /* Before the round: someone else's value taken as /b's original, and a record dropped. */
        assert_int_equal(originals_set_original(o, "cpuset", "/b", "cpuset.cpus", "3"), 0);
        assert_int_equal(originals_drop(o, "cpu", "/b", "cpu.shares"), 0);
        /* The round's own records. */
        mark = originals_mark(o);
        assert_int_equal(originals_put(o, "cpuset", "/a", "cpuset.cpus", "0-3", "2"), 0);
        assert_int_equal(originals_put(o, "cpuset", "/c", "cpuset.cpus", "0-3", "3"), 0);
        assert_int_equal(originals_drop(o, "cpuset", "/c", "cpuset.cpus"), 0);
        assert_int_equal(originals_put(o, "cpuset", "/d", "cpuset.cpus", "0-3", "3"), 0);
        saves = o->n_saves;
        assert_true(originals_commit(o) < 0);
        assert_int_equal(o->n_saves, saves);

        /* Nothing taken back by the failure itself. */
        assert_true(originals_dirty(o));
        assert_string_equal(originals_find(o, "cpuset", "/a", "cpuset.cpus")->written, "2");
        assert_non_null(originals_find(o, "cpuset", "/d", "cpuset.cpus"));

        /* The round's records taken back; what came before stays, unsaved. */
        originals_rollback_to(o, mark);
        assert_true(originals_dirty(o));
        assert_int_equal(o->n_entries, 2);
        assert_string_equal(originals_find(o, "cpuset", "/a", "cpuset.cpus")->written, "0");
        assert_string_equal(originals_find(o, "cpuset", "/b", "cpuset.cpus")->original, "3");
        assert_null(originals_find(o, "cpu", "/b", "cpu.shares"));
        assert_null(originals_find(o, "cpuset", "/c", "cpuset.cpus"));
        assert_null(originals_find(o, "cpuset", "/d", "cpuset.cpus"));

        /* Still unwritable: the next commit tries again, and fails again, with nothing written. */
        assert_true(originals_commit(o) < 0);
        assert_true(originals_dirty(o));

        /* Room again: the next commit saves what was kept, though the round staged nothing new. */
        free(o->path);
        o->path = saved_path;
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(o->n_saves, saves + 1);
        assert_false(originals_dirty(o));
        assert_int_equal(originals_load_checked(path, &again, NULL), 0);
        assert_int_equal(again->n_entries, 2);
        assert_string_equal(originals_find(again, "cpuset", "/b", "cpuset.cpus")->original, "3");
        assert_string_equal(originals_find(again, "cpuset", "/a", "cpuset.cpus")->written, "0");
        assert_null(originals_find(again, "cpu", "/b", "cpu.shares"));

        /* A mark after everything takes back nothing; a full rollback after a save takes back nothing. */
        originals_rollback_to(o, originals_mark(o));
        originals_rollback(o);
        assert_int_equal(o->n_entries, 2);
        assert_int_equal(originals_drop(o, "cpuset", "/a", "cpuset.cpus"), 0);
        assert_int_equal(originals_drop(o, "cpuset", "/b", "cpuset.cpus"), 0);
        assert_int_equal(originals_commit(o), 0);
}

/* A renamed group's entries move, with their descendants', in one hierarchy; taken back as a whole. */
static void test_rename(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        size_t mark;

        unlink(path);
        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        assert_int_equal(originals_put(o, "cpuset", "/p/a", "cpuset.cpus", "0-3", "0"), 0);
        assert_int_equal(originals_put(o, "cpuset", "/p/a/x", "cpuset.cpus", "2-3", "0"), 0);
        assert_int_equal(originals_put(o, "cpuset", "/p/ab", "cpuset.cpus", "0-3", "1"), 0);
        assert_int_equal(originals_put(o, "cpu", "/p/a", "cpu.shares", "1024", "512"), 0);
        assert_int_equal(originals_commit(o), 0);

        /* Nothing to move: none at that path, or the same path. */
        assert_int_equal(originals_rename(o, "cpuset", "/q", "/r"), 0);
        assert_int_equal(originals_rename(o, "cpuset", "/p/a", "/p/a"), 0);
        assert_false(originals_dirty(o));

        /* A new key taken already: nothing moves. */
        assert_int_equal(originals_rename(o, "cpuset", "/p/a", "/p/ab"), -EEXIST);
        assert_false(originals_dirty(o));
        assert_int_equal(o->n_entries, 4);

        /* cpuset's /p/a and its child move; /p/ab (a sibling sharing the prefix) and cpu's /p/a stay. */
        mark = originals_mark(o);
        assert_int_equal(originals_rename(o, "cpuset", "/p/a", "/moved"), 2);
        assert_int_equal(o->n_entries, 4);
        assert_null(originals_find(o, "cpuset", "/p/a", "cpuset.cpus"));
        assert_null(originals_find(o, "cpuset", "/p/a/x", "cpuset.cpus"));
        assert_string_equal(originals_find(o, "cpuset", "/moved", "cpuset.cpus")->original, "0-3");
        assert_string_equal(originals_find(o, "cpuset", "/moved", "cpuset.cpus")->written, "0");
        assert_string_equal(originals_find(o, "cpuset", "/moved/x", "cpuset.cpus")->original, "2-3");
        assert_non_null(originals_find(o, "cpuset", "/p/ab", "cpuset.cpus"));
        assert_non_null(originals_find(o, "cpu", "/p/a", "cpu.shares"));

        /* Taken back, as it was. */
        originals_rollback_to(o, mark);
        assert_false(originals_dirty(o));
        assert_int_equal(o->n_entries, 4);
        assert_string_equal(originals_find(o, "cpuset", "/p/a/x", "cpuset.cpus")->original, "2-3");
        assert_null(originals_find(o, "cpuset", "/moved", "cpuset.cpus"));

        /* Again, saved: what a restart (or --restore) reads. */
        assert_int_equal(originals_rename(o, "cpuset", "/p/a", "/moved"), 2);
        assert_int_equal(originals_rename(o, "cpu", "/p/a", "/moved"), 1);
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(originals_load_checked(path, &again, NULL), 0);
        assert_int_equal(again->n_entries, 4);
        assert_string_equal(originals_find(again, "cpu", "/moved", "cpu.shares")->original, "1024");
        assert_string_equal(originals_find(again, "cpuset", "/moved/x", "cpuset.cpus")->written, "0");
        assert_null(originals_find(again, "cpu", "/p/a", "cpu.shares"));
        while (o->n_entries > 0)
                assert_int_equal(originals_drop(o, o->entries[0].hierarchy, o->entries[0].group, o->entries[0].file), 0);
        assert_int_equal(originals_commit(o), 0);
}

/* The index against a plain search, through thousands of adds and drops in a shuffled order. */
static void test_index_many_entries(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        enum { N = 6000 };
        static bool present[N];
        char group[32];
        unsigned seed = 12345;
        static const char empty[] = "{\"version\": 1, \"entries\": []}";

        assert_int_equal(originals_parse(path, empty, sizeof empty - 1, &o), 0);
        for (int round = 0; round < 4; round++)
                for (int k = 0; k < N; k++) {
                        int i;

                        seed = seed * 1103515245u + 12345u;
                        i = (int) ((seed >> 8) % N);
                        snprintf(group, sizeof group, "/g%d", i);
                        if (present[i])
                                assert_int_equal(originals_drop(o, "cpuset", group, "cpuset.cpus"), 0);
                        else
                                assert_int_equal(originals_put(o, "cpuset", group, "cpuset.cpus", "0-1", group), 0);
                        present[i] = !present[i];
                }
        for (int i = 0, n = 0; i < N; i++) {
                const Original *e;
                bool found = false;

                snprintf(group, sizeof group, "/g%d", i);
                e = originals_find(o, "cpuset", group, "cpuset.cpus");
                for (size_t j = 0; j < o->n_entries; j++)
                        found |= streq(o->entries[j].group, group);
                assert_int_equal(!!e, present[i]);
                assert_int_equal(found, present[i]);
                if (e)
                        assert_string_equal(e->written, group);
                assert_null(originals_find(o, "cpu", group, "cpuset.cpus"));
                n += present[i];
                if (i == N - 1)
                        assert_int_equal(o->n_entries, (size_t) n);
        }
}

/*
 * The state file at its size limit, as the writer makes it over deep chains of groups: read back
 * whole (the reader's bound is the writer's), and one byte over it refused.
 */
static void test_state_file_at_limit(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        _cleanup_free_ char *huge = NULL;
        char group[400], *p;
        size_t n = 0, mark;
        struct stat st;
        const char *why = NULL;
        FILE *f;

        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        /* A chain 20 deep, and groups under each level. */
        p = stpcpy(group, "/peltd.slice");
        for (int level = 0; level < 20; level++)
                p += sprintf(p, "/chain-level-%02d", level);
        /* 1024 entries show an entry's size; then as many as make the file some 15.5 MiB, saved once. */
        for (size_t want = 1024; n < want;) {
                char g[500];

                snprintf(g, sizeof g, "%s/group-%zu", group, n++);
                assert_int_equal(originals_put(o, "cpuset", g, "cpuset.cpus", "0-127", "0-3"), 0);
                if (n == 1024) {
                        assert_int_equal(originals_commit(o), 0);
                        assert_int_equal(stat(path, &st), 0);
                        want = (STATE_FILE_MAX - STATE_FILE_MAX / 32) / ((size_t) st.st_size / 1024 + 2);
                }
        }
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_true((size_t) st.st_size > 4 * 1024 * 1024);

        /* Made exactly STATE_FILE_MAX bytes long (trailing white space is allowed): read back whole. */
        assert_non_null(f = fopen(path, "ae"));
        for (size_t k = (size_t) st.st_size; k < STATE_FILE_MAX; k++)
                fputc('\n', f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal((size_t) st.st_size, STATE_FILE_MAX);
        assert_int_equal(originals_load_checked(path, &again, NULL), 0);
        assert_int_equal(again->n_entries, n);
        again = originals_free(again);

        /* One byte more is not a file peltd wrote. */
        assert_non_null(f = fopen(path, "ae"));
        fputc('\n', f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(originals_load_checked(path, &again, &why), -EPERM);
        assert_string_equal(why, "is too large");

        /* Nor does the writer make one: the change stays unsaved, for the caller to take back. */
        assert_non_null(huge = malloc(STATE_FILE_MAX + 1));
        memset(huge, '1', STATE_FILE_MAX);
        huge[STATE_FILE_MAX] = 0;
        mark = originals_mark(o);
        assert_int_equal(originals_put(o, "cpu", "/big", "cpu.shares", huge, "2"), 0);
        assert_int_equal(originals_commit(o), -EFBIG);
        assert_true(originals_dirty(o));
        originals_rollback_to(o, mark);
        assert_null(originals_find(o, "cpu", "/big", "cpu.shares"));
        assert_false(originals_dirty(o));
        assert_int_equal(unlink(path), 0);
}

/*
 * An entry that breaks a rule is refused on its own, named by its index, and the rest are taken:
 * a value that is not a string, an entry that is not an object, a NUL in a string ("\u0000", which
 * json-c keeps), a key given twice (json-c keeps the last). The refused entries stay in the file,
 * byte for byte, through saves; the file is not removed while one is left.
 */
static void test_bad_entries_refused_alone(_unused_ void **state) {
        static const char text[] =
                "{\"version\": 1, \"entries\": [\n"
                " {\"hierarchy\": \"cpuset\", \"group\": \"/a\", \"file\": \"cpuset.cpus\", \"original\": \"0-3\", \"written\": \"0\"},\n"
                " {\"hierarchy\": \"cpuset\", \"group\": \"/b\", \"file\": \"cpuset.cpus\", \"original\": 7, \"written\": \"0\"},\n"
                " 7,\n"
                " {\"hierarchy\": \"cpuset\", \"group\": \"/c\", \"file\": \"cpuset.cpus\\u0000x\", \"original\": \"0-3\", \"written\": \"0\"},\n"
                " {\"hierarchy\": \"cpuset\", \"group\": \"/d\", \"group\": \"/e\", \"file\": \"cpuset.cpus\", \"original\": \"0-3\", \"written\": \"0\"},\n"
                " {\"hierarchy\": \"cpu\", \"group\": \"/a\", \"file\": \"cpu.shares\", \"original\": \"1024\", \"written\": \"2\"}\n"
                "]}\n";
        static const char *const why[] = { "entry 1: ", "entry 2: not an object", "entry 3: a field holds a NUL byte",
                                           "entry 4: a key given twice" };
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        _cleanup_free_ char *saved = NULL;
        struct stat st;
        FILE *f;

        assert_non_null(f = fopen(path, "we"));
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(path, 0600), 0);
        assert_int_equal(originals_load_checked(path, &o, NULL), 0);
        assert_int_equal(o->n_entries, 2);
        assert_non_null(originals_find(o, "cpuset", "/a", "cpuset.cpus"));
        assert_non_null(originals_find(o, "cpu", "/a", "cpu.shares"));
        assert_null(originals_find(o, "cpuset", "/c", "cpuset.cpus"));
        assert_null(originals_find(o, "cpuset", "/e", "cpuset.cpus"));
        assert_int_equal(o->n_refused, ELEMENTSOF(why));
        for (size_t i = 0; i < ELEMENTSOF(why); i++)
                assert_true(strncmp(o->refused[i], why[i], strlen(why[i])) == 0);

        /* Every valid entry restored (dropped): the refused ones stay, as they were. */
        assert_int_equal(originals_drop(o, "cpuset", "/a", "cpuset.cpus"), 0);
        assert_int_equal(originals_drop(o, "cpu", "/a", "cpu.shares"), 0);
        assert_int_equal(originals_commit(o), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(originals_load_checked(path, &again, NULL), 0);
        assert_int_equal(again->n_entries, 0);
        assert_int_equal(again->n_refused, ELEMENTSOF(why));
        /* The same reasons (the indexes are the saved file's: the refused entries come last). */
        for (size_t i = 0; i < ELEMENTSOF(why); i++)
                assert_non_null(strstr(again->refused[i], why[i] + strlen("entry N: ")));
        assert_non_null(f = fopen(path, "re"));
        assert_true(getdelim(&saved, &(size_t){ 0 }, 0, f) > 0);
        fclose(f);
        assert_non_null(strstr(saved, "\"group\": \"/d\", \"group\": \"/e\""));
        assert_non_null(strstr(saved, "cpuset.cpus\\u0000x"));
        assert_int_equal(unlink(path), 0);
}

static int setup(_unused_ void **state) {
        if (!test_mkdtemp(tmpdir))
                return -1;
        /* A directory that does not exist yet: the lock and the save create it. */
        snprintf(path, sizeof path, "%s/run/peltd/originals", tmpdir);
        return 0;
}

static int teardown(_unused_ void **state) {
        char cmd[400];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lock_is_exclusive),
                cmocka_unit_test(test_record_reload_forget),
                cmocka_unit_test(test_values_with_odd_characters),
                cmocka_unit_test(test_every_byte_in_a_name),
                cmocka_unit_test(test_bad_file),
                cmocka_unit_test(test_unwritable_records_nothing),
                cmocka_unit_test(test_forged_entries_refused),
                cmocka_unit_test(test_untrusted_state_files),
                cmocka_unit_test(test_tmp_symlink_left_alone),
                cmocka_unit_test(test_parse_exact_buffer),
                cmocka_unit_test(test_staged_changes_saved_once),
                cmocka_unit_test(test_failed_commit_keeps_changes_unsaved),
                cmocka_unit_test(test_rename),
                cmocka_unit_test(test_index_many_entries),
                cmocka_unit_test(test_state_file_at_limit),
                cmocka_unit_test(test_bad_entries_refused_alone),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
