# syntax=docker/dockerfile:1
#
# edgekit with its converter stack (stage "convert"), Coral's Edge TPU compiler (stage "edgetpu"), and the
# slim image a device runs `edgekit serve` from (stage "device", at the end).
#
#   docker build --target edgetpu -t edgekit-edgetpu .
#   docker run --rm -v "$PWD:/work" -w /work edgekit-edgetpu \
#       edgekit convert models/mnist_cnn.pt2 --target edgetpu --calib mnist
#   docker run --rm -v "$PWD:/work" -w /work edgekit-edgetpu edgetpu_compiler -s -o . model_int8.tflite
#
# Coral ships edgetpu_compiler only as an x86-64 Debian package, so the image is linux/amd64 (an ARM
# host runs it under emulation, slowly). Building needs internet access: PyPI, download.pytorch.org
# (the CPU build of torch) and packages.cloud.google.com (Coral's apt repository). Outputs are
# written as root into the mounted folder; add `--user "$(id -u):$(id -g)"` to keep your ownership.

FROM --platform=linux/amd64 python:3.11-slim-bookworm AS convert

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# torch first, from PyTorch's CPU index: on Linux x86-64 the PyPI wheel is the multi-GB CUDA build.
# The pin matches pyproject.toml's convert extra ("torch==2.13.0" is satisfied by 2.13.0+cpu).
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

WORKDIR /opt/edgekit
COPY pyproject.toml README.md ./
COPY edgekit ./edgekit
RUN pip install ".[convert]" && edgekit --version

# onnx2tf runs onnxsim as a subprocess: the interpreter's bin folder must be on PATH (it is, in this image).
WORKDIR /work
CMD ["edgekit", "--help"]


# Coral's apt repository, as on https://coral.ai/docs/edgetpu/compiler/ ("System requirements" /
# "Download"), with the key in its own keyring (signed-by) instead of the deprecated apt-key. Made once in
# this throwaway stage; the stages that install from it copy just the keyring and the source line.
FROM python:3.11-slim-bookworm AS coral-apt
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl gnupg \
 && curl -fsSL https://packages.cloud.google.com/apt/doc/apt-key.gpg \
      | gpg --dearmor -o /usr/share/keyrings/coral-edgetpu.gpg \
 && echo "deb [signed-by=/usr/share/keyrings/coral-edgetpu.gpg] https://packages.cloud.google.com/apt coral-edgetpu-stable main" \
      > /etc/apt/sources.list.d/coral-edgetpu.list


FROM convert AS edgetpu

COPY --from=coral-apt /usr/share/keyrings/coral-edgetpu.gpg /usr/share/keyrings/
COPY --from=coral-apt /etc/apt/sources.list.d/coral-edgetpu.list /etc/apt/sources.list.d/
RUN apt-get update \
 && apt-get install -y --no-install-recommends edgetpu-compiler \
 && rm -rf /var/lib/apt/lists/* \
 && edgetpu_compiler --version

WORKDIR /work
CMD ["edgekit", "--help"]


# Stage "device": what runs on a Raspberry Pi or a Coral host: edgekit[runtime,serve] only (no torch, no
# TensorFlow, no converters), plus Coral's Edge TPU runtime (libedgetpu1-std, which Coral publishes for amd64,
# arm64 and armhf). Not tied to amd64: build it on the Pi, or with `docker buildx build --platform linux/arm64`.
#
#   docker build --target device -t edgekit-device .
#   docker run --rm -p 8000:8000 -e EDGEKIT_TOKEN="$(openssl rand -hex 32)" \
#       -v "$PWD/edgekit-out/mnist_cnn:/models/mnist_cnn:ro" edgekit-device
#   (with a Coral USB Accelerator add: --device /dev/bus/usb)
#
# It binds 0.0.0.0 inside the container, so it refuses to start without a token (EDGEKIT_TOKEN or --token-file).
FROM python:3.11-slim-bookworm AS device

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

COPY --from=coral-apt /usr/share/keyrings/coral-edgetpu.gpg /usr/share/keyrings/
COPY --from=coral-apt /etc/apt/sources.list.d/coral-edgetpu.list /etc/apt/sources.list.d/
RUN apt-get update \
 && apt-get install -y --no-install-recommends libedgetpu1-std \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/edgekit
COPY pyproject.toml README.md ./
COPY edgekit ./edgekit
RUN pip install ".[runtime,serve]" && edgekit --version \
 && useradd --system --no-create-home edgekit

USER edgekit
EXPOSE 8000
STOPSIGNAL SIGTERM
CMD ["edgekit", "serve", "/models/mnist_cnn", "--host", "0.0.0.0", "--port", "8000", "--allow-remote"]
