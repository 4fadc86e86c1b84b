#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Build the NVIDIA Container Toolkit TEST DOUBLE as real Debian packages (dpkg-deb), with
# NVIDIA's package names, version scheme, file locations and dependency relations:
#
#   nvidia-container-toolkit       /usr/bin/nvidia-container-runtime-hook
#     Depends: nvidia-container-toolkit-base (= V), libnvidia-container-tools (>= V),
#              libnvidia-container-tools (<< 2.0.0)
#   nvidia-container-toolkit-base  /usr/bin/nvidia-ctk, /usr/bin/nvidia-container-runtime,
#                                  /etc/nvidia-container-runtime/config.toml (conffile)
#   libnvidia-container-tools      /usr/bin/nvidia-container-cli
#     Depends: libnvidia-container1 (>= V)
#   libnvidia-container1           (the real one is the C library; the double ships only docs)
#
# The doubles are Python 3 programs, so the packages that carry one also depend on python3
# (the only relation the real packages do not have).  nvidia-smi is not here: it ships with the
# driver, which the lab's target image preinstalls (tests/lab/toolkit/src/nvidia-smi).
#
# usage: build-debs.sh OUTDIR [VERSION...]   (default versions: 1.17.8-1 1.18.0-1)
#        ARCHES="amd64 arm64" (default) selects the architectures.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$1"; shift
versions=("$@"); [ ${#versions[@]} -gt 0 ] || versions=(1.17.8-1 1.18.0-1)
read -r -a arches <<<"${ARCHES:-amd64 arm64}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1748822400}"
maintainer="inferops lab (test double of an NVIDIA package) <lab@inferops.invalid>"
work="$(mktemp -d "${TMPDIR:-/tmp}/inferops-lab-debs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# package  version  arch  description  depends  extra-control  files (src:dest:mode ...)
build() {
  local pkg="$1" ver="$2" arch="$3" desc="$4" depends="$5" extra="$6"; shift 6
  local upstream="${ver%-*}" root="$work/$pkg-$ver-$arch"
  mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$pkg"
  local spec src dest mode
  for spec in "$@"; do
    IFS=: read -r src dest mode <<<"$spec"
    mkdir -p "$root$(dirname "$dest")"
    # Sources say `#!/usr/bin/env python` (ansible-test's allowed form); packages use python3.
    sed -e "s/@VERSION@/$upstream/g" -e '1s|^#!/usr/bin/env python$|#!/usr/bin/python3|' "$here/src/$src" >"$root$dest"
    chmod "$mode" "$root$dest"
    case "$dest" in /etc/*) echo "$dest" >>"$root/DEBIAN/conffiles" ;; esac
  done
  cat >"$root/usr/share/doc/$pkg/README.inferops-lab" <<DOC
TEST DOUBLE of NVIDIA's $pkg $ver, built by the inferops.serving lab
(tests/lab/toolkit/build-debs.sh). It has the real package's name, version, file locations
and dependency relations, and stands in for it on hosts without a GPU.
DOC
  {
    echo "Package: $pkg"
    echo "Version: $ver"
    echo "Architecture: $arch"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
    [ -n "$depends" ] && echo "Depends: $depends"
    [ -n "$extra" ] && printf '%s\n' "$extra"
    echo "Section: utils"
    echo "Priority: optional"
    echo "Homepage: https://github.com/NVIDIA/nvidia-container-toolkit"
    echo "Description: $desc (inferops lab test double)"
    echo " Test double of NVIDIA's $pkg for the inferops.serving lab; see"
    echo " /usr/share/doc/$pkg/README.inferops-lab."
  } >"$root/DEBIAN/control"
  find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$out/${pkg}_${ver}_${arch}.deb" >/dev/null
}

for ver in "${versions[@]}"; do
  for arch in "${arches[@]}"; do
    build libnvidia-container1 "$ver" "$arch" "NVIDIA container runtime library" \
      "libc6 (>= 2.7), libcap2 (>= 1:2.10), libseccomp2 (>= 2.1.0)" "Multi-Arch: same"
    build libnvidia-container-tools "$ver" "$arch" "NVIDIA container runtime library (command-line tools)" \
      "libnvidia-container1 (>= $ver), libc6 (>= 2.34), python3" "" \
      nvidia-container-cli:/usr/bin/nvidia-container-cli:0755
    build nvidia-container-toolkit-base "$ver" "$arch" "NVIDIA Container Toolkit Base" \
      "python3" "$(printf 'Breaks: nvidia-container-runtime (<= 3.5.0-1), nvidia-container-runtime-hook\nReplaces: nvidia-container-runtime (<= 3.5.0-1), nvidia-container-runtime-hook')" \
      nvidia-ctk:/usr/bin/nvidia-ctk:0755 \
      nvidia-container-runtime:/usr/bin/nvidia-container-runtime:0755 \
      config.toml:/etc/nvidia-container-runtime/config.toml:0644
    build nvidia-container-toolkit "$ver" "$arch" "NVIDIA Container toolkit" \
      "nvidia-container-toolkit-base (= $ver), libnvidia-container-tools (>= $ver), libnvidia-container-tools (<< 2.0.0), libseccomp2, python3" \
      "$(printf 'Breaks: nvidia-container-runtime (<= 3.5.0-1), nvidia-container-runtime-hook\nReplaces: nvidia-container-runtime (<= 3.5.0-1), nvidia-container-runtime-hook')" \
      nvidia-container-runtime-hook:/usr/bin/nvidia-container-runtime-hook:0755
  done
done
