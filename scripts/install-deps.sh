#!/usr/bin/env bash
# Installs the Debian packages named as arguments when any is missing.
# As root it runs apt-get itself; otherwise it uses sudo if it can, and
# else says exactly what to run.
set -euo pipefail

missing=()
for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$package")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    apt=(apt-get)
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    apt=(sudo apt-get)
else
    echo "missing Debian packages: ${missing[*]}" >&2
    echo "install them as root:  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
fi

echo "installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${apt[@]}" update -qq
"${apt[@]}" install -y -qq "${missing[@]}" >/dev/null
