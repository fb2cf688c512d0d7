/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stddef.h>

/*
 * Room for need elements of size bytes each in *p, which has room for *allocated: grown to twice
 * that, and to at least min and need. Returns 0, or -ENOMEM with *p and *allocated as they were.
 */
int array_reserve(void **p, size_t *allocated, size_t need, size_t size, size_t min);

/* array_reserve() for an array p of whatever type, with its count of allocated elements. */
#define ARRAY_RESERVE(p, allocated, need, min) array_reserve((void **) &(p), &(allocated), (need), sizeof *(p), (min))
