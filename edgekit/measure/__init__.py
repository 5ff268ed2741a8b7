"""The building blocks of a measurement, one job per module, none of them importing a framework.

- settings.py: how to measure (`MeasureSettings`, shared by `edgekit profile` and `edgekit bench`)
- loop.py: the timed single-stream loop
- stats.py: latency percentiles from the loop's timings
- machine.py: resident memory and this CPU's measured peak compute
- artifact.py: what is known about the file measured (size, digest, precision, MAC count)
- records.py: the typed parts of a ProfileResult (artifact, device, runtime, memory, compute)
- child.py: one measurement in a child process (`edgekit profile --json`), as bench runs its rows
- run_meter.py: a conversion run's process-tree peak memory and phase seconds (manifest `run`)

`edgekit.measure.profile` composes them into a ProfileResult; `edgekit.measure.bench` runs many.
"""
