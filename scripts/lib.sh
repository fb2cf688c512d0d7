# SPDX-License-Identifier: GPL-2.0-only
# Shared by scripts/run and scripts/test: install what is missing, configure and build.

# From Debian's archive. What building peltd (with its BPF sampler) and running it, the demo
# included, need: scripts/run installs these.
PELTD_RUN_PACKAGES=(
        meson ninja-build gcc libc6-dev pkg-config
        libsystemd-dev libcgroup-dev libinih-dev libjson-c-dev libncurses-dev
        clang libbpf-dev bpftool
        dbus-daemon util-linux procps
)

# What the tests and the benchmarks use besides: scripts/test installs both lists.
PELTD_TEST_PACKAGES=(
        libcmocka-dev systemd jq valgrind
        qemu-system-x86 debootstrap e2fsprogs cpio xz-utils
        libclang-rt-14-dev
        debhelper dpkg-dev lintian
        prometheus prometheus-node-exporter curl inotify-tools
        gnuplot-nox rt-tests
        podman runc busybox-static
)

# Installed for their tools only (promtool; a node_exporter the metrics test starts on a port of
# its own): the services these packages start and enable at install are stopped and disabled.
PELTD_SERVICE_PACKAGES=(prometheus prometheus-node-exporter)

die() {
        echo "peltd: $*" >&2
        exit 1
}

# ensure_packages [PACKAGE...]: install those of the packages that are missing (with none named,
# both lists: what scripts/package and the benchmarks use).
ensure_packages() {
        local missing=() p
        (($#)) || set -- "${PELTD_RUN_PACKAGES[@]}" "${PELTD_TEST_PACKAGES[@]}"
        for p in "$@"; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
        done
        ((${#missing[@]})) || return 0
        [[ $(id -u) -eq 0 ]] || die "missing packages (${missing[*]}): run as root to install them"
        echo "peltd: installing ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq || die "apt-get update failed"
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
                die "apt-get install ${missing[*]} failed"
        for p in "${missing[@]}"; do
                [[ " ${PELTD_SERVICE_PACKAGES[*]} " == *" $p "* ]] && no_service "$p"
        done
        return 0
}

# no_service NAME: the service a package just installed (and maybe started) stopped and disabled,
# under systemd or SysV init.
no_service() {
        if [[ -d /run/systemd/system ]]; then
                systemctl disable --now "$1.service" >/dev/null 2>&1
        elif [[ -x /etc/init.d/$1 ]]; then
                "/etc/init.d/$1" stop >/dev/null 2>&1
                update-rc.d "$1" disable >/dev/null 2>&1
        fi
        echo "peltd: $1 installed for its tools; its service is stopped and disabled" >&2
}

# configure DIR [meson options...]: set up a build directory, or bring an existing one up to date.
configure() {
        local dir=$1
        shift
        if [[ -f $dir/build.ninja ]]; then
                # Regenerate now: a named target of a new meson.build is unknown until then.
                meson setup --reconfigure "$dir" "$@" >/dev/null || die "meson setup --reconfigure $dir failed"
        else
                meson setup "$dir" "$@" >/dev/null || die "meson setup $dir failed"
        fi
}
