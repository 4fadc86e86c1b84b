#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Move a rolling tag in the lab registry, as upstream moves cu130-nightly (tests of playbooks/pin.yml).
#
#   tests/lab/nightly.sh build VERSION [FAULT [SLOWDOWN]]
#                                               build the vLLM simulator claiming VERSION (optionally
#                                               with FAULT), push it as vllm/vllm-openai:cu130-nightly-VERSION;
#                                               prints its digest. FAULT=slow_nightly: a nightly whose decode
#                                               is SLOWDOWN slower (fraction, default 0.30: 30 % fewer tokens/s),
#                                               for the performance gate of playbooks/pin.yml
#   tests/lab/nightly.sh move TAG DIGEST        point vllm/vllm-openai:TAG at the image DIGEST; prints DIGEST
#   tests/lab/nightly.sh digest TAG             the digest vllm/vllm-openai:TAG resolves to now
#
# Restore a moved tag with `move TAG <its digest from the lab lock file>`. Needs the lab up
# (tests/lab/lab.sh up) and root (the Docker engine).
set -euo pipefail

LAB_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REGISTRY="127.0.0.1:5000"
REPOSITORY="vllm/vllm-openai"
DOCKER_BIN=/usr/bin/docker

docker() { "$DOCKER_BIN" "$@"; }
die() { printf '[nightly] ERROR: %s\n' "$*" >&2; exit 1; }

registry_digest() {
  curl -fsS -o /dev/null -D - -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REGISTRY/v2/$REPOSITORY/manifests/$1" | tr -d '\r' |
    awk 'tolower($1) == "docker-content-digest:" { print $2 }'
}

cmd_build() {
  local version="$1" fault="${2:-}" slowdown="${3:-}" ref
  ref="$REGISTRY/$REPOSITORY:cu130-nightly-$version"
  local args=(--network host -q --build-arg BASE_IMAGE=inferops-lab/base:bookworm --build-arg ENGINE=vllm
              --build-arg "ENGINE_VERSION=$version" --label inferops-lab=nightly)
  [ -n "$fault" ] && args+=(--build-arg "FAULT=$fault")
  if [ -n "$slowdown" ]; then
    [ "$fault" = slow_nightly ] || die "SLOWDOWN ($slowdown) needs FAULT=slow_nightly"
    [[ "$slowdown" =~ ^0?\.[0-9]+$ ]] || die "SLOWDOWN: got '$slowdown'; expected a fraction such as 0.30 or 0.05"
    args+=(--build-arg "SLOWDOWN=$slowdown")
  fi
  # The build context as lab.sh lays it: the simulator plus the collection's kernel table
  # (plugins/plugin_utils/_kernel_support.py, shared with the lint) as engine_sim/_kernel_support.py.
  local context; context="$(mktemp -d)"
  cp -a "$LAB_SRC/engine_sim/." "$context/"
  cp "$LAB_SRC/../../plugins/plugin_utils/_kernel_support.py" "$context/engine_sim/_kernel_support.py"
  docker build "${args[@]}" -t "$ref" "$context" >/dev/null || { rm -rf "$context"; die "building $ref failed"; }
  rm -rf "$context"
  docker push -q "$ref" >/dev/null || die "pushing $ref failed"
  registry_digest "cu130-nightly-$version"
}

cmd_move() {
  local tag="$1" digest="$2"
  # Registry API: fetch the manifest by digest and put it under the tag (no image data moves).
  local manifest
  manifest="$(mktemp)"
  curl -fsS -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REGISTRY/v2/$REPOSITORY/manifests/$digest" -o "$manifest" || die "no manifest $digest"
  curl -fsS -X PUT -H 'Content-Type: application/vnd.docker.distribution.manifest.v2+json' \
    --data-binary "@$manifest" "http://$REGISTRY/v2/$REPOSITORY/manifests/$tag" >/dev/null ||
    die "cannot put $REPOSITORY:$tag"
  rm -f "$manifest"
  [ "$(registry_digest "$tag")" = "$digest" ] || die "$REPOSITORY:$tag did not move to $digest"
  echo "$digest"
}

case "${1:-}" in
  build) shift; cmd_build "$@" ;;
  move) shift; cmd_move "$@" ;;
  digest) shift; registry_digest "$1" ;;
  *) echo "usage: $0 build VERSION [FAULT [SLOWDOWN]] | move TAG DIGEST | digest TAG" >&2; exit 2 ;;
esac
