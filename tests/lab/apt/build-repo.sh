#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Build the lab's GPG-signed apt repository, laid out as NVIDIA's libnvidia-container repository
# so a role's sources line works against both with only the base URL changed:
#
#   WWW/libnvidia-container/gpgkey                      ASCII-armoured public key
#   WWW/libnvidia-container/stable/deb/<arch>/           flat repo: *.deb, Packages(.gz),
#                                                       Release, Release.gpg, InRelease
#   deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] \
#       <BASE>/stable/deb/$(ARCH) /
#
# usage: build-repo.sh WWW GNUPGHOME DEBDIR
# The signing key is generated once (gpg --batch) in GNUPGHOME and reused afterwards.
set -euo pipefail
www="$1" gnupghome="$2" debs="$3"
base="$www/libnvidia-container"
export GNUPGHOME="$gnupghome"
uid="inferops lab apt signing key <apt@inferops-lab.invalid>"

mkdir -p "$GNUPGHOME" && chmod 700 "$GNUPGHOME"
if ! gpg --batch --list-secret-keys "$uid" >/dev/null 2>&1; then
  echo "  generating the lab's apt signing key in $GNUPGHOME"
  gpg --batch --quiet --passphrase '' --quick-gen-key "$uid" ed25519 sign never 2>/dev/null
fi

rm -rf "$base.new" && mkdir -p "$base.new/stable/deb"
gpg --batch --armor --export "$uid" >"$base.new/gpgkey"
for deb in "$debs"/*.deb; do
  arch="$(dpkg-deb -f "$deb" Architecture)"
  mkdir -p "$base.new/stable/deb/$arch"
  cp "$deb" "$base.new/stable/deb/$arch/"
done
for dir in "$base.new"/stable/deb/*/; do
  arch="$(basename "$dir")"
  (
    cd "$dir"
    apt-ftparchive packages . >Packages 2>/dev/null
    gzip -9nc Packages >Packages.gz
    apt-ftparchive \
      -o APT::FTPArchive::Release::Origin="inferops lab (libnvidia-container test double)" \
      -o APT::FTPArchive::Release::Label="libnvidia-container" \
      -o APT::FTPArchive::Release::Architectures="$arch" \
      release . >"../Release.$arch.tmp"
    mv "../Release.$arch.tmp" Release
    gpg --batch --yes --local-user "$uid" --clearsign -o InRelease Release
    gpg --batch --yes --local-user "$uid" --armor --detach-sign -o Release.gpg Release
  )
done
rm -rf "$base.old"
[ -d "$base" ] && mv "$base" "$base.old"
mv "$base.new" "$base"
rm -rf "$base.old"
