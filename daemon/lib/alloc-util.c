/* SPDX-License-Identifier: GPL-2.0-only */
#include "peltd/alloc-util.h"
#include "peltd/macro.h"

int array_reserve(void **p, size_t *allocated, size_t need, size_t size, size_t min) {
        size_t n;
        void *q;

        if (need <= *allocated)
                return 0;
        n = MAX(MAX(need, min), *allocated > SIZE_MAX / 2 ? SIZE_MAX : *allocated * 2);
        if (size > 0 && n > SIZE_MAX / size)
                return -ENOMEM;
        q = realloc(*p, n * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *allocated = n;
        return 0;
}
