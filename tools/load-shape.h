/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * A load's shape over time, in CPUs: what tools/load-shape runs and what bench/loop expects of it.
 * Both parse the same text, so the bench knows the demand at every moment without asking the tool.
 *
 *   const:C                      C CPUs all the time
 *   square:LOW:HIGH:PERIOD       LOW for the first half of every PERIOD seconds, HIGH for the second
 *   walk:LOW:HIGH[:STEP[:SEED]]  a random walk between LOW and HIGH: it starts half-way and every
 *                                STEP seconds (1) moves by a uniform amount of at most a quarter of
 *                                HIGH - LOW, reflected at the bounds; SEED (1) makes it repeat
 *   steps:V0[,T=V]...            V0 from the start, V from T seconds on (T ascending), e.g.
 *                                steps:0.2,4=2 (a step up at 4 s)
 *
 * Values are CPUs (0 to 1024), times seconds; time 0 is when the tool started its threads.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SHAPE_MAX_STEPS 64
#define SHAPE_WALK_STEPS 65536 /* a walk repeats after this many steps */

typedef enum ShapeKind {
        SHAPE_CONST,
        SHAPE_SQUARE,
        SHAPE_WALK,
        SHAPE_STEPS,
} ShapeKind;

typedef struct Shape {
        ShapeKind kind;
        double low, high;  /* const: low; square, walk: the bounds */
        double period;     /* square: the period; walk: the step */
        uint64_t seed;
        double *walk;      /* walk: the level of each step */
        size_t n;          /* steps: how many levels */
        double at[SHAPE_MAX_STEPS], level[SHAPE_MAX_STEPS];
} Shape;

/* A number that is the whole of [s, end) or up to the next ':' / ',' / '=' (in *s on return). */
static inline int shape_number(const char **s, double *ret) {
        char *end;
        double v;

        errno = 0;
        v = strtod(*s, &end);
        if (errno || end == *s || !isfinite(v) || v < 0 || v > 1e9 || (*end && !strchr(":,=", *end)))
                return -EINVAL;
        *s = end;
        *ret = v;
        return 0;
}

static inline uint64_t shape_xorshift(uint64_t *x) {
        *x ^= *x >> 12;
        *x ^= *x << 25;
        *x ^= *x >> 27;
        return *x * 0x2545F4914F6CDD1DULL;
}

static inline int shape_walk_fill(Shape *s) {
        uint64_t x = s->seed * 0x9E3779B97F4A7C15ULL + 1;
        double v = (s->low + s->high) / 2, span = (s->high - s->low) / 4;

        s->walk = malloc(SHAPE_WALK_STEPS * sizeof *s->walk);
        if (!s->walk)
                return -ENOMEM;
        for (size_t k = 0; k < SHAPE_WALK_STEPS; k++) {
                double u = (double) (shape_xorshift(&x) >> 11) / 9007199254740992.0; /* [0, 1) */

                s->walk[k] = v;
                v += (2 * u - 1) * span;
                if (v > s->high)
                        v = 2 * s->high - v;
                if (v < s->low)
                        v = 2 * s->low - v;
        }
        return 0;
}

static inline int shape_parse_steps(const char *p, Shape *s) {
        s->kind = SHAPE_STEPS;
        s->at[0] = 0;
        if (shape_number(&p, &s->level[0]) < 0)
                return -EINVAL;
        s->n = 1;
        while (*p == ',') {
                p++;
                if (s->n == SHAPE_MAX_STEPS || shape_number(&p, &s->at[s->n]) < 0 || *p++ != '=' ||
                    shape_number(&p, &s->level[s->n]) < 0 || s->at[s->n] <= s->at[s->n - 1])
                        return -EINVAL;
                s->n++;
        }
        return *p ? -EINVAL : 0;
}

/* Parses text into *s (free with shape_free()); -EINVAL where it is no shape. */
static inline int shape_parse(const char *text, Shape *s) {
        const char *p;
        double v[4];
        size_t n = 0;

        *s = (Shape){ .seed = 1, .period = 1 };
        if (strncmp(text, "steps:", 6) == 0)
                return shape_parse_steps(text + 6, s);
        p = strchr(text, ':');
        if (!p)
                return -EINVAL;
        for (p++;; p++) {
                if (n == 4 || shape_number(&p, &v[n++]) < 0)
                        return -EINVAL;
                if (*p != ':')
                        break;
        }
        if (*p)
                return -EINVAL;
        if (strncmp(text, "const:", 6) == 0 && n == 1) {
                s->kind = SHAPE_CONST;
                s->low = s->high = v[0];
        } else if (strncmp(text, "square:", 7) == 0 && n == 3 && v[2] > 0) {
                s->kind = SHAPE_SQUARE;
                s->low = v[0], s->high = v[1], s->period = v[2];
        } else if (strncmp(text, "walk:", 5) == 0 && n >= 2 && v[0] <= v[1] && (n < 3 || v[2] > 0)) {
                s->kind = SHAPE_WALK;
                s->low = v[0], s->high = v[1];
                if (n >= 3)
                        s->period = v[2];
                if (n == 4)
                        s->seed = (uint64_t) v[3];
                return shape_walk_fill(s);
        } else
                return -EINVAL;
        return 0;
}

static inline void shape_free(Shape *s) {
        free(s->walk);
        s->walk = NULL;
}

/* The demand at t seconds, in CPUs. */
static inline double shape_at(const Shape *s, double t) {
        size_t k;

        if (t < 0)
                t = 0;
        switch (s->kind) {
        case SHAPE_CONST:
                return s->low;
        case SHAPE_SQUARE:
                return fmod(t, s->period) < s->period / 2 ? s->low : s->high;
        case SHAPE_WALK:
                return s->walk[(size_t) (t / s->period) % SHAPE_WALK_STEPS];
        case SHAPE_STEPS:
                for (k = s->n; k > 1 && t < s->at[k - 1]; k--)
                        ;
                return s->level[k - 1];
        }
        return 0;
}

/* The largest demand the shape ever asks for. */
static inline double shape_max(const Shape *s) {
        double m = s->high;

        if (s->kind == SHAPE_STEPS)
                for (size_t k = 0; k < s->n; k++)
                        m = fmax(m, s->level[k]);
        return m;
}
