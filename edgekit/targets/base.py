"""TargetSpec: everything edgekit knows about one conversion target, as data.

A target is what a user names with `--target`. Its spec says which precisions it offers (and
which it always makes), the I/O type each precision defaults to, the steps that turn the form it
consumes into its artifact, the post-steps that work on the validated artifact (the Edge TPU
compiler), and the options of its own (a dataclass of `option()` fields: they join ConvertOptions,
`edgekit convert --help` and the Python API from here). The planner, the CLI help and the docs read
these records; no module outside a target's own file branches on a target's name.

A leaf beside edgekit.core.option_field: edgekit.conversion.options gathers the targets' options from this table, and
the steps read ConvertOptions, so a spec names its steps but never imports them (the planner does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgekit.core.precisions import IoDtype
    from edgekit.core.vendor import Vendor


@dataclass(frozen=True)
class TargetSpec:
    name: str
    help: str  # one line for `edgekit convert --help` and the README
    format: str  # the format of the artifact its steps write (an edgekit.core.formats.FORMATS key)
    steps: tuple[str, ...]  # its own steps (STEPS keys or "module:Class"), after the route to the first one's input
    precisions: tuple[str, ...]  # the precisions it offers (edgekit.core.precisions.PRECISIONS keys)
    # Made whatever --quantize asks (the Edge TPU runs int8 only); None: the precisions asked for
    fixed_precisions: tuple[str, ...] | None = None
    # precision -> why this target cannot make it: asking for it is refused at plan time with that reason, where
    # fixed_precisions would otherwise silently make another (the Edge TPU asked for w8a16)
    refused: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # precision -> default I/O type, for the precisions whose I/O type the user may choose (--io-dtype)
    io_defaults: Mapping[str, IoDtype] = field(default_factory=lambda: MappingProxyType({}))
    # steps run on the validated artifact, each making a derived artifact (or saying how to finish it elsewhere)
    post_steps: tuple[str, ...] = ()
    # every op must stay integer (the Edge TPU): int8 recovery may not leave layers in float (issue 9)
    integer_only: bool = False
    # its own options: a dataclass of edgekit.core.option_field.option() fields (None: it has none)
    options: type | None = None
    # the --int8-recipe names its steps know, as "module:attr" naming a tuple (read only when a request is checked)
    int8_recipes: str | None = None
    # the distributions its steps and post-steps convert and quantize with: the manifest records their versions
    # (tool_versions) for every run that asks for the target, beside edgekit.conversion.execute.TOOL_DISTS, its
    # libraries' and its format's libraries'
    dists: tuple[str, ...] = ()
    # the conversion libraries of its own (a converter no other target drives), by key: its steps pass the Vendor
    # to vendor_errors and require; a missing one's install line names its extra; the manifest records its version
    libraries: Mapping[str, Vendor] = field(default_factory=lambda: MappingProxyType({}))
    # precision -> the lowest ONNX opset a source must have for it (raised at load: per-channel QDQ needs 13)
    min_source_opset: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        for name in ("refused", "io_defaults", "libraries", "min_source_opset"):  # read-only, as frozen promises
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def all_dists(self) -> tuple[str, ...]:
        """The distributions a run asking for this target records: its dists, its libraries', its format's."""
        from edgekit.core.formats import FORMATS

        fmt = FORMATS.get(self.format)
        libs = [*self.libraries.values(), *(fmt.libraries.values() if fmt else ())]
        return tuple(dict.fromkeys([*self.dists, *(d for lib in libs for d in lib.dists)]))

    def wanted(self, asked: list[str]) -> list[str]:
        """The precisions this target makes for a request of ASKED."""
        return list(self.fixed_precisions) if self.fixed_precisions else list(asked)

    def io_dtype(self, precision: str, asked: IoDtype | None) -> IoDtype | None:
        """The I/O type of PRECISION's artifact: the user's --io-dtype where the precision has a choice."""
        if precision not in self.io_defaults:
            return None
        return asked or self.io_defaults[precision]

    def recipe_names(self) -> tuple[str, ...]:
        """The --int8-recipe names this target's steps know (auto always)."""
        if self.int8_recipes is None:
            return ("auto",)
        from edgekit.core.registry import resolve

        return ("auto", *resolve({self.name: self.int8_recipes}, self.name, "int8 recipe table"))


__all__ = ["TargetSpec"]
