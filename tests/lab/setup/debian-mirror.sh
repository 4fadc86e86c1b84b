#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Print "<mirror URL> <suite>" for the Debian archive this machine's apt already uses
# (deb822 files in /etc/apt/sources.list.d, then one-line sources.list), so the lab's
# debootstrap uses the same mirror as apt-get and never a host named here.
# usage: debian-mirror.sh [SUITE]   (default bookworm; on a machine of another release the
#                                    mirror that serves the machine's own release is used)
set -euo pipefail
want="${1:-bookworm}"
host_suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"

from_deb822() {
  # A paragraph is a block of "Key: value" lines; pick the first enabled deb paragraph
  # whose Suites list the release itself (not -updates / -security).
  awk -v suite="$suite" '
    function flush() {
      if (types ~ /(^| )deb( |$)/ && enabled != "no" && (" " suites " ") ~ (" " suite " ") && uris != "") {
        split(uris, u, " "); print u[1]; found = 1; exit
      }
      types = suites = uris = ""; enabled = "yes"
    }
    BEGIN { enabled = "yes" }
    /^[[:space:]]*$/ { flush(); next }
    /^[[:space:]]*#/ { next }
    tolower($1) == "types:"   { $1 = ""; types = $0 }
    tolower($1) == "uris:"    { $1 = ""; sub(/^ +/, ""); uris = $0 }
    tolower($1) == "suites:"  { $1 = ""; suites = $0 }
    tolower($1) == "enabled:" { enabled = tolower($2) }
    END { if (!found) flush() }
  ' "$@"
}

from_one_line() {
  awk -v suite="$suite" '
    $1 == "deb" {
      i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      if ($(i + 1) == suite) { print $i; exit }
    }' "$@"
}

find_mirror() {
suite="$1"
mirror=""
shopt -s nullglob
sources=(/etc/apt/sources.list.d/*.sources)
lists=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list)
[ ${#sources[@]} -gt 0 ] && mirror="$(from_deb822 "${sources[@]}" | head -n1)"
if [ -z "$mirror" ]; then
  existing=()
  for f in "${lists[@]}"; do [ -f "$f" ] && existing+=("$f"); done
  [ ${#existing[@]} -gt 0 ] && mirror="$(from_one_line "${existing[@]}" | head -n1)"
fi
return 0
}

find_mirror "$want"
[ -z "$mirror" ] && [ -n "$host_suite" ] && find_mirror "$host_suite"
if [ -z "$mirror" ]; then
  echo "no Debian mirror for '$want' or '$host_suite' found in /etc/apt/sources.list{,.d}" >&2
  exit 1
fi
echo "$mirror $want"
