#!/bin/sh
# Runs a command in a private mount namespace in which no libpapi exists: each library folder
# that holds one is replaced by a folder of links to everything else it holds. Exit status 97
# means the namespace could not be made (no CAP_SYS_ADMIN): the caller falls back.
# Usage: unshare -m sh without-papi.sh SCRATCH_DIR COMMAND [ARGS...]
set -e
scratch=$1
shift
# Whether folder $1 holds a libpapi.so* (a file or a link, dangling included).
has_papi() {
    for f in "$1"/libpapi.so*; do
        if [ -e "$f" ] || [ -L "$f" ]; then return 0; fi
    done
    return 1
}
mount --make-rprivate / 2>/dev/null || exit 97
for dir in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib /usr/local/lib; do
    [ -d "$dir" ] || continue
    has_papi "$dir" || continue
    real=$(readlink -f "$dir")
    key=$(echo "$real" | tr / _)
    mkdir -p "$scratch/orig$key" "$scratch/farm$key"
    mountpoint -q "$scratch/orig$key" || mount --bind "$real" "$scratch/orig$key" || exit 97
    for f in "$scratch/orig$key"/* "$scratch/orig$key"/.[!.]*; do
        [ -e "$f" ] || [ -L "$f" ] || continue
        case "${f##*/}" in libpapi.so*) continue ;; esac
        ln -sfn "$f" "$scratch/farm$key/${f##*/}"
    done
    mountpoint -q "$real" && ! has_papi "$real" && continue
    mount --bind "$scratch/farm$key" "$real" || exit 97
done
exec "$@"
