# `make demo`: create .venv, install edgekit with every extra, convert the bundled model and bench it.
# `make test`: create .venv if needed, install, lint (ruff, then mypy on edgekit/ as pyproject.toml's [tool.mypy]
# says), run the test suite (what CI runs); as root with apt it also
# installs Debian's openssh-server where missing, for the tests against a real sshd (tests/remote; else skipped),
# and debootstrap + qemu-user-static for the tests on emulated Raspberry Pi cores (tests/emulate; else skipped).
# `make test-fast`: the same without the tests marked slow (real conversions, torch/TensorFlow models).
# Both run pytest on TEST_WORKERS processes (pytest-xdist; the tests sharing a session or module fixture stay on one
# worker: tests/conftest.py). `make test TEST_WORKERS=0` runs them in this one process. `make test` ends with the 25
# slowest tests and their seconds (where the suite's time goes: docs/results/test-suite.md).
PYTHON ?= python3
TEST_WORKERS ?= 2
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.edgekit-installed
OUT ?= edgekit-out/mnist_cnn

.PHONY: demo test test-fast install lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[all]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/edgekit convert models/mnist_cnn.pt2 --target onnx,tflite --quantize fp32,fp16,dynamic,int8 \
		--calib mnist --out $(OUT) --force
	$(BIN)/edgekit bench $(OUT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

test: $(STAMP)
	@sh .ci/ssh-server.sh || true  # best effort: openssh-server for tests/remote where root + apt; else they skip
	@sh .ci/arm64-tools.sh || true  # best effort: debootstrap + qemu-user-static for tests/emulate; else they skip
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/convert.py --json bench/results/convert.json
	$(BIN)/python bench/overhead.py --json bench/results/overhead.json
	$(BIN)/python bench/matrix.py --out bench/results/matrix

clean:
	rm -rf edgekit-out .pytest_cache .ruff_cache .mypy_cache
