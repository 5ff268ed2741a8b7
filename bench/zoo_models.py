"""The model zoo's catalogue and settings: which models, at what size, under which bounds.

Shared by bench/zoo.py (building and running them) and bench/zoo_report.py (docs/zoo.md), so that the
report reads the same list and bounds the runner used without importing the runner.
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "zoo"
DOC = ROOT / "docs" / "zoo.md"
SIZE = 160
N_HEAD = 500  # training digits the head is fitted on (never in the .npz)
N_BN = 64  # training digits the BatchNorm statistics are taken from
TARGETS, PRECISIONS = "onnx,tflite,edgetpu", "fp32,int8"
CALIB_SIZE, VAL_SIZE = 100, 200
MAX_SECONDS, MAX_RSS = 180, 4 * 2**30  # issue 8's bounds for the whole matrix on this 2-core machine
# The int8 recipe every classifier row is converted with. edgekit's default became `auto` (issue 40: a search within
# --int8-budget per int8 artifact) after the classifier rows of 2026-11-25 ran at `plain`, the default then. Random
# weights always miss the int8 bar, so `auto` would search on all three int8 artifacts of every row: more time than
# those rows paid (against issue 8's 180 s) and a different recipe, where the table compares rows. The non-classifier
# rows keep edgekit's default: they are trained models, where the search is what a user gets.
CLASSIFIER_FLAGS = ("--int8-recipe", "plain")
# The Python the timm rows are built in (timm imports torchvision, which cannot load beside edgekit's CPU torch):
# `bench/zoo.py run --timm-python PATH` or this environment variable (bench/zoo_timm.py)
TIMM_ENV = "ZOO_TIMM_PYTHON"


@dataclass(frozen=True)
class ZooModel:
    """One zoo entry: where it comes from and how it is built."""

    name: str
    package: str  # keras | transformers | timm | edgekit | task
    cls: str  # keras.applications function, transformers <Family> (Config / ForImageClassification), timm model name
    kwargs: dict[str, Any] = field(default_factory=dict)  # config overrides (transformers)
    note: str = ""
    size: int = SIZE  # input side: SIZE, unless the architecture is fixed to another (say why where it is)


def _k(cls: str) -> ZooModel:
    return ZooModel(f"keras_{cls.lower()}", "keras", cls)


def _t(name: str, family: str, note: str = "", **kwargs: Any) -> ZooModel:
    return ZooModel(f"hf_{name}", "transformers", family, kwargs, note)


# Issue 41: the mobile backbones of 2024-26, from timm at random weights, prepared as the rows above (BatchNorm
# statistics from digits, a ridge-fitted 10-class head) in the Python the user names (bench/zoo_timm.py). Converted as
# timm builds them: MobileOne, FastViT and RepViT before re-parameterization (a .pt2 holds no reparameterize()).
TIMM: tuple[ZooModel, ...] = (
    ZooModel("timm_mobileone_s0", "timm", "mobileone_s0", note="MobileOne-S0, unfused"),
    ZooModel("timm_efficientvit_b0", "timm", "efficientvit_b0", note="EfficientViT-B0 (MIT)"),
    ZooModel("timm_mobilevitv2_050", "timm", "mobilevitv2_050", note="MobileViTv2-0.5"),
    ZooModel("timm_fastvit_t8", "timm", "fastvit_t8", note="FastViT-T8, unfused"),
    ZooModel("timm_repvit_m0_9", "timm", "repvit_m0_9", note="RepViT-M0.9, unfused"),
    # its attention biases are sized for a 7x7 last stage (timm: "fixed at 7x7 (224x224 input)"): 160 does not run
    ZooModel("timm_efficientformer_l1", "timm", "efficientformer_l1", note="EfficientFormer-L1, 224: fixed size",
             size=224),
    ZooModel("timm_mobilenetv4_conv_small", "timm", "mobilenetv4_conv_small", note="MobileNetV4-Conv-Small"),
    ZooModel("timm_ghostnetv3_050", "timm", "ghostnetv3_050", note="GhostNetV3-0.5"),
)


# Ordered small and cheap first, so that a run cut short has covered the most families. Every keras.applications
# family under 30 M parameters (RegNet is not in Keras 3's applications; VGG and InceptionResNetV2 are over 30 M).
ZOO: tuple[ZooModel, ...] = (
    ZooModel("mnist_cnn", "edgekit", "models/mnist_cnn.pt2", note="bundled, trained"),
    _k("MobileNetV3Small"),
    _t("mobilenet_v2", "MobileNetV2", "1.0, 224 config"),
    _t("resnet18", "ResNet", "ResNet-18", layer_type="basic", depths=[2, 2, 2, 2],
       hidden_sizes=[64, 128, 256, 512]),
    _t("convnextv2_atto", "ConvNextV2", "atto", depths=[2, 2, 6, 2], hidden_sizes=[40, 80, 160, 320]),
    _k("EfficientNetB0"),
    _t("efficientnet_b0", "EfficientNet", "B0", width_coefficient=1.0, depth_coefficient=1.0,
       image_size=SIZE, hidden_dim=1280, dropout_rate=0.2),
    _k("MobileNetV2"),
    _t("mobilenet_v1", "MobileNetV1", "1.0"),
    _t("regnet_y_400mf", "RegNet", "RegNetY-400MF", hidden_sizes=[48, 104, 208, 440], depths=[1, 3, 6, 6],
       groups_width=8, layer_type="y"),
    _k("MobileNet"),
    _k("MobileNetV3Large"),
    _t("mobilevit_s", "MobileViT", "small", image_size=SIZE),
    _k("EfficientNetV2B0"),
    _t("levit_128s", "Levit", "128S", image_size=SIZE),
    _t("hgnetv2", "HGNetV2", "HGNetV2Config defaults"),
    _k("NASNetMobile"),
    _k("DenseNet121"),
    _t("bit_resnetv2_50", "Bit", "BiT-ResNetV2-50 defaults"),
    _t("poolformer_s12", "PoolFormer", "S12 defaults"),
    _k("ResNet50"),
    _k("ResNet50V2"),
    _k("Xception"),
    _k("InceptionV3"),
    _t("convnext_tiny", "ConvNext", "tiny defaults"),
    _k("ConvNeXtTiny"),
    *TIMM,
)
# Issue 15: what people deploy besides classifiers, built and trained in code (bench/zoo_tasks.py)
TASKS: tuple[ZooModel, ...] = (
    ZooModel("det_faceproposal", "task", "torch .pt2", note="3-head proposal net: obj, cls, box per 8x8 cell"),
    ZooModel("unet_seg", "task", "torch .pt2", note="U-Net, 11 classes per pixel, label masks"),
    ZooModel("crnn_digits", "task", "torch .pt2", note="CTC recognizer of 4-digit strings, (N,T,C) output"),
    ZooModel("east_dyn_onnx", "task", "ONNX opset 12, dynamic N,H,W", note="EAST-style, TorchScript exporter"),
    # trained third-party ONNX from the rapidocr-onnxruntime wheel (Paddle2ONNX exports), on text rendered with PIL
    ZooModel("ppocr_det", "task", "PP-OCRv4 det ONNX, dynamic N,H,W", note="DB text detector, trained"),
    ZooModel("ppocr_rec", "task", "PP-OCRv4 rec ONNX, dynamic N,W", note="text-line CTC recogniser, trained"),
    ZooModel("ppocr_cls", "task", "PP-OCR v2.0 cls ONNX, dynamic N,H,W", note="0/180 orientation, trained"),
    # issue 27: trained MTCNN from the facenet-pytorch wheel's state dicts (bench/zoo_mtcnn.py), on photo crops
    ZooModel("mtcnn_pnet", "task", "torch .pt2, 1x3x64x64", note="MTCNN P-Net, trained: box map + face prob map"),
    ZooModel("mtcnn_rnet", "task", "torch .pt2, 1x3x24x24", note="MTCNN R-Net, trained: box (N,4) + prob (N,2)"),
    ZooModel("mtcnn_onet", "task", "torch .pt2, 1x3x48x48",
             note="MTCNN O-Net, trained: box (N,4), landmarks (N,10), prob (N,2)"),
    # issue 27: YOLOv8 heads judged by their boxes (bench/zoo_detectors.py)
    ZooModel("digits_yolo", "task", "ONNX, Ultralytics-style metadata, 1x3x128x128",
             note="YOLOv8-architecture digits detector, trained; labelled boxes"),
    ZooModel("yolov8n_320", "task", "ONNX opset 17 (TorchScript exporter, as Ultralytics), 1x3x320x320",
             note="YOLOv8n, random init with Ultralytics' bias prior"),
    # issue 37: MediaPipe 0.10.21's trained float .tflite graphs, judged by their kinds (bench/zoo_mediapipe.py)
    ZooModel("mp_selfie_segmentation", "task", "MediaPipe fp16 .tflite, 1x256x256x3",
             note="selfie segmentation, trained: person mask (custom op rewritten)"),
    ZooModel("mp_hand_landmark_full", "task", "MediaPipe fp16 .tflite, 1x224x224x3",
             note="hand landmarks, trained: 21 points, presence, handedness"),
    ZooModel("mp_face_landmark", "task", "MediaPipe fp16 .tflite, 1x192x192x3",
             note="face mesh, trained: 468 points, presence"),
    ZooModel("mp_face_detection_short", "task", "MediaPipe fp16 .tflite, 1x128x128x3",
             note="BlazeFace short range, trained: raw anchors head (face)"),
    ZooModel("mp_palm_detection_full", "task", "MediaPipe fp16 .tflite, 1x192x192x3",
             note="palm detector, trained: raw anchors head (palm)"),
    ZooModel("mp_pose_detection", "task", "MediaPipe fp16 (sparse) .tflite, 1x224x224x3",
             note="pose detector, trained: raw anchors head (pose)"),
)
BY_NAME = {m.name: m for m in (*ZOO, *TASKS)}


def edgekit_revision() -> dict[str, Any]:
    """The code a row runs: the commit checked out, and whether edgekit/ differs from it (None where git cannot
    say: no git, not a checkout)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit, status = git("rev-parse", "--short", "HEAD"), git("status", "--porcelain", "--", "edgekit")
    return {"commit": commit, "edgekit_changed": None if status is None else bool(status)}


def machine() -> str:
    """This machine in words: OS, architecture, CPU model, cores, memory."""
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").is_file() else ""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, {mem:.0f} GiB"
