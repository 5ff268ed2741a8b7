"""The POSIX shell lines edgekit sends to a device: quoting, the probe, the cache upload, the watched run.

Everything is plain `sh` plus `uname`, `tar` and `sha256sum` (coreutils or busybox), which Raspberry Pi
OS, Debian, Mendel (Coral) and Yocto images have. Every value put into a line is quoted here.
"""

from __future__ import annotations

import shlex


def path_word(path: str) -> str:
    """PATH as one shell word; a leading `~/` still means the device user's home (it is not expanded here)."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def probe(edgekit: str) -> str:
    """Facts about the device, and what `EDGEKIT --version` says there (and its exit status), as key=value lines."""
    return "; ".join([
        "printf 'machine=%s\\n' \"$(uname -m)\"",
        "printf 'os=%s\\n' \"$(uname -sr)\"",
        "printf 'cores=%s\\n' \"$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null)\"",
        f"v=$({edgekit} --version 2>&1 </dev/null); rc=$?",
        "printf 'edgekit_rc=%s\\n' \"$rc\"",
        "printf '%s\\n' \"$v\" | while IFS= read -r l; do printf 'edgekit_out=%s\\n' \"$l\"; done",
    ])


def cached(cache: str, keys: list[str]) -> str:
    """Print `cached=KEY` for each of KEYS already complete in the device's CACHE."""
    c = path_word(cache)
    words = " ".join(shlex.quote(k) for k in keys)
    return f"for k in {words}; do [ -f {c}/\"$k\"/.complete ] && printf 'cached=%s\\n' \"$k\"; done; true"


def store(cache: str) -> str:
    """Unpack a tar of KEY/ folders from stdin into CACHE, check each against its SHA256SUMS, then publish it.

    A folder is moved into place only once complete and checked, so an interrupted copy leaves nothing a later
    run would take for the artifact.
    """
    c = path_word(cache)
    return (f"set -e; mkdir -p {c}; t=$(mktemp -d {c}/.incoming.XXXXXX); trap 'rm -rf \"$t\"' EXIT; "
            "tar -x -f - -C \"$t\"; "
            "for d in \"$t\"/*/; do k=$(basename \"$d\"); "
            "(cd \"$d\" && sha256sum -c SHA256SUMS >/dev/null) || { echo \"sha256 mismatch in $k\" >&2; exit 9; }; "
            f"touch \"$d/.complete\"; rm -rf {c}/\"$k\"; mv \"$d\" {c}/\"$k\"; printf 'stored=%s\\n' \"$k\"; done")


def watched(command: str) -> str:
    """COMMAND run so that the end of our connection stops it: a watcher reads stdin, which we hold open while
    we wait; at EOF (Ctrl-C here, ssh killed, the link gone) it sends SIGTERM to the session's process group,
    so edgekit and its child processes end on the device too. The command's exit status is the line's."""
    # fd 3: the session's stdin kept for the watcher (a background list's own stdin is /dev/null in sh)
    return (f"exec 3<&0; {command} </dev/null 3<&- & p=$!; "
            "( while read -r _ <&3; do :; done; kill -TERM 0 ) >/dev/null 2>&1 & w=$!; exec 3<&-; "
            "wait $p; rc=$?; kill $w 2>/dev/null; exit $rc")


__all__ = ["cached", "path_word", "probe", "store", "watched"]
