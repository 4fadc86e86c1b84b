#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Build a Debian image from scratch with debootstrap (no registry can be pulled from here)
# and import it into the local Docker engine.
#
#   build-os-image.sh base   IMAGE   minbase + python3: the engine simulator images build on it
#   build-os-image.sh target IMAGE   a molecule target host: systemd as PID 1, python3(-apt),
#                                    and docker.io preinstalled as on DGX OS / the AWS DLAMI
#   build-os-image.sh packages KIND  print the packages KIND's image is built with (lab.sh labels
#                                    the image with them and rebuilds it when they change)
#
# Environment: LAB_DIR (state dir, default <repo>/.lab).
set -euo pipefail
kind="$1" image="${2:-}"
here="$(cd "$(dirname "$0")" && pwd)"
LAB_DIR="${LAB_DIR:-$(cd "$here/../../.." && pwd)/.lab}"

packages() {
  case "$1" in
    base) echo "python3,ca-certificates" ;;
    # python3-venv: the model_cache role installs the Hugging Face Hub client into a venv (Debian
    # ships venv apart from python3, as Ubuntu does); rsync and openssh-client: copying a staged
    # cache from a peer (model_cache_source); openssh-server for the peer side, its unit masked
    # below (the targets share one network: a test starts sshd on a port of its own).
    target) echo "systemd,systemd-sysv,dbus,python3,python3-apt,python3-venv,ca-certificates,gnupg,curl,iproute2,procps,sudo,docker.io,rsync,openssh-client,openssh-server" ;;
    *) echo "usage: $0 base|target IMAGE, or $0 packages base|target" >&2; exit 2 ;;
  esac
}
if [ "$kind" = packages ]; then packages "$image"; exit; fi
include="$(packages "$kind")"
case "$kind" in
  base) changes=(--change 'CMD ["/bin/bash"]') ;;
  target) changes=(--change 'ENV container=docker'
                   --change 'CMD ["/lib/systemd/systemd"]') ;;
esac
read -r mirror suite < <("$here/debian-mirror.sh" bookworm) || true
[ -n "${mirror:-}" ] || { echo "no Debian mirror found" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/inferops-lab-rootfs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# One package cache per image: lab.sh builds both images at once, and two debootstraps writing
# the same .deb into one --cache-dir race (one validates a file the other is still writing).
cache="$LAB_DIR/cache/debootstrap-$kind"
log="$LAB_DIR/log/debootstrap-$kind.log"
mkdir -p "$cache" "$LAB_DIR/log"
# A mirror or network error (a Release file caught mid-sync, a 5xx, a reset or truncated
# download) is retried after a pause; any other failure stops at once.
mirror_error="Failed getting release|Invalid Release|Couldn't download|Hash Sum mismatch|Retrying failed download"
mirror_error+="|Connection (refused|reset|timed out)|Temporary failure in name resolution|Unable to establish"
mirror_error+="|Read error|ERROR 5[0-9][0-9]|Invalid package file|checksum mismatch|Size mismatch"
attempts="${DEBOOTSTRAP_ATTEMPTS:-3}"
for attempt in $(seq 1 "$attempts"); do
  echo "  debootstrap --variant=minbase --include=$include $suite from $mirror (attempt $attempt of $attempts)"
  rm -rf "$work/rootfs"
  if debootstrap --variant=minbase --cache-dir="$cache" --include="$include" \
       "$suite" "$work/rootfs" "$mirror" >"$log" 2>&1; then
    break
  fi
  tail -n 30 "$log" >&2
  # A log that ends in "I: Validating <package>" is a download cut off mid-validation: retried too.
  if [ "$attempt" -ge "$attempts" ] ||
     ! { grep -Eq "$mirror_error" "$log" || tail -n 1 "$log" | grep -q '^I: Validating '; }; then
    echo "debootstrap of the $kind image failed (attempt $attempt of $attempts; no mirror error to retry" \
         "or none left); its log: $log" >&2
    exit 1
  fi
  # A truncated download may be left in the cache: keep only the packages that read back whole.
  for deb in "$cache"/*.deb; do
    [ -e "$deb" ] || continue
    dpkg-deb --info "$deb" >/dev/null 2>&1 || rm -f "$deb"
  done
  echo "  mirror error; retrying in $((attempt * 20)) s" >&2
  sleep $((attempt * 20))
done

root="$work/rootfs"
if [ "$kind" = target ]; then
  # The nested engine inside a target container: vfs is the driver that works on top of the
  # outer engine's storage, and no iptables/bridge (targets use the host network only).
  mkdir -p "$root/etc/docker"
  printf '{"storage-driver": "vfs", "iptables": false, "bridge": "none"}\n' >"$root/etc/docker/daemon.json"
  # Units that need hardware or a console a container does not have.
  for unit in getty.target console-getty.service systemd-firstboot.service \
              systemd-udevd.service systemd-udev-trigger.service systemd-modules-load.service \
              sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount \
              ssh.service ssh.socket; do
    ln -sf /dev/null "$root/etc/systemd/system/$unit"
  done
  : >"$root/etc/machine-id"
fi
# debootstrap leaves the .debs it used in the rootfs' apt cache; the image does not need them.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*_Packages "$root"/tmp/*

echo "  docker import -> $image"
tar -C "$root" -c . | docker import "${changes[@]}" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'LABEL org.opencontainers.image.description="inferops lab image built with debootstrap"' \
  --change "LABEL inferops-lab.packages=$include" \
  - "$image" >/dev/null
