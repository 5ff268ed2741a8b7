"""`--reparameterize`: a PyTorch module's training-time branches fused before export, as such models are deployed.

MobileOne, RepVGG, RepViT, FastViT and their kin train with parallel conv/BatchNorm branches and ship one conv per
block: the repositories give each block a method that folds its branches in place, named `reparameterize()`
(MobileOne, FastViT, timm's byobnet), `switch_to_deploy()` (RepVGG, MMCV's ports) or `fuse()` (RepViT's Conv2d_BN,
which returns the fused module instead: timm's `reparameterize_model` sets it in place of the child). Exported
unfused, MobileOne-S0 reaches the converters with 5 branches per block summed through BatchNorms (486 ops in a small
6-block copy where the fused one has far fewer), every one a separate int8 rounding.

The source module is kept: the fused copy is what is exported, the unfused one what every artifact is validated
against (edgekit.sources.torch), and the manifest's `source.changes` says what was called on how many modules and
how far the fused copy is from the source on the load's probe input.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from edgekit.core.border import vendor_errors, vendor_message
from edgekit.core.errors import UnsupportedModel, UsageError

METHODS = ("reparameterize", "switch_to_deploy", "fuse")  # in the order a module's own is chosen


def _method(module: Any) -> str | None:
    return next((m for m in METHODS if callable(getattr(module, m, None))), None)


def reparameterized(module: Any) -> tuple[Any, Counter[str]]:
    """A fused deep copy of MODULE (a torch.nn.Module), and how many modules each method was called on.

    Top down, as timm's reparameterize_model: a module with a method is fused (a returned module replaces it) and
    its children are then visited, so a block's own method runs before any of its parts'. The root's own method,
    where it has one, is the model's: it alone is called."""
    import copy

    import torch

    fused = copy.deepcopy(module)
    calls: Counter[str] = Counter()
    with torch.no_grad():
        root = _method(fused)
        if root is not None:
            out = getattr(fused, root)()
            calls[f"{type(fused).__name__}.{root}"] += 1
            return (out if isinstance(out, torch.nn.Module) else fused).eval(), calls
        _visit(fused, calls, torch)
    return fused.eval(), calls


def _visit(parent: Any, calls: Counter[str], torch: Any) -> None:
    for name, child in list(parent.named_children()):
        how = _method(child)
        if how is not None:
            out = getattr(child, how)()
            calls[f"{type(child).__name__}.{how}"] += 1
            if isinstance(out, torch.nn.Module) and out is not child:
                setattr(parent, name, out)
                child = out
        _visit(child, calls, torch)


def fused_copy(module: Any) -> tuple[Any, Counter[str]]:
    """MODULE re-parameterized (edgekit.sources.torch_reparam) and the methods called; the model's own failure, or
    a model with nothing to fuse, is a clean error."""
    with vendor_errors("torch", error=UnsupportedModel, describe=lambda exc: vendor_message(exc, 300, last=True),
                       what="The model's own re-parameterization failed (--reparameterize)",
                       hint="Run its reparameterize() / switch_to_deploy() / fuse() in Python to see why, or "
                       "convert without --reparameterize."):
        fused, calls = reparameterized(module)
    if not calls:
        raise UsageError("--reparameterize: no module of this model has a reparameterize(), switch_to_deploy() or "
                         "fuse() method, so there is nothing to fuse.", hint="Convert without --reparameterize.")
    return fused, calls


def refuse_without_module(kind: str) -> UsageError:
    """The error for --reparameterize on a source that holds a graph, not the module's Python methods."""
    return UsageError(
        f"--reparameterize needs the PyTorch module with its methods; a {kind} source holds its traced graph only.",
        hint="Fuse before saving (call model.reparameterize() / switch_to_deploy() on its blocks, or timm's "
        "reparameterize_model(model)), or give the state_dict with --model package.module:factory so edgekit "
        "can fuse it and validate against the unfused model.")


def words(calls: Counter[str], max_rel: float) -> str:
    """The manifest's line for what was fused."""
    done = ", ".join(f"{how}() on {n} module(s)" if n > 1 else f"{how}()" for how, n in calls.items())
    return (f"re-parameterized (--reparameterize): {done}; the fused model is exported, the unfused one is the "
            f"reference (the fused one differs from it by {max_rel:.1e} of its output range on the probe input)")


__all__ = ["METHODS", "fused_copy", "refuse_without_module", "reparameterized", "words"]
