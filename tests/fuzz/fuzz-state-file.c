/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The state file's bytes, as originals_parse() takes them (the loader reads the file whole and
 * hands it over). Whatever it keeps must pass the confinement rules: every kept entry names a file
 * peltd places, of a normalized group path; every refused one (a value not a string, a NUL in a
 * string, a key given twice, a file peltd does not place) is described and its bytes kept; and
 * a file is refused whole only when it is not a state file as a whole.
 */
#include "fuzz-util.h"
#include "peltd/originals.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Originals *o = NULL;
        int r;

        r = originals_parse("/nonexistent/originals", (const char *) data, size, &o);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r < 0) {
                FUZZ_CHECK(!o);
                return 0;
        }
        for (size_t i = 0; i < o->n_entries; i++) {
                const Original *e = &o->entries[i];

                FUZZ_CHECK(e->hierarchy && e->group && e->file && e->original && e->written);
                FUZZ_CHECK(!original_check(e));
        }
        for (size_t i = 0; i < o->n_refused; i++) {
                FUZZ_CHECK(o->refused[i] && strncmp(o->refused[i], "entry ", 6) == 0);
                FUZZ_CHECK(o->refused_json[i] && o->refused_json[i][0]);
        }
        originals_free(o);
        return 0;
}
