"""Measuring on a device from the workstation, over SSH (`edgekit profile/bench --remote user@host`).

host: who to reach and the ssh command lines; ssh: one call; shell: the lines sent; files: what of an
artifact is copied; device: one connection, its facts, cache and runs; profile: a remote ProfileResult;
options: the command-line options profile and bench share. See docs/remote.md.
"""
