#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The Grafana dashboard and the alerting rules (conf/grafana/peltd.json, conf/prometheus/) against a
# real Prometheus: peltd runs on a private cgroup subtree of the real kernel with a busy group and an
# idle one; node_exporter's textfile collector serves its metrics file; Prometheus (its storage in
# the scratch directory) scrapes that every second and evaluates the rules. Every query of every
# panel, its dashboard variables replaced as Grafana does for "All", is sent to /api/v1/query and
# must return data, but for the panels listed below whose metric has no sample here, which must
# return none; the variables' own queries must list the node and the groups; the rules evaluate
# without error and the ones that watch peltd's liveness stay quiet; promtool check rules and
# promtool test rules pass. node_exporter and Prometheus listen on 127.0.0.1 only, on ports free
# at the time; every process started is stopped at exit, on failure too. At most a minute once the
# machine lock is held. The last line: "N passed, N failed".
#
#   test-prometheus.sh PELTD DUTY_CYCLE SOURCE_ROOT
set -u
exec 2>&1
peltd=$1
duty=$2
root=$3
here=$(dirname "$(readlink -f "$0")")
dashboard=$root/conf/grafana/peltd.json
rules=$root/conf/prometheus/peltd-rules.yml
rules_test=$root/conf/prometheus/peltd-rules.test.yml
limit=60

# Panels whose queries return no data here: peltd writes the metric each needs only for what this
# test does not make (peltd_group_owner_info: a group owned elsewhere; this subtree's groups are
# peltd's). The test fails once the metrics file has it: take the panel off the list then.
declare -A no_sample=(
        ["Groups owned elsewhere, all nodes"]=peltd_group_owner_info
        ["Groups owned elsewhere"]=peltd_group_owner_info
)

for tool in prometheus promtool prometheus-node-exporter curl jq python3; do
        if ! command -v "$tool" >/dev/null; then
                echo "FAIL: $tool is missing (scripts/lib.sh installs it)"
                echo "0 passed, 1 failed"
                exit 1
        fi
done

. "$here/../lib/machine-lock.sh"
SECONDS=0
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

passes=0
pass() {
        echo "ok: $*"
        passes=$((passes + 1))
}
# Not daemon-lib.sh's fail: the daemon's log follows the first failure only.
fail() {
        echo "FAIL: $*"
        if ((failures++ == 0)); then
                echo "---- peltd log ----"
                tail -n 20 "$log" 2>/dev/null
                echo "-------------------"
        fi
}

daemon_test_begin prometheus
chmod 0755 "$tmp"
textfile_dir=$tmp/textfile
file=$textfile_dir/peltd.prom
exporter_pid=
prometheus_pid=
watchdog_pid=
promtool_pid=
workload_pids=()

# stop_pid PID: SIGTERM, and SIGKILL where it has not exited 5 s later.
stop_pid() {
        [[ -n $1 ]] || return 0
        kill -TERM "$1" 2>/dev/null
        for _ in $(seq 50); do
                kill -0 "$1" 2>/dev/null || break
                sleep 0.1
        done
        end_pids KILL "$1"
}
cleanup() {
        [[ -z $promtool_pid ]] || wait "$promtool_pid"
        stop_pid "$prometheus_pid"
        stop_pid "$exporter_pid"
        end_pids TERM "$watchdog_pid" "${workload_pids[@]}"
}
# The summary comes last, after every process is gone.
trap 'daemon_test_exit; echo "($SECONDS s since the machine lock)"; echo "$passes passed, $failures failed"' EXIT
trap 'fail "still running after $limit s: stopped"; exit 1' USR1
# The watchdog: its sleep ends with it, and holds no output of the test's open.
(
        trap 'kill "$sleep_pid" 2>/dev/null; exit 0' TERM
        sleep "$limit" &
        sleep_pid=$!
        wait "$sleep_pid" && kill -USR1 $$
) >/dev/null 2>&1 &
watchdog_pid=$!

# ---- The dashboard, read ------------------------------------------------------------------------
if ! jq -e . "$dashboard" >/dev/null; then
        fail "$dashboard is not JSON"
        exit 1
fi
jqe() { jq -e "$@" >/dev/null; }
# jq: every panel, those of collapsed rows too; vars, the query variables' names and "All" values;
# subst, a query with each variable replaced by its "All" value, as Grafana sends it.
defs='def panels: [.panels[] | ., (.panels[]?)] | map(select(.type != "row"));
      def vars: [.templating.list[] | select(.type == "query") | {name, value: .allValue}];
      def subst($vars): reduce $vars[] as $v (.; gsub("\\$(\\{" + $v.name + "\\}|" + $v.name + "\\b)"; $v.value));'
check "the dashboard: a title, a uid, every panel id and title unique" \
        jqe "$defs"'panels as $p | (.title | length > 0) and (.uid | length > 0)
                and ($p | map(.id) | unique | length) == ($p | length)
                and ($p | map(.title) | unique | length) == ($p | length)' "$dashboard"
# Importable into any Grafana: the data source is a variable, never a fixed uid.
check "a data source variable for Prometheus; every panel and query uses it" \
        jqe "$defs"'panels as $p
                | any(.templating.list[]; .name == "datasource" and .type == "datasource" and .query == "prometheus")
                and all($p[]; .datasource.uid == "${datasource}" and all(.targets[]; .datasource.uid == "${datasource}"))' \
        "$dashboard"
check "every query variable has an \"All\" with its value" \
        jqe '[.templating.list[] | select(.type == "query")] | length > 0 and all(.[]; .includeAll and (.allValue | length > 0))' \
        "$dashboard"
for title in "${!no_sample[@]}"; do
        check "\"$title\", listed as having no sample of ${no_sample[$title]}, is a panel querying it" \
                jqe --arg t "$title" --arg m "${no_sample[$title]}" \
                "$defs"'panels | any(.[]; .title == $t and any(.targets[]; .expr | contains($m)))' "$dashboard"
done

# Each query as Grafana sends it with every variable at "All"; $__rate_interval 10 s (Grafana makes it
# at least four scrape intervals: 4 s here, but scrapes come late on a busy machine). A line each:
# title, refId, expr, split by \x1f.
jq -r --arg rate 10s "$defs"'vars as $vars | panels[] | . as $p | .targets[]
        | [$p.title, .refId, (.expr | subst($vars) | gsub("\\$__rate_interval\\b"; $rate))] | join("\u001f")' \
        "$dashboard" > "$tmp/queries"
# The variables' own queries (label_values(SELECTOR, LABEL)), replaced likewise.
jq -r "$defs"'vars as $vars | .templating.list[] | select(.type == "query") | [.name, (.query | subst($vars))] | join("\u001f")' \
        "$dashboard" > "$tmp/variables"
n_queries=$(wc -l < "$tmp/queries")
left=$(cat "$tmp/queries" "$tmp/variables" | awk -F'\x1f' '$NF ~ /\$/ { print $1 " " ($3 == "" ? "" : $2) }' | paste -sd, -)
ok=no
((n_queries > 0)) && [[ -z $left ]] && ok=yes
check "$n_queries panel queries; every variable in them known${left:+; left: $left}" [ "$ok" = yes ]

# promtool needs no server: its checks of the rules run meanwhile (the tests from another
# directory: rule_files are relative to the test file).
(
        promtool check rules "$rules" > "$tmp/promtool-check.out" 2>&1
        echo $? > "$tmp/promtool-check.rc"
        cd / && promtool test rules "$rules_test" > "$tmp/promtool-test.out" 2>&1
        echo $? > "$tmp/promtool-test.rc"
) &
promtool_pid=$!

# ---- peltd on a private subtree: a busy group, an idle one ----------------------------------------
cg_create_top "/$id" "$all_cpus"
for g in busy idle; do cg_create "/$id/$g" "$all_cpus"; done
"$duty" 1 10000 50 >/dev/null &
workload_pids+=($!)
cg_attach "/$id/busy" "$!"
mkdir -m 0755 "$textfile_dir"
metrics_file=$file
write_config power TaskTracking=yes
start_daemon
wait_for 10 test -f "$file" || fail "no metrics file after 10 s"

# ---- node_exporter and Prometheus on 127.0.0.1 ---------------------------------------------------
free_port() {
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# serve NAME PATH COMMAND...: COMMAND, each "@PORT@" in it a port free a moment ago, in the background
# (output in $tmp/NAME.log) until http://127.0.0.1:PORT/PATH answers; port and server_pid say
# where. Another port where it could not listen (taken in between).
serve() {
        local name=$1 path=$2
        shift 2
        for _ in 1 2 3 4 5; do
                port=$(free_port)
                "${@//@PORT@/$port}" > "$tmp/$name.log" 2>&1 &
                server_pid=$!
                wait_for 15 bash -c "curl -sf -o /dev/null 'http://127.0.0.1:$port$path' || ! kill -0 $server_pid 2>/dev/null"
                kill -0 "$server_pid" 2>/dev/null && curl -sf -o /dev/null "http://127.0.0.1:$port$path" && return 0
                stop_pid "$server_pid"
                server_pid=
        done
        echo "---- $name's log ----"
        tail -n 10 "$tmp/$name.log"
        return 1
}

if serve node_exporter /metrics prometheus-node-exporter --web.listen-address=127.0.0.1:@PORT@ \
        --collector.disable-defaults --collector.textfile --collector.textfile.directory="$textfile_dir" \
        --web.disable-exporter-metrics; then
        exporter_pid=$server_pid
        exporter_port=$port
        pass "node_exporter serves $textfile_dir on 127.0.0.1:$exporter_port (the textfile collector alone)"
else
        fail "node_exporter did not start"
        exit 1
fi

cat > "$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $rules
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:$exporter_port"]
EOF
if serve prometheus /-/ready prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prometheus-data" \
        --web.listen-address=127.0.0.1:@PORT@ --log.level=warn; then
        prometheus_pid=$server_pid
        api=http://127.0.0.1:$port/api/v1
        pass "Prometheus ready on 127.0.0.1:$port, storage in $tmp/prometheus-data"
else
        fail "Prometheus did not start"
        exit 1
fi

# query EXPR: the API's answer to an instant query, as JSON (an error's too: no -f).
query() {
        curl -s --max-time 5 -G --data-urlencode "query=$1" "$api/query"
}
# samples EXPR: the first value of the answer ("" where none).
samples() {
        query "$1" | jq -r '.data.result[0].value[1] // empty'
}

# A few scrapes: enough for rates over 10 s.
if wait_for 20 bash -c "[[ \$(curl -sf -G --data-urlencode 'query=count_over_time(peltd_build_info[1m])' '$api/query' |
                              jq -r '.data.result[0].value[1] // 0') -ge 4 ]]"; then
        pass "Prometheus holds $(samples 'count_over_time(peltd_build_info[1m])') scrapes of peltd's metrics"
else
        fail "Prometheus has no 4 scrapes of peltd's metrics after 20 s: up $(samples up), $(tail -n 3 "$tmp/prometheus.log")"
fi

# ---- Every panel's query ---------------------------------------------------------------------------
while IFS=$'\x1f' read -r title ref expr; do
        answer=$(query "$expr")
        rc=$?
        # The status, the number of series (1 for a scalar) and the first one, or the error.
        status='' n=0 first='' error=''
        IFS=$'\x1f' read -r status n first error < <(jq -r '[.status, (.data.result | if type == "array" then length else 1 end),
                (.data.result | if type == "array" then (.[0] | if . then "\(.metric | del(.__name__) | tostring) \(.value[1])" else "" end)
                                else .[1] end), .error // ""] | join("\u001f")' <<< "$answer" 2>/dev/null)
        if [[ $rc -ne 0 || $status != success ]]; then
                fail "\"$title\" ($ref): the query failed (curl exit $rc, status '$status'${error:+: $error}): $expr"
        elif [[ -n ${no_sample[$title]:-} ]]; then
                metric=${no_sample[$title]}
                if grep -q "^${metric}[{ ]" "$file"; then
                        fail "\"$title\" ($ref): the metrics file now has $metric: take the panel off the list of those with no data"
                elif ((n > 0)); then
                        fail "\"$title\" ($ref): data ($n series) though $metric is not written: $expr"
                else
                        pass "\"$title\" ($ref): no data, as listed: nothing here makes a sample of $metric"
                fi
        elif ((n > 0)); then
                pass "\"$title\" ($ref): $n series, first: $first"
        else
                fail "\"$title\" ($ref): no data: $expr"
        fi
        printf '%s\t%s\t%s\t%s\n' "$title" "$ref" "$n" "$first" >> "$tmp/results.tsv"
done < "$tmp/queries"

# What the queries say matches the node.
result() { # TITLE: the first value its first query returned
        awk -F'\t' -v t="$1" '$1 == t { n = split($4, f, " "); print f[n]; exit }' "$tmp/results.tsv"
}
check "\"Nodes reporting\": $(result 'Nodes reporting') (one node)" [ "$(result 'Nodes reporting')" = 1 ]
check "\"Groups managed, all nodes\": $(result 'Groups managed, all nodes') (busy and idle)" \
        [ "$(result 'Groups managed, all nodes')" = 2 ]
s=$(result 'Estimated saving, all nodes')
check "\"Estimated saving, all nodes\": $s, from 0 to below 1 (busy on CPUs $(cpus_of busy), idle on $(cpus_of idle))" \
        awk -v s="$s" 'BEGIN { exit !(s != "" && s >= 0 && s < 1) }'

# The variables' queries, as Grafana runs them: the label's values among the selector's series.
while IFS=$'\x1f' read -r name q; do
        sel=$(sed -n 's/^label_values(\(.*\), *\([a-zA-Z_][a-zA-Z0-9_]*\))$/\1/p' <<< "$q")
        label=$(sed -n 's/^label_values(\(.*\), *\([a-zA-Z_][a-zA-Z0-9_]*\))$/\2/p' <<< "$q")
        values=$(curl -sf --max-time 5 -G --data-urlencode "match[]=$sel" "$api/label/$label/values" | jq -r '.data // [] | join(" ")')
        case $name in
        instance) want="127.0.0.1:$exporter_port" ;;
        group) want="/$id/busy /$id/idle" ;;
        *) want=$values ;;
        esac
        check "variable $name ($q): $values" [ "$values" = "$want" ]
done < "$tmp/variables"

# ---- The rules, loaded by this Prometheus ------------------------------------------------------------
rules_json=$(curl -sf --max-time 5 "$api/rules")
n_rules=$(jq '[.data.groups[].rules[]] | length' <<< "$rules_json")
bad=$(jq -r '.data.groups[].rules[] | select(.health != "ok") | "\(.name): \(.health) \(.lastError // "")"' <<< "$rules_json")
in_file=$(grep -c '^ *- alert:' "$rules")
ok=no
((${n_rules:-0} == in_file)) && [[ -z $bad ]] && ok=yes
check "Prometheus evaluates the $n_rules rules of peltd-rules.yml ($in_file in the file) without error${bad:+: $bad}" [ "$ok" = yes ]
active=$(curl -sf --max-time 5 "$api/alerts" |
        jq -r '.data.alerts[] | select(.labels.alertname | test("^Peltd(MetricsStale|MetricsMissing|Absent)$")) | "\(.labels.alertname) \(.state)"')
check "with peltd running, no liveness alert pending or firing${active:+: $active}" [ -z "$active" ]
others=$(curl -sf --max-time 5 "$api/alerts" | jq -r '.data.alerts[] | "\(.labels.alertname) \(.state)"' | paste -sd, -)
[[ -z $others ]] || echo "    (other alerts: $others)"

# ---- promtool (run meanwhile) --------------------------------------------------------------------
wait "$promtool_pid"
promtool_pid=
cat "$tmp/promtool-check.out"
check "promtool check rules $rules: exit $(cat "$tmp/promtool-check.rc")" [ "$(cat "$tmp/promtool-check.rc")" = 0 ]
cat "$tmp/promtool-test.out"
check "promtool test rules $rules_test: exit $(cat "$tmp/promtool-test.rc")" [ "$(cat "$tmp/promtool-test.rc")" = 0 ]

stop_daemon TERM
check "peltd stopped by SIGTERM: exit $daemon_status" [ "$daemon_status" = 0 ]
((failures == 0))
