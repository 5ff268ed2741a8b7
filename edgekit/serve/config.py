"""Every setting of `edgekit serve`, declared once: the CLI fills it, the app and server read it."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from edgekit.core.errors import UsageError

LOOPBACK_NAMES = ("localhost",)


@dataclass(frozen=True)
class ServeConfig:
    """What to serve and how: the defaults are the CLI's."""

    paths: tuple[Path, ...] = ()
    host: str = "127.0.0.1"
    port: int = 8000
    device: str = "auto"
    precision: str | None = None
    runtime: str | None = None
    threads: int | None = None
    workers: int = 1  # runtime instances per model, each on its own thread
    max_batch: int = 1  # dynamic batching: jobs run together, for models with a dynamic batch
    batch_timeout_ms: float = 2.0
    max_queue: int = 32  # waiting requests per model before 503
    max_body_mb: float = 16.0
    max_image_mpix: float = 24.0  # decoded pixels allowed for /classify (decompression bombs)
    timeout_s: float = 30.0  # a request waiting longer for its result gets 504
    drain_s: float = 10.0  # on SIGTERM/SIGINT: how long requests in flight may take to finish
    token: str | None = field(default=None, repr=False)
    allow_remote: bool = False
    labels: Path | None = None
    top_k: int = 5
    options: dict[str, object] = field(default_factory=dict)  # runtime load options (--option KEY=VALUE)
    log_level: str = "info"  # debug | info | warning | error (edgekit.serve.logs)
    bench: str = "auto"  # the bench report that orders the candidates: auto (beside the folder), off, or a path

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    @property
    def max_pixels(self) -> int:
        return int(self.max_image_mpix * 1_000_000)

    def check(self) -> None:
        """Numbers in range, a known --log-level, and the bind rule: beyond loopback only with --allow-remote and a
        token."""
        from edgekit.serve.logs import check_level

        check_level(self.log_level)
        for name, value, low in (("--workers", self.workers, 1), ("--max-batch", self.max_batch, 1),
                                 ("--max-queue", self.max_queue, 1), ("--top-k", self.top_k, 1)):
            if value < low:
                raise UsageError(f"{name} must be at least {low}, got {value}.")
        for name, fvalue in (("--max-body-mb", self.max_body_mb), ("--timeout-s", self.timeout_s),
                             ("--max-image-mpix", self.max_image_mpix)):
            if fvalue <= 0:
                raise UsageError(f"{name} must be above 0, got {fvalue:g}.")
        if self.batch_timeout_ms < 0 or self.drain_s < 0:
            raise UsageError("--batch-timeout-ms and --drain-s cannot be negative.")
        if not 0 <= self.port <= 65535:
            raise UsageError(f"--port must be 0..65535, got {self.port}.")
        if not is_loopback(self.host):
            if not self.allow_remote:
                raise UsageError(
                    f"Refusing to bind {self.host}: that is reachable from other machines.",
                    hint="Pass --allow-remote together with a token (--token-file FILE or EDGEKIT_TOKEN), or bind "
                    "127.0.0.1 and put a reverse proxy in front.")
            if not self.token:
                raise UsageError(
                    f"--allow-remote needs a token: binding {self.host} without one would let anyone on the "
                    "network use the server.",
                    hint="Put a long random token in a file (e.g. `openssl rand -hex 32 > token`) and pass "
                    "--token-file token, or set EDGEKIT_TOKEN. Clients send `Authorization: Bearer <token>`.")


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'; False for 0.0.0.0, :: and every other address or name."""
    if host.strip().lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def read_token(token_file: Path | None, env_value: str | None) -> str | None:
    """The bearer token from --token-file (first line, stripped) or EDGEKIT_TOKEN; None when neither."""
    if token_file is not None:
        try:
            text = token_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"Cannot read the token file {token_file}: {exc}.") from exc
        token = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not token:
            raise UsageError(f"The token file {token_file} is empty.")
    else:
        token = (env_value or "").strip()
    if token and len(token) < 16:
        raise UsageError("The token is shorter than 16 characters: too easy to guess.",
                         hint="Use e.g. `openssl rand -hex 32`.")
    return token or None


__all__ = ["ServeConfig", "is_loopback", "read_token"]
