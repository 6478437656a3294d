#!/usr/bin/env bash
# build-offline.sh: build the skillfleet sandbox image without an image registry.
#
# It produces the same content as ./Dockerfile (debian bookworm, bash, coreutils, python3,
# ca-certificates, user sandbox 10001:10001, no setuid/setgid binaries, same USER/WORKDIR/ENV)
# from Debian packages only: debootstrap --variant=minbase into a temp dir, harden it in a
# chroot, then `tar | docker import`. Needs root, debootstrap and a reachable Debian mirror.
#
# Usage: build-offline.sh [--force] [IMAGE]        (IMAGE defaults to skillfleet/sandbox:1)
# Env:   MIRROR      Debian mirror (default http://deb.debian.org/debian)
#        SUITE       Debian suite (default bookworm)
#        CACHE_DIR   where downloaded .debs are kept between runs
#                    (default /var/cache/skillfleet/debootstrap; empty disables)
#
# Idempotent: when IMAGE exists it exits 0 without rebuilding unless --force is given. The temp
# dir is removed on every exit, including errors and Ctrl-C.
set -euo pipefail

die() { echo "build-offline.sh: $*" >&2; exit 1; }

force=0
image=""
for arg in "$@"; do
  case "$arg" in
    --force|-f) force=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) die "unknown flag $arg" ;;
    *) [[ -z "$image" ]] || die "only one IMAGE argument is allowed"; image="$arg" ;;
  esac
done
image="${image:-skillfleet/sandbox:1}"
mirror="${MIRROR:-http://deb.debian.org/debian}"
suite="${SUITE:-bookworm}"
cache_dir="${CACHE_DIR-/var/cache/skillfleet/debootstrap}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The package list lives in the Dockerfile (one source of truth for both builds).
packages="$(sed -n 's/^# PACKAGES: *//p' "$here/Dockerfile" | head -n1)"
[[ -n "$packages" ]] || die "no '# PACKAGES:' line in $here/Dockerfile"

[[ "$(id -u)" == 0 ]] || die "must run as root (debootstrap and chroot need it); try: sudo $0 $*"
command -v debootstrap >/dev/null || die "debootstrap is not installed; install it with: apt-get install -y debootstrap"
command -v docker >/dev/null || die "docker CLI not found"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || die "cannot reach the Docker engine (is dockerd running, is DOCKER_HOST right?)"

if [[ "$force" == 0 ]] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "build-offline.sh: $image already exists (use --force to rebuild)"
  exit 0
fi

# A real (exec, dev-capable) filesystem is needed for debootstrap; /tmp may be a noexec tmpfs.
workdir="$(mktemp -d /var/tmp/skillfleet-sandbox.XXXXXX)"
rootfs="$workdir/rootfs"
child=""
# Long steps run in their own process group in the background so that a signal interrupts
# `wait` at once (bash defers traps until a foreground command ends) and cleanup can stop them.
run_bg() {
  setsid "$@" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  return "$rc"
}
cleanup() {
  local rc=$?
  if [[ -n "$child" ]]; then
    kill -TERM -- "-$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  # debootstrap mounts proc/sys inside the target; an interrupted run can leave them mounted,
  # and rm -rf must never walk into the host's /proc or /sys.
  if [[ -d "$rootfs" ]]; then
    awk -v p="$rootfs" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
      umount -l "$m" 2>/dev/null || true
    done
  fi
  rm -rf --one-file-system "$workdir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

include="$(echo "$packages" | tr -s ' ' ',')"
cache_args=()
if [[ -n "$cache_dir" ]]; then
  mkdir -p "$cache_dir"
  cache_args=(--cache-dir="$cache_dir")
fi

echo "build-offline.sh: debootstrap $suite ($packages) from $mirror"
run_bg debootstrap --variant=minbase --include="$include" "${cache_args[@]}" "$suite" "$rootfs" "$mirror" \
  >"$workdir/debootstrap.log" 2>&1 || { tail -n 30 "$workdir/debootstrap.log" >&2; die "debootstrap failed"; }

# Same steps as the Dockerfile's RUN lines, in a chroot. Docs, man pages and locales are dropped
# like the -slim base image does.
run_bg chroot "$rootfs" /bin/bash -euo pipefail -c '
  export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  apt-get clean
  rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt/* /var/log/dpkg.log \
         /var/log/bootstrap.log /var/cache/debconf/*-old /var/lib/dpkg/*-old
  rm -rf /usr/share/doc/* /usr/share/man/* /usr/share/info/* /usr/share/locale/*
  groupadd --gid 10001 sandbox
  useradd --uid 10001 --gid 10001 --home-dir /home/sandbox --create-home --shell /bin/bash sandbox
  mkdir -p /work /skills
  chown 10001:10001 /work
  chmod 0700 /home/sandbox /work
  find / -xdev -perm /6000 -type f -exec chmod a-s {} + || true
  if [ -n "$(find / -xdev -perm /6000 -type f)" ]; then echo "setuid/setgid binaries remain" >&2; exit 1; fi
'

# The engine provides /dev, /proc, /sys and the resolv.conf/hosts/hostname files at run time.
for d in dev proc sys run tmp; do
  find "$rootfs/$d" -mindepth 1 -delete 2>/dev/null || true
done
chmod 1777 "$rootfs/tmp"
: >"$rootfs/etc/resolv.conf"
echo "sandbox" >"$rootfs/etc/hostname"

old_id="$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
echo "build-offline.sh: importing $image"
tar --numeric-owner --xattrs -C "$rootfs" -c . | docker import \
  --change 'USER 10001:10001' \
  --change 'WORKDIR /work' \
  --change 'ENV HOME=/home/sandbox' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV PYTHONDONTWRITEBYTECODE=1' \
  --change 'LABEL org.skillfleet.sandbox.build=offline' \
  --change 'CMD ["/bin/bash"]' \
  --message "skillfleet sandbox (offline build, $suite)" \
  - "$image" >/dev/null

new_id="$(docker image inspect --format '{{.Id}}' "$image")"
if [[ -n "$old_id" && "$old_id" != "$new_id" ]]; then
  # The replaced image would linger untagged; drop it unless a container still uses it.
  docker rmi "$old_id" >/dev/null 2>&1 || true
fi
echo "build-offline.sh: built $image ($(docker image inspect --format '{{.Size}}' "$image") bytes)"
