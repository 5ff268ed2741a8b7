#!/bin/sh
# Install `edgekit serve` on a Raspberry Pi (64-bit Raspberry Pi OS, aarch64) as a systemd service.
# Run as root from this folder, with the conversion output folder copied to ./mnist_cnn.
set -eu
id edgekit >/dev/null 2>&1 || useradd --system --home /opt/edgekit --shell /usr/sbin/nologin edgekit
usermod -aG plugdev edgekit
python3 -m venv /opt/edgekit/venv
/opt/edgekit/venv/bin/pip install 'edgekit[serve]'
mkdir -p /opt/edgekit/models /etc/edgekit
cp -r mnist_cnn /opt/edgekit/models/
printf '0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n' > /opt/edgekit/models/labels.txt
[ -f /etc/edgekit/token ] || (umask 077 && openssl rand -hex 32 > /etc/edgekit/token)
chown edgekit:edgekit /etc/edgekit/token
install -m 644 edgekit-serve.service /etc/systemd/system/
systemctl daemon-reload
systemctl enable --now edgekit-serve
