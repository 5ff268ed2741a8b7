"""Arm CPUs under emulation: a Raspberry Pi generation's core, run by qemu's user mode in an arm64 userland.

The verdict on an artifact is taken where it runs: a Pi 5's Cortex-A76 computes in fp16 where a runtime
chooses to and picks int8 dot-product kernels a Pi 4's Cortex-A72 lacks, and a wheel may hold instructions a
core does not have. `cpus` names each Pi generation's core (from the device profiles' [cpu] tables),
`userland` builds the arm64 Debian userland with the runtimes' aarch64 wheels, `launch` runs a command in it
on one emulated core, and `validate` runs an artifact's validation there (`edgekit convert --validate-on`).
Timings taken under emulation are never device figures.
"""
