#!/bin/sh
# Best effort and quiet, never fails: the emulated Raspberry Pi tests (tests/emulate) run edgekit on arm64 cores under
# qemu's user mode. Where this runs as root with apt (a fresh Debian/Ubuntu CI machine), install Debian's
# debootstrap, qemu-user-static and binfmt-support and let binfmt_misc run aarch64 binaries; anywhere else those
# tests skip and say why. edgekit itself never installs anything.
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || exit 0
if ! { command -v debootstrap && command -v qemu-aarch64-static && command -v update-binfmts; } >/dev/null 2>&1; then
  install() { DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends \
    debootstrap qemu-user-static binfmt-support; }
  { install || { timeout 300 apt-get update -qq && install; }; } >/dev/null 2>&1 || true
fi
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc >/dev/null 2>&1
update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
exit 0
