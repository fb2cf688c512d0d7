# bash completion for peltctl(1)                                        -*- shell-script -*-
# SPDX-License-Identifier: GPL-2.0-only
#
# Commands, options, policy names, and for "group" and "set-shares" the groups the running daemon
# manages (from "peltctl --json groups"; nothing when the daemon does not answer within 3 s).
# Needs nothing from the bash-completion package.

# The word as the shell will read it: without its quotes and backslashes (no eval: the line is the
# user's, not ours to run).
__peltctl_dequote() {
        local s=$1 out= c
        case $s in
        \'*)
                s=${s#\'}
                printf '%s' "${s%\'}"
                return
                ;;
        \"*)
                s=${s#\"}
                s=${s%\"}
                ;;
        esac
        while [[ -n $s ]]; do
                c=${s:0:1}
                s=${s:1}
                if [[ $c == \\ && -n $s ]]; then
                        c=${s:0:1}
                        s=${s:1}
                fi
                out+=$c
        done
        printf '%s' "$out"
}

# The managed groups' paths, one a line: the "path" fields of peltctl's JSON, unescaped.
__peltctl_groups() {
        local cmd=$1
        [[ $cmd == "~/"* ]] && cmd=$HOME/${cmd#\~/}
        timeout 3 "$cmd" --json groups 2>/dev/null |
                sed -n '/^ *"path": *"/{ s/^ *"path": *"\(.*\)",\{0,1\}$/\1/; s/\\"/"/g; s/\\\\/\\/g; p; }'
}

_peltctl() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
        local commands='status policy groups group topology set-shares reload monitor top'
        local options='--json --config-dir --help --version'
        local i command= n_args=0 word p
        COMPREPLY=()

        # The command, and how many of its arguments come before the word being completed.
        for ((i = 1; i < COMP_CWORD; i++)); do
                word=${COMP_WORDS[i]}
                case $word in
                --config-dir) ((i++)) ;;
                -*) ;;
                *)
                        if [[ -z $command ]]; then
                                command=$word
                        else
                                ((n_args++))
                        fi
                        ;;
                esac
        done

        if [[ $prev == --config-dir ]]; then
                mapfile -t COMPREPLY < <(compgen -d -- "$cur")
                return 0
        fi
        if [[ $cur == -* ]]; then
                [[ $command == policy || $command == set-shares ]] && options+=' --runtime'
                [[ $command == top ]] && options+=' --once'
                mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
                return 0
        fi

        case $command,$n_args in
        ,*)
                mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
                ;;
        policy,0)
                mapfile -t COMPREPLY < <(compgen -W 'power performance balanced' -- "$cur")
                ;;
        group,0 | set-shares,0)
                word=$(__peltctl_dequote "$cur")
                while IFS= read -r p; do
                        [[ $p == "$word"* ]] && COMPREPLY+=("$(printf '%q' "$p")")
                done < <(__peltctl_groups "${COMP_WORDS[0]}")
                ;;
        esac
        return 0
}

complete -F _peltctl peltctl
