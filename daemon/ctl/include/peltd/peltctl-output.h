/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "peltd/peltctl-table.h"

/*
 * What peltctl writes on stdout: labelled fields and the groups' table for a terminal (text
 * sanitized, peltctl-text.h), or JSON (--json). Functions returning int give 0, or a negative
 * errno after logging (out of memory).
 */

/* The columns of stdout when it is a terminal wider than 80, else 80. */
size_t text_width_of_stdout(void);

/* "   Label: value", the value sanitized and wrapped under itself. */
void print_field(const char *label, const char *value, size_t width);

/* The groups' table on stdout (table_print()); 0, or -ENOMEM after logging. */
int print_table(const Row *rows, size_t n, size_t width);

/* The shortest decimal that reads back as v; NULL for NaN or infinity, which JSON has not. */
json_object *json_double(double v);

/* Adds v under key, taking ownership of v in every case; -ENOMEM (not logged) when v is NULL. */
int json_add(json_object *o, const char *key, json_object *v);

/* o on a line of its own, pretty or (one_line) plain. */
int json_print(json_object *o, bool one_line);

/*
 * A group, and the groups, with the D-Bus fields in snake_case: those of ListGroups, then (from
 * ListGroupDetails) owner, pressure_usec, changes and last_change_usec. NULL when out of memory.
 */
json_object *row_to_json(const Row *row);
json_object *rows_to_json(const Row *rows, size_t n);
