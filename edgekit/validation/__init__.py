"""Validation: an artifact run through its runtime (in a child process) against the source model's reference on the
same held-out inputs, every output judged by its kind (edgekit.fidelity). Below conversion, quantize and emulate,
which all judge with it: conversion validates what it wrote, the int8 search judges its candidates, and
`--validate-on` reruns the same check on an emulated Raspberry Pi core."""
