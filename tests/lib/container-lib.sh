# SPDX-License-Identifier: GPL-2.0-only
# Sourced, after cgroup-lib.sh, by the kernel tests that run a real container (test-container.sh):
# Debian's podman with runc, on cgroup v1 without systemd, offline. Everything lives in a private
# storage directory of the test's (images, containers, podman's run and tmp state), so tests and
# the machine's own containers never meet; the image is a busybox-static root file system imported
# with `podman import` (no registry).
#
#   container_setup NAME   podman (the command, private storage in container_dir), and the image
#                          $container_image built; a guard that removes the containers, the
#                          image, the groups podman made and the directory once this shell is gone
#                          (also by SIGKILL). Returns 1 (said) when podman cannot run here.
#   container_start NAME PARENT CPUS COMMAND...
#                          a container from the image, its cgroup under PARENT (a cgroup path as
#                          /proc/PID/cgroup shows it), --cpuset-cpus=CPUS, running COMMAND (busybox
#                          sh); sets container_pid and container_group (its cgroup path, from its
#                          process). Returns 1 (said) when it does not run.
#   container_cleanup      the containers removed (stopped at once), the image and the groups podman
#                          made in the hierarchies cgroup-lib does not handle, then the directory:
#                          for the test's own exit trap, before cg_remove.
#
# Why runc and these options: crun refuses v1 with a v2 mount beside it ("hybrid mode"); the machine
# may deny raising RLIMIT_NPROC and RLIMIT_NOFILE to podman's defaults, so the container gets low
# ones; --network=none needs no network backend; cgroupfs and file events need no systemd.

container_setup() {
        local root
        command -v podman >/dev/null && command -v runc >/dev/null && [[ -x /bin/busybox ]] || {
                echo "container_setup: podman, runc and busybox-static are needed (scripts/lib.sh installs them)"
                return 1
        }
        container_dir=$(mktemp -d "/tmp/$1-podman.XXXXXX") || return 1
        container_image=localhost/peltd-test-busybox:latest
        container_names=()
        container_parents=()
        podman=(podman --root "$container_dir/storage" --runroot "$container_dir/run" --tmpdir "$container_dir/tmp"
                --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime runc)
        container_guard
        root=$container_dir/rootfs
        mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" &&
                cp /bin/busybox "$root/bin/busybox" &&
                ln -s busybox "$root/bin/sh" && ln -s busybox "$root/bin/sleep" &&
                tar -C "$root" -cf "$container_dir/rootfs.tar" . || return 1
        "${podman[@]}" import "$container_dir/rootfs.tar" "$container_image" >"$container_dir/import.log" 2>&1 || {
                echo "container_setup: podman import failed:"
                cat "$container_dir/import.log"
                return 1
        }
}

container_start() {
        local name=$1 parent=$2 cpus=$3 out
        shift 3
        container_names+=("$name")
        container_parents+=("$parent")
        echo "$parent" >>"$container_dir/parents"
        out=$("${podman[@]}" run -d --name "$name" --network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
                --cpuset-cpus="$cpus" --cgroup-parent="$parent" "$container_image" /bin/sh -c "$*" 2>&1) || {
                echo "container_start: podman run failed: $out"
                return 1
        }
        container_pid=$("${podman[@]}" inspect --format '{{.State.Pid}}' "$name" 2>/dev/null)
        container_group=$(sed -n 's/^[0-9]*:cpuset:\(.*\)$/\1/p' "/proc/$container_pid/cgroup" 2>/dev/null)
        [[ $container_pid =~ ^[1-9][0-9]*$ && $container_group == "$parent"/* ]] || {
                echo "container_start: $name is not running under $parent (pid '${container_pid}', cgroup '${container_group}')"
                return 1
        }
}

# The body of container_cleanup and of the guard: takes podman's command, the directory and the
# parents as arguments (the guard runs it in a shell of its own).
container_remove_all() {
        local dir=$1 parents=$2 p d
        shift 2
        if [[ -d $dir/storage ]]; then
                "$@" rm -a -f -t 0 >/dev/null 2>&1
                "$@" rmi -a -f >/dev/null 2>&1
        fi
        # podman made each parent in every hierarchy: those cgroup-lib does not remove, removed here.
        for p in $parents; do
                for d in /sys/fs/cgroup/*/"${p#/}"; do
                        [[ -d $d ]] || continue
                        case $d in /sys/fs/cgroup/cpuset/* | /sys/fs/cgroup/cpu/* | /sys/fs/cgroup/cpuacct/*) continue ;; esac
                        find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
                done
        done
        rm -rf "$dir"
}

container_cleanup() {
        [[ -n ${container_dir:-} ]] || return 0
        container_remove_all "$container_dir" "${container_parents[*]}" "${podman[@]}"
        container_dir=
}

# Once this shell is gone: the same, in a session of its own (as cg_guard).
container_guard() {
        (
                [[ -z ${machine_lock_fd:-} ]] || exec {machine_lock_fd}>&-
                exec setsid bash -c "$(declare -f container_remove_all)"'
                        while kill -0 "$1" 2>/dev/null; do sleep 0.2; done
                        container_remove_all "$2" "$(cat "$2/parents" 2>/dev/null)" "${@:3}"' \
                        container-guard "$$" "$container_dir" "${podman[@]}"
        ) </dev/null >/dev/null 2>&1 &
}
