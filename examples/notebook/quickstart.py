# %% [markdown]
# # edgekit from a notebook
#
# A model you hold in memory, converted to ONNX and TFLite (fp32 and int8), each artifact validated
# against the model; then the int8 artifact run on a few inputs, profiled and benched. Nothing is
# downloaded: the "training" is a least-squares fit of the last layer on synthetic data, a second.
#
# A percent-format script: open it in Jupyter (jupytext), VS Code or Spyder as cells, or run it whole
# with `python examples/notebook/quickstart.py [OUT_FOLDER]`. tests/api/test_notebook_example.py runs it in a
# Jupyter kernel, as a notebook runs.

# %%
import sys
from pathlib import Path

import numpy as np
import torch

import edgekit

# The output folder: `python quickstart.py OUT` names it; in a notebook kernel, whose argv holds the kernel's own
# flags (`-f CONNECTION_FILE`), it is edgekit-out/notebook beside the notebook.
in_kernel = "ipykernel" in sys.modules
out = Path(sys.argv[1]) if len(sys.argv) > 1 and not in_kernel else Path("edgekit-out") / "notebook"
rng = np.random.default_rng(0)

# %% [markdown]
# ## A small CNN, fitted on synthetic data
# Images of 3 channels, 32x32; the class is which channel is brightest. The convolutions keep their random
# weights; the last layer is fitted by least squares on their features.

# %%
torch.manual_seed(0)
features = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3),
                               torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
head = torch.nn.Linear(16, 3)
model = torch.nn.Sequential(features, head).eval()

x = rng.random((600, 3, 32, 32), dtype=np.float32)
x[np.arange(600), rng.integers(0, 3, 600)] += 0.5  # one channel brighter
labels = x.mean(axis=(2, 3)).argmax(axis=1)
with torch.no_grad():
    f = features(torch.from_numpy(x)).numpy()
    targets = np.eye(3, dtype=np.float32)[labels]
    a = np.c_[f, np.ones(len(f), dtype=np.float32)]
    w = np.linalg.lstsq(a, targets, rcond=None)[0]
    head.weight.copy_(torch.from_numpy(w[:-1].T.copy()))
    head.bias.copy_(torch.from_numpy(w[-1].copy()))
    accuracy = (model(torch.from_numpy(x)).argmax(1).numpy() == labels).mean()
print(f"training accuracy: {accuracy:.1%}")

# %% [markdown]
# ## Convert it as it is, in memory
# The module is exported with torch.export and kept in `out/source/` (with the calibration arrays), so
# the run can be repeated from the files. Calibration and validation data are numpy arrays here: (x, y)
# with labels, so the table shows each artifact's accuracy too.

# %%
result = edgekit.convert(model, targets="onnx,tflite", quantize="fp32,int8", input_shape=(1, 3, 32, 32),
                         calib=(x, labels), calib_size=200, val_size=200, out=out, force=True)
print(result)  # in Jupyter, `result` alone shows the same table as HTML

# %% [markdown]
# ## Run the int8 TFLite artifact
# Inputs by the source's name (or positionally), in the source's layout (NCHW; the TFLite file is NHWC),
# as float: edgekit quantizes them with the model's scale and dequantizes the outputs, as `edgekit serve`.

# %%
int8 = result["tflite", "int8"]
with int8.load(device="cpu") as tflite_model:
    print(tflite_model)
    batch = x[:8]
    got = tflite_model(input=batch)["output"]
with torch.no_grad():
    want = model(torch.from_numpy(batch)).numpy()
print("int8 classes:  ", got.argmax(1))
print("torch classes: ", want.argmax(1))
print(f"max abs difference: {np.abs(got - want).max():.4f}")

# %% [markdown]
# ## Inspect, profile, bench

# %%
report = int8.inspect()
print(f"{report.format}: {len(report.ops)} ops {report.op_counts}, {report.macs:,} MACs")

profile = int8.profile(device="cpu", runs=50, min_seconds=0.2, warmup=5)
print(f"p50 {profile.latency_ms.p50:.3f} ms, p90 {profile.latency_ms.p90:.3f} ms on {profile.runtime.name}")

bench = result.bench(runs=20, min_seconds=0.1, warmup=2, in_process=True)
try:
    print(bench.to_pandas()[["label", "runtime", "device", "p50_ms", "top1_agreement", "accuracy"]])
except edgekit.MissingDependency:  # pandas is optional
    for row in bench.rows:
        print(row.label, row.runtime, row.device, row.p50_ms)

# %% [markdown]
# ## Gate it, as CI would
# With no baseline, `check` judges the absolute budgets (fidelity, size) alone.

# %%
verdict = edgekit.check(result)
print(f"edgekit check: {verdict.verdict} ({verdict.counts})")
