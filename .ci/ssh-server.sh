#!/bin/sh
# Best effort and quiet, never fails: the remote tests (tests/remote) start OpenSSH's server on 127.0.0.1.
# Where sshd is missing and this runs as root with apt (a fresh Debian/Ubuntu CI machine), install Debian's
# openssh-server; anywhere else those tests skip and say why. edgekit itself never installs anything.
{ command -v sshd || [ -x /usr/sbin/sshd ]; } >/dev/null 2>&1 && exit 0
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || exit 0
install() { DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends openssh-server; }
{ install || { timeout 300 apt-get update -qq && install; }; } >/dev/null 2>&1 || true
exit 0
