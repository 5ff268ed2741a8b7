"""The convert pipeline: options, the plan, calibration and held-out data, execution of the steps,
validation of every artifact against its source, and the output folder. `edgekit.convert` is its front door
(edgekit.conversion.pipeline)."""
