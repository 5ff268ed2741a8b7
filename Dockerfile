# syntax=docker/dockerfile:1
#
# edgekit with its converter stack (stage "convert") and Coral's Edge TPU compiler (stage "edgetpu").
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


FROM convert AS edgetpu

# Coral's apt repository, as on https://coral.ai/docs/edgetpu/compiler/ ("System requirements" /
# "Download"), with the key in its own keyring (signed-by) instead of the deprecated apt-key.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl gnupg \
 && curl -fsSL https://packages.cloud.google.com/apt/doc/apt-key.gpg \
      | gpg --dearmor -o /usr/share/keyrings/coral-edgetpu.gpg \
 && echo "deb [signed-by=/usr/share/keyrings/coral-edgetpu.gpg] https://packages.cloud.google.com/apt coral-edgetpu-stable main" \
      > /etc/apt/sources.list.d/coral-edgetpu.list \
 && apt-get update \
 && apt-get install -y --no-install-recommends edgetpu-compiler \
 && apt-get purge -y --auto-remove curl gnupg \
 && rm -rf /var/lib/apt/lists/* \
 && edgetpu_compiler --version

WORKDIR /work
CMD ["edgekit", "--help"]
