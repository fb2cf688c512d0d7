/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <json-c/json.h>

/*
 * The topology as peltctl shows it, from the daemon's GetTopology document (peltd(8): the
 * "peltd --print-topology --json" document), without the daemon's topology code.
 *
 * topology_json_to_text() writes the lines of "peltd --print-topology" that the document holds the
 * facts of, each as peltd writes it: the headline, online CPUs, packages, dies, clusters, cores,
 * LLC groups, NUMA nodes (and CPUs in no node); "capacity" without where the capacities came
 * from ("(asymmetric)" when they differ); and, in place of peltd's "freq domains", "max freq"
 * (the CPUs by highest frequency; the document has no frequency domains). Isolated CPUs and idle
 * states are not in the document, so their lines are left out.
 *
 * topology_json_summary() is one line for "peltctl status": "8 CPUs, 2 packages, 8 cores,
 * 1 NUMA node, 2 capacity classes, asymmetric".
 *
 * Both return 0, -EINVAL when the document is not shaped as the contract says, or -ENOMEM.
 * Pure: no I/O, no logging.
 */
int topology_json_to_text(json_object *doc, char **ret);
int topology_json_summary(json_object *doc, char **ret);
