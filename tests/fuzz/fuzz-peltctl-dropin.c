/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * peltctl's drop-in editor (peltctl-dropin.c) on any text an operator may have left in
 * 90-peltctl.conf. The input is split at the byte 0x01 into the file's text and a group path.
 * Whatever the text: each edit succeeds and gives a text that starts with the header and ends in a
 * newline. Where peltd reads the text (config_load_files(), as the drop-in of an empty
 * configuration), the same edit again changes nothing, and peltd reads the edited text too, with
 * the policy set, and the group's shares set and then gone again. (Where peltd does not read it,
 * lines it refuses make what an indented line continues a guess.)
 */
#include "fuzz-util.h"
#include "peltd/config-file.h"
#include "peltd/config.h"
#include "peltd/macro.h"
#include "peltd/peltctl-dropin.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

/* text as CONFIG_DIR/peltd.conf.d/90-peltctl.conf, read as peltd reads it; NULL where it does not. */
static Config *load(const char *dir, const char *text) {
        _cleanup_free_ char *dropins = NULL;
        Config *c = NULL;

        fuzz_write_file(dir, "peltd.conf.d/" DROPIN_NAME, text, strlen(text), 0644);
        FUZZ_CHECK(asprintf(&dropins, "%s/peltd.conf.d", dir) > 0);
        if (config_load_files("/nonexistent/peltd.conf", dropins, &c) < 0)
                return NULL;
        return c;
}

static void check_text(const char *s) {
        size_t n = strlen(s);

        FUZZ_CHECK(strncmp(s, DROPIN_HEADER, strlen(DROPIN_HEADER)) == 0);
        FUZZ_CHECK(n > 0 && s[n - 1] == '\n');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *dir = fuzz_private_dir();
        _cleanup_free_ char *text = NULL, *path = NULL, *a = NULL, *a2 = NULL, *b = NULL, *b2 = NULL, *z = NULL;
        _cleanup_config_ Config *c0 = NULL, *ca = NULL, *cb = NULL, *cz = NULL;
        const char *why;
        FuzzPiece p[2];
        size_t n = fuzz_split(data, size, 0x01, p, ELEMENTSOF(p));

        text = fuzz_string(p[0].data, p[0].size);
        path = n > 1 ? fuzz_string(p[1].data, p[1].size) : strdup("/fuzz/web");
        FUZZ_CHECK(path);

        FUZZ_CHECK(dropin_set_policy(text, "power", &a) == 0);
        check_text(a);
        FUZZ_CHECK(dropin_set_policy(a, "power", &a2) == 0);

        c0 = load(dir, text);
        if (c0) {
                FUZZ_CHECK(streq(a, a2));
                ca = load(dir, a);
                FUZZ_CHECK(ca && ca->policy == POLICY_POWER);
        }
        if (dropin_check_group_path(path, &why) < 0) {
                FUZZ_CHECK(why && *why);
                FUZZ_CHECK(dropin_set_shares(a, path, 500, &b) == -EINVAL);
                return 0;
        }

        FUZZ_CHECK(dropin_set_shares(a, path, 500, &b) == 0);
        check_text(b);
        FUZZ_CHECK(dropin_set_shares(b, path, 500, &b2) == 0);
        FUZZ_CHECK(!ca || streq(b, b2));
        FUZZ_CHECK(dropin_set_shares(b, path, 0, &z) == 0);
        check_text(z);
        if (ca) {
                const GroupConfig *g;

                /* CgroupRoot= may put the path outside what peltd takes: then it refuses the file. */
                cb = load(dir, b);
                if (cb) {
                        FUZZ_CHECK(cb->policy == POLICY_POWER);
                        g = config_find_group(cb, path);
                        FUZZ_CHECK(g && g->shares == 500);
                        cz = load(dir, z);
                        FUZZ_CHECK(cz && cz->policy == POLICY_POWER);
                        g = config_find_group(cz, path);
                        FUZZ_CHECK(!g || g->shares == 0);
                }
        }
        return 0;
}
