#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The inferops lab on one machine: a Docker engine, debootstrapped base images, a registry on
# 127.0.0.1:5000, a GPG-signed apt repository on loopback serving the NVIDIA Container Toolkit
# test double, and the engine simulator images pushed under their real names.
#
#   tests/lab/lab.sh up              set up whatever is missing (idempotent; fast when up)
#   tests/lab/lab.sh status          what is up
#   tests/lab/lab.sh down [--purge]  stop what the lab started; --purge also drops images/state
#
# Runs as root on Debian without systemd (CI's machine); state and logs live in <repo>/.lab/.
# Environment: LAB_APT_PORT (default 5080), LAB_HUB_PORT (default 5090), LAB_SKIP_ENGINE_SIM=1 (do not build the simulator).
set -euo pipefail

LAB_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$LAB_SRC/../.." && pwd)"
export LAB_DIR="${LAB_DIR:-$REPO/.lab}"
RUN="$LAB_DIR/run"
LOG="$LAB_DIR/log"
REGISTRY="127.0.0.1:5000"
APT_PORT="${LAB_APT_PORT:-5080}"
APT_URL="http://127.0.0.1:$APT_PORT/libnvidia-container"
# The Hugging Face Hub stand-in (tests/lab/hub): the lab's HF_ENDPOINT, model_cache_endpoint.
HUB_PORT="${LAB_HUB_PORT:-5090}"
HUB_URL="http://127.0.0.1:$HUB_PORT"
BASE_IMAGE="inferops-lab/base:bookworm"
TARGET_OS_IMAGE="inferops-lab/target-os:bookworm"
TARGET_IMAGE="inferops-lab/target:bookworm"
# The lab's lock: the inventory variable inferops_serving_image_lock, as playbooks/pin.yml writes
# it for a real fleet, here pinned to the lab registry's digests (images) and to the Hub stand-in's
# commits of the lab profiles' models (models: where pin.yml pins a model's revision, so an
# operator's -e server_profile_overrides=... keeps the weights the stand-in serves).
LOCK_FILE="$REPO/inventories/lab/group_vars/all/image_lock.yml"
# The lab apt repository's key fingerprint, pinned for the container_toolkit role as a real fleet
# pins NVIDIA's (container_toolkit_repository_key_fingerprints); the key is made at lab set-up.
APT_KEY_FILE="$REPO/inventories/lab/group_vars/all/apt_signing_key.yml"
TOOLKIT_VERSIONS=(1.17.8-1 1.18.0-1)
# repository:tag  engine  engine version  fault
ENGINE_IMAGES=(
  "vllm/vllm-openai:cu130-nightly vllm 0.19.2rc1.dev134 -"
  "vllm/vllm-openai:v0.17.1-cu130 vllm 0.17.1 -"
  "lmsysorg/sglang:v0.5.13-cu130 sglang 0.5.13 -"
  "vllm/vllm-openai:cu130-nightly-bad vllm 0.19.2rc1.dev134 illegal_memory_access_on_first_spec"
  "vllm/vllm-openai:cu130-nightly-bad-compile vllm 0.19.2rc1.dev134 crash_on_cuda_graph_capture"
  "vllm/vllm-openai:v0.24.0-cu130 vllm 0.24.0 -"
)
# prometheus (promtool), prometheus-node-exporter and prometheus-alertmanager: the monitoring role's
# promtool tests (tests/unit/monitoring) and the lab's Prometheus. rsync: the model_cache role's copy
# from a peer (tests/unit/playbooks/test_model_cache_role.py runs it on this machine).
PACKAGES=(docker.io debootstrap docker-registry gnupg dpkg-dev apt-utils curl ca-certificates
          prometheus prometheus-node-exporter prometheus-alertmanager rsync)
# The Debian engine and its CLI (the machine may also carry a newer static CLI in /usr/local/bin).
DOCKER_BIN=/usr/bin/docker

say() { printf '[lab] %s\n' "$*"; }
die() { printf '[lab] ERROR: %s\n' "$*" >&2; exit 1; }
docker() { "$DOCKER_BIN" "$@"; }

# Hash of files (paths relative to $1 and contents), to rebuild only what changed.
tree_hash() {
  local dir="$1"; shift
  (cd "$dir" && find "$@" -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | sort -z |
    xargs -0 sha256sum) | sha256sum | cut -c1-16
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Start a background service with its own pid file and log; detached from this shell.
spawn() {
  local name="$1"; shift
  mkdir -p "$RUN" "$LOG"
  setsid nohup "$@" >>"$LOG/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

wait_for() {
  local what="$1" seconds="$2"; shift 2
  local i
  for ((i = 0; i < seconds * 4; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  die "$what did not come up within ${seconds}s (logs in $LOG)"
}

stop_pid() {
  local name="$1" pidfile="$RUN/$1.pid" i
  if pid_alive "$pidfile"; then
    say "stopping $name (pid $(cat "$pidfile"))"
    kill "$(cat "$pidfile")" 2>/dev/null || true
    for ((i = 0; i < 120; i++)); do pid_alive "$pidfile" || break; sleep 0.25; done
    if pid_alive "$pidfile"; then kill -9 "$(cat "$pidfile")" 2>/dev/null || true; fi
  fi
  rm -f "$pidfile"
}

# --- packages -----------------------------------------------------------------------------
ensure_packages() {
  local missing=() pkg
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "packages: present (${PACKAGES[*]})"
    return
  fi
  say "packages: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >"$LOG/apt-get.log" 2>&1 || die "apt-get update failed (see $LOG/apt-get.log)"
  apt-get install -y --no-install-recommends "${missing[@]}" >>"$LOG/apt-get.log" 2>&1 ||
    die "apt-get install failed (see $LOG/apt-get.log)"
}

# --- Docker engine ------------------------------------------------------------------------
engine_up() { docker info >/dev/null 2>&1; }

# overlay2 needs a working overlay mount on the filesystem of /var/lib/docker; else vfs.
pick_storage_driver() {
  local probe
  mkdir -p /var/lib/docker
  probe="$(mktemp -d /var/lib/docker/.inferops-lab-overlay-probe.XXXXXX)"
  mkdir -p "$probe"/{lower,upper,work,merged}
  if mount -t overlay overlay \
      -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" "$probe/merged" 2>/dev/null; then
    umount "$probe/merged"
    echo overlay2
  else
    echo vfs
  fi
  rm -rf "$probe"
}

ensure_engine() {
  if engine_up; then
    say "docker engine: running ($(docker info --format '{{.Driver}}') storage driver$(
      [ -f "$RUN/dockerd.pid" ] && echo ', started by the lab' || echo ', not started by the lab'))"
    return
  fi
  [ -d /run/systemd/system ] && command -v systemctl >/dev/null && {
    say "docker engine: starting docker.service (systemd)"
    systemctl start docker
    wait_for "dockerd" 60 engine_up
    return
  }
  local driver
  driver="$(pick_storage_driver)"
  mkdir -p "$LAB_DIR/docker"
  # No bridge and no iptables: the lab's containers use the host network only.
  printf '{"storage-driver": "%s", "bridge": "none", "iptables": false}\n' "$driver" \
    >"$LAB_DIR/docker/daemon.json"
  say "docker engine: starting dockerd ($driver storage driver; log $LOG/dockerd.log)"
  spawn dockerd dockerd --config-file "$LAB_DIR/docker/daemon.json" --pidfile "$RUN/dockerd.docker.pid"
  wait_for "dockerd" 60 engine_up
}

# --- images -------------------------------------------------------------------------------
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
image_label() { docker image inspect --format "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }

ensure_images() {
  # The two builds run at once: each has its own debootstrap cache (build-os-image.sh), and
  # both are waited for before a failure is reported, naming the image that failed.
  local pids=() kinds=() failed=() kind image i
  for kind in base target; do
    image="$BASE_IMAGE"; [ "$kind" = target ] && image="$TARGET_OS_IMAGE"
    # An image built with another package list (build-os-image.sh packages) is built again.
    if image_exists "$image" &&
       { [ "$kind" = base ] || [ "$(image_label "$image" inferops-lab.packages)" = "$("$LAB_SRC/setup/build-os-image.sh" packages "$kind")" ]; }; then
      say "image $image: present"
    else
      say "image $image: building with debootstrap (about a minute; log $LOG/debootstrap-$kind.log)"
      "$LAB_SRC/setup/build-os-image.sh" "$kind" "$image" >"$LOG/build-$kind.log" 2>&1 &
      pids+=($!) kinds+=("$kind")
    fi
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("${kinds[$i]}")
  done
  for kind in "${failed[@]}"; do
    tail -n 15 "$LOG/build-$kind.log" >&2
  done
  [ ${#failed[@]} -eq 0 ] || die "debootstrap build of the ${failed[*]} image failed (see $LOG/build-${failed[0]}.log)"
  local hash
  hash="$(tree_hash "$LAB_SRC" toolkit/src/nvidia-smi toolkit/set-hardware toolkit/inferops_lab_pyc.py \
    setup/target.Dockerfile)"
  hash="$hash-$(docker image inspect --format '{{.Id}}' "$TARGET_OS_IMAGE" | cut -c8-19)"
  if [ "$(image_label "$TARGET_IMAGE" inferops-lab.src-hash)" = "$hash" ]; then
    say "image $TARGET_IMAGE: up to date"
  else
    say "image $TARGET_IMAGE: building (driver double + set-hardware on top of $TARGET_OS_IMAGE)"
    docker build --network host -q --label "inferops-lab.src-hash=$hash" \
      --build-arg "OS_IMAGE=$TARGET_OS_IMAGE" -f "$LAB_SRC/setup/target.Dockerfile" \
      -t "$TARGET_IMAGE" "$LAB_SRC/toolkit" >"$LOG/build-target-final.log" 2>&1 ||
      die "building $TARGET_IMAGE failed (see $LOG/build-target-final.log)"
  fi
}

# --- registry -----------------------------------------------------------------------------
registry_up() { curl -fsS "http://$REGISTRY/v2/" >/dev/null 2>&1; }

ensure_registry() {
  if registry_up; then
    say "registry: up at http://$REGISTRY"
    return
  fi
  mkdir -p "$LAB_DIR/registry/storage"
  cat >"$LAB_DIR/registry/config.yml" <<EOF
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $LAB_DIR/registry/storage
  delete:
    enabled: true
http:
  addr: $REGISTRY
EOF
  say "registry: starting docker-registry on $REGISTRY (log $LOG/registry.log)"
  spawn registry docker-registry serve "$LAB_DIR/registry/config.yml"
  wait_for "registry" 30 registry_up
}

# --- apt repository -----------------------------------------------------------------------
apt_up() { curl -fsS "$APT_URL/gpgkey" >/dev/null 2>&1; }

# The inventory variable that pins the lab key's fingerprint (gpg's fpr line of the primary key).
write_apt_key_pin() {
  local fpr
  fpr="$(gpg --batch --with-colons --show-keys "$1" 2>/dev/null |
    awk -F: '$1 == "pub" { p = 1; next } $1 == "fpr" && p { print $10; p = 0 }')"
  [ -n "$fpr" ] || die "cannot read the fingerprint of the lab apt key $1"
  mkdir -p "$(dirname "$APT_KEY_FILE")"
  printf '%s\n' "---" "# Written by tests/lab/lab.sh up: the lab apt repository's signing key (made at lab set-up)." \
    "container_toolkit_repository_key_fingerprints:" "  - $fpr" >"$APT_KEY_FILE.tmp"
  if cmp -s "$APT_KEY_FILE.tmp" "$APT_KEY_FILE"; then rm -f "$APT_KEY_FILE.tmp"; else mv "$APT_KEY_FILE.tmp" "$APT_KEY_FILE"; fi
}

ensure_apt_repo() {
  local www="$LAB_DIR/apt/www" hash
  hash="$(tree_hash "$LAB_SRC" toolkit/src toolkit/build-debs.sh apt/build-repo.sh)"
  if [ "$(cat "$LAB_DIR/apt/src-hash" 2>/dev/null)" = "$hash" ] &&
     [ -f "$www/libnvidia-container/gpgkey" ]; then
    say "apt repository: up to date (toolkit double ${TOOLKIT_VERSIONS[*]})"
  else
    say "apt repository: building toolkit double ${TOOLKIT_VERSIONS[*]} and signing the repo"
    rm -rf "$LAB_DIR/apt/debs"
    "$LAB_SRC/toolkit/build-debs.sh" "$LAB_DIR/apt/debs" "${TOOLKIT_VERSIONS[@]}"
    "$LAB_SRC/apt/build-repo.sh" "$www" "$LAB_DIR/apt/gnupg" "$LAB_DIR/apt/debs"
    echo "$hash" >"$LAB_DIR/apt/src-hash"
  fi
  write_apt_key_pin "$www/libnvidia-container/gpgkey"
  if apt_up; then
    # Someone else's server on the port (another clone's lab) would serve another key.
    curl -fsS "$APT_URL/gpgkey" | cmp -s - "$www/libnvidia-container/gpgkey" ||
      die "127.0.0.1:$APT_PORT serves another apt repository (stop it, or set LAB_APT_PORT)"
    say "apt repository: served at $APT_URL"
    return
  fi
  # Lab hosts outlive a lab (another clone's lab may have served its own key on this port): files
  # newer than any host's cached lists make apt fetch them again instead of keeping an index
  # signed by a key it no longer has (http.server answers If-Modified-Since by mtime).
  find "$www" -type f -exec touch {} +
  say "apt repository: serving $www on 127.0.0.1:$APT_PORT (log $LOG/apt.log)"
  spawn apt python3 -m http.server --bind 127.0.0.1 --directory "$www" "$APT_PORT"
  wait_for "apt server" 15 apt_up
}

# --- Hub stand-in --------------------------------------------------------------------------
hub_up() { curl -fsS "$HUB_URL/api/models/inferops-lab/tiny-chat/revision/main" >/dev/null 2>&1; }

# The stand-in serves a copy of tests/lab/hub/repos in the lab's state (HUB_ROOT), laid anew at each
# `up`: a test adds an upstream commit there (a directory <n+1>, read on the next request) without
# touching the source tree, and a commit a failed test left behind is gone at the next `up`.
HUB_ROOT="$LAB_DIR/hub/repos"

ensure_hub() {
  mkdir -p "$HUB_ROOT"
  rsync -a --delete "$LAB_SRC/hub/repos/" "$HUB_ROOT/"
  if hub_up && [ "$(cat "$RUN/hub.root" 2>/dev/null)" = "$HUB_ROOT" ]; then
    say "hub stand-in: served at $HUB_URL from $HUB_ROOT"
    return
  fi
  if hub_up; then  # a stand-in of an older lab, serving another root
    stop_pid hub
    hub_up && die "port $HUB_PORT answers as the Hub stand-in of another lab (not $RUN/hub.pid): stop it first"
  fi
  say "hub stand-in: serving $HUB_ROOT on $HUB_URL (requests in $LOG/hub-requests.jsonl)"
  spawn hub python3 "$LAB_SRC/hub/hub_standin.py" --root "$HUB_ROOT" --port "$HUB_PORT" --log "$LOG/hub-requests.jsonl"
  printf '%s\n' "$HUB_ROOT" >"$RUN/hub.root"
  wait_for "hub stand-in" 15 hub_up
}

# --- engine simulator images --------------------------------------------------------------
# Digest of repo:tag as the registry serves it (schema 2 manifest).
registry_digest() {
  local repo="${1%:*}" tag="${1##*:}"
  curl -fsS -o /dev/null -D - \
    -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REGISTRY/v2/$repo/manifests/$tag" 2>/dev/null |
    tr -d '\r' | awk 'tolower($1) == "docker-content-digest:" { print $2 }' || true
}

ensure_engine_images() {
  local sim="$LAB_SRC/engine_sim"
  if [ "${LAB_SKIP_ENGINE_SIM:-0}" = 1 ]; then
    say "engine simulator images: skipped (LAB_SKIP_ENGINE_SIM=1)"
    return
  fi
  if [ ! -f "$sim/Dockerfile" ]; then
    say "engine simulator images: skipped (tests/lab/engine_sim/Dockerfile does not exist yet)"
    return
  fi
  local src_hash entry ref engine version fault hash local_hash digest lock
  # The simulator reads the collection's kernel table (plugins/plugin_utils/_kernel_support.py),
  # shared with the lint: it goes into the build context as engine_sim/_kernel_support.py.
  local kernel_table="$REPO/plugins/plugin_utils/_kernel_support.py"
  src_hash="$(tree_hash "$sim" .)$(sha256sum "$kernel_table" | cut -c1-8)-$(docker image inspect --format '{{.Id}}' "$BASE_IMAGE" | cut -c8-19)"
  lock="inferops_serving_image_lock:"$'\n'"  images:"$'\n'
  for entry in "${ENGINE_IMAGES[@]}"; do
    read -r ref engine version fault <<<"$entry"
    hash="$src_hash-$engine-$version-$fault"
    local_hash="$(image_label "$REGISTRY/$ref" inferops-lab.src-hash)"
    digest="$(registry_digest "$ref")"
    if [ "$local_hash" = "$hash" ] && [ -n "$digest" ] &&
       docker image inspect --format '{{join .RepoDigests " "}}' "$REGISTRY/$ref" | grep -q "$digest"; then
      say "image $REGISTRY/$ref: up to date ($digest)"
    else
      say "image $REGISTRY/$ref: building the $engine simulator $version$([ "$fault" = - ] || echo " with FAULT=$fault") and pushing"
      local args=(--network host --label "inferops-lab.src-hash=$hash"
                  --build-arg "BASE_IMAGE=$BASE_IMAGE" --build-arg "ENGINE=$engine"
                  --build-arg "ENGINE_VERSION=$version")
      [ "$fault" != - ] && args+=(--build-arg "FAULT=$fault")
      local context; context="$(mktemp -d)"
      cp -a "$sim/." "$context/" && cp "$kernel_table" "$context/engine_sim/_kernel_support.py"
      docker build "${args[@]}" -t "$REGISTRY/$ref" "$context" >"$LOG/build-engine-sim.log" 2>&1 ||
        { rm -rf "$context"; die "building $REGISTRY/$ref failed (see $LOG/build-engine-sim.log)"; }
      rm -rf "$context"
      docker push "$REGISTRY/$ref" >"$LOG/push.log" 2>&1 || die "pushing $REGISTRY/$ref failed (see $LOG/push.log)"
      digest="$(registry_digest "$ref")"
      [ -n "$digest" ] || die "the registry has no manifest for $ref after the push"
    fi
    lock+="    \"$ref\":"$'\n'"      digest: \"$digest\""$'\n'"      engine_version: \"$version\""$'\n'
  done
  # Each stand-in repository's first commit (tests/lab/hub/repos, not the served copy a test may add to).
  lock+="$(python3 "$LAB_SRC/hub/hub_standin.py" --root "$LAB_SRC/hub/repos" --pins)"$'\n' ||
    die "listing the Hub stand-in's commits failed"
  lock="---
# Written by tests/lab/lab.sh up: the lab registry's digests and the Hub stand-in's model commits
# (the lab's lock file).
# registry: $REGISTRY, hub: $HUB_URL
$lock"
  mkdir -p "$(dirname "$LOCK_FILE")"
  printf '%s' "$lock" >"$LOCK_FILE.tmp"
  if cmp -s "$LOCK_FILE.tmp" "$LOCK_FILE"; then
    rm -f "$LOCK_FILE.tmp"
    say "lock file: ${LOCK_FILE#"$REPO"/} unchanged"
  else
    mv "$LOCK_FILE.tmp" "$LOCK_FILE"
    say "lock file: wrote ${LOCK_FILE#"$REPO"/}"
  fi
}

# The base image in the registry too: a small image with python3 that the nested engines of
# target hosts can pull by digest (e.g. to run the nvidia-smi double under --gpus).
ensure_base_pushed() {
  local ref="inferops-lab/base:bookworm" id digest
  id="$(docker image inspect --format '{{.Id}}' "$BASE_IMAGE")"
  digest="$(registry_digest "$ref")"
  if [ -n "$digest" ] && [ "$(image_label "$REGISTRY/$ref" inferops-lab.base-id)" = "$id" ] 2>/dev/null &&
     docker image inspect --format '{{join .RepoDigests " "}}' "$REGISTRY/$ref" | grep -q "$digest"; then
    say "image $REGISTRY/$ref: pushed ($digest)"
    return
  fi
  say "image $REGISTRY/$ref: pushing"
  printf 'FROM %s\nLABEL inferops-lab.base-id=%s\n' "$BASE_IMAGE" "$id" |
    docker build -q -t "$REGISTRY/$ref" - >"$LOG/build-base-push.log" 2>&1 ||
    die "tagging $REGISTRY/$ref failed (see $LOG/build-base-push.log)"
  docker push "$REGISTRY/$ref" >"$LOG/push.log" 2>&1 || die "pushing $REGISTRY/$ref failed (see $LOG/push.log)"
}

# --- commands -----------------------------------------------------------------------------
cmd_up() {
  [ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts dockerd)"
  mkdir -p "$RUN" "$LOG"
  local start=$SECONDS
  ensure_packages
  ensure_engine
  ensure_registry
  ensure_apt_repo
  ensure_hub
  ensure_images
  ensure_base_pushed
  ensure_engine_images
  say "up in $((SECONDS - start))s: registry http://$REGISTRY, apt $APT_URL (key $APT_URL/gpgkey), hub $HUB_URL"
}

lab_containers() {
  docker ps -aq --filter "label=inferops-lab" 2>/dev/null
  docker ps -aq --filter "ancestor=$TARGET_IMAGE" 2>/dev/null
}

cmd_down() {
  local purge=0
  [ "${1:-}" = --purge ] && purge=1
  stop_pid apt
  stop_pid hub
  stop_pid registry
  if engine_up; then
    local ids
    ids="$(lab_containers | sort -u)"
    if [ -n "$ids" ]; then
      say "removing lab containers: $(echo "$ids" | tr '\n' ' ')"
      echo "$ids" | xargs "$DOCKER_BIN" rm -f -v >/dev/null
    fi
    if [ "$purge" = 1 ]; then
      local images
      images="$(docker images --format '{{.Repository}}:{{.Tag}}' |
        grep -E "^(inferops-lab/|$REGISTRY/)" || true)"
      if [ -n "$images" ]; then
        say "removing images: $(echo "$images" | tr '\n' ' ')"
        echo "$images" | xargs "$DOCKER_BIN" rmi -f >/dev/null
      fi
    fi
  fi
  if [ -f "$RUN/dockerd.pid" ]; then
    stop_pid dockerd
  elif engine_up; then
    say "docker engine: left running (the lab did not start it)"
  fi
  if [ "$purge" = 1 ]; then
    say "purging $LAB_DIR and ${LOCK_FILE#"$REPO"/}"
    rm -rf "$LAB_DIR" "$LOCK_FILE" "$APT_KEY_FILE"
  fi
  say "down"
}

cmd_status() {
  local rc=0
  if engine_up; then
    say "docker engine: up ($(docker info --format '{{.Driver}}') storage driver$(
      [ -f "$RUN/dockerd.pid" ] && echo ', started by the lab'))"
    local image
    for image in "$BASE_IMAGE" "$TARGET_IMAGE"; do
      if image_exists "$image"; then say "image $image: present"; else say "image $image: missing"; rc=1; fi
    done
    local n
    n="$(lab_containers | sort -u | grep -c . || true)"
    say "lab containers: $n"
  else
    say "docker engine: down"; rc=1
  fi
  if registry_up; then
    say "registry: up at http://$REGISTRY ($(curl -fsS "http://$REGISTRY/v2/_catalog" | tr -d '\n'))"
  else
    say "registry: down"; rc=1
  fi
  if apt_up; then say "apt repository: up at $APT_URL"; else say "apt repository: down"; rc=1; fi
  if hub_up; then say "hub stand-in: up at $HUB_URL"; else say "hub stand-in: down"; rc=1; fi
  if [ -f "$LOCK_FILE" ]; then say "lock file: ${LOCK_FILE#"$REPO"/}"; else say "lock file: none"; fi
  return $rc
}

# One `up` or `down` at a time: pytest's workers each call `up` when their first lab module starts,
# and two at once raced on the files it rewrites (the key pin's and the lock's .tmp). flock -o: the
# daemons `up` starts do not inherit the lock.
case "${1:-}" in
  up | down)
    if [ -z "${LAB_SH_LOCKED:-}" ]; then
      mkdir -p "$LAB_DIR"
      LAB_SH_LOCKED=1 exec flock -o "$LAB_DIR/lab.sh.lock" "$0" "$@"
    fi ;;
esac

case "${1:-}" in
  up) cmd_up ;;
  down) shift; cmd_down "$@" ;;
  status) cmd_status ;;
  *) echo "usage: $0 up | down [--purge] | status" >&2; exit 2 ;;
esac
