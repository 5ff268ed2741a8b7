"""Run the app: load the models, bind (loopback unless allowed), serve, and drain on SIGTERM/SIGINT.

Shutdown as model servers do it behind a load balancer: the first SIGTERM or SIGINT turns
readiness false and answers new requests 503 at once, lets the requests in flight finish (up to
--drain-s), then stops uvicorn and exits 0. A second signal stops at once. uvicorn's own handler
re-raises the signal after its shutdown (the process would then die by it, exit 143), so the
signals are taken here.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from edgekit.core._deps import require
from edgekit.core.errors import MissingDependency, UsageError
from edgekit.serve.config import ServeConfig
from edgekit.serve.logs import configure as configure_logs

if TYPE_CHECKING:  # starlette / prometheus-client are imported only once serving starts
    from edgekit.serve.metrics import Metrics
    from edgekit.serve.models import ModelChoice
    from edgekit.serve.served import ServedModel


log = logging.getLogger(__name__)


def _require_stack() -> None:
    for module, dist in (("starlette", "starlette"), ("uvicorn", "uvicorn"), ("prometheus_client", "prometheus-client"),
                         ("multipart", "python-multipart")):
        try:
            require(module, extra="serve", purpose="serve models over HTTP")
        except MissingDependency as exc:
            exc.hint = f"pip install 'edgekit[serve]'  (or just: pip install '{dist}')"
            raise


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on HOST:PORT (port 0: a free one); UsageError when it is taken or not ours."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and without
    # it a response's body waits behind its headers for the client's delayed ACK (40 ms per request)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}.",
                         hint="Choose another --port (0 picks a free one), or stop what uses it.") from exc
    sock.set_inheritable(True)
    return sock


def ranked(lists: list[list[ModelChoice]], config: ServeConfig, say: Callable[[str], None]) -> list[list[ModelChoice]]:
    """Each PATH's candidates in the order this machine's bench report measured them, where there is one
    (edgekit.serve.bench_rank); SAY hears what decided wherever a report was read."""
    from edgekit.serve.bench_rank import chosen, rank

    out = []
    for path, cands in zip(config.paths, lists, strict=True):
        ranking = rank(cands, Path(path), config.bench)
        if ranking.report is not None:  # without a report the table decides, as it always did
            say(f"{path}: candidates in the order of {ranking.why}")
        out.append(chosen(ranking))
    return out


def load_models(config: ServeConfig, say: Callable[[str], None]) -> tuple[list[ServedModel], Metrics]:
    """Resolve and load every PATH; (served models, metrics)."""
    from edgekit.serve.metrics import Metrics
    from edgekit.serve.models import name_models, read_labels, resolve_candidate_lists
    from edgekit.serve.served import ServedModel, first_that_runs

    metrics = Metrics()
    labels = read_labels(config.labels)
    served = []
    try:
        # each PATH's first candidate that runs here, probed in a child (edgekit.serve.served.first_that_runs), then
        # named: the names follow what is served
        picked = [first_that_runs(cands, config, say) for cands in
                  ranked(resolve_candidate_lists(list(config.paths), config.device, config.precision, config.runtime),
                         config, say)]
        for choice, (_, probed) in zip(name_models([c for c, _ in picked]), picked, strict=True):
            m = ServedModel(choice, config, metrics, labels, probed)
            m.load()
            served.append(m)
            names = " or ".join((choice.name, *choice.aliases))
            say(f"model {names}: {choice.path.name} ({choice.format} {choice.precision or ''}) on {choice.runtime} "
                f"{choice.device}, {config.workers} worker(s), max batch {m.max_batch}, "
                f"loaded in {m.load_seconds:.2f} s" + (", with --labels" if m.labels else ""))
        if labels is not None and not any(m.labels for m in served):
            classes = sorted({m.classes for m in served if m.classes is not None})
            raise UsageError(f"--labels has {len(labels)} names but the models have {classes} classes.",
                             hint="One class name a line, in the order of the model's outputs.")
    except BaseException:
        for m in served:
            m.close()
        raise
    sensor = metrics.watch_power(served[0].choice.device if served else "cpu")
    if sensor:
        say(f"power: {sensor} counted at /metrics (edgekit_energy_joules)")
    return served, metrics


def serve(config: ServeConfig, say: Callable[[str], None] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; 0 after a clean drain."""
    tell = say or (lambda line: print(line, file=sys.stderr, flush=True))
    config.check()
    from edgekit.measure.machine import require_proc

    require_proc("edgekit serve")  # its metrics read the process's memory there
    configure_logs(config.log_level)  # once, before anything that logs: the models' loading included
    _require_stack()
    log.debug("settings: %s", config)  # the token is not in its repr
    import uvicorn

    from edgekit.serve.app import ServerState, build_app

    t0 = time.perf_counter()
    sock = bind(config.host, config.port)
    try:
        served, metrics = load_models(config, tell)
    except BaseException:
        sock.close()
        raise
    models = {n: m for m in served for n in (m.name, *m.choice.aliases)}
    state = ServerState(config=config, models=models, metrics=metrics)

    class DrainingServer(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if state.draining:  # a second signal: stop now
                self.should_exit = True
                self.force_exit = sig == signal.SIGINT
                return
            state.draining = True
            self.drain_deadline = time.monotonic() + config.drain_s
            tell(f"{signal.Signals(sig).name}: not ready any more; draining {state.in_flight} request(s) "
                f"(at most {config.drain_s:g} s)")

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                host, port = sock.getsockname()[:2]
                shown = f"[{host}]" if ":" in host else host
                tell(f"serving {', '.join(state.unique())} on http://{shown}:{port} (KServe v2; ready in "
                    f"{time.perf_counter() - t0:.2f} s){' with a bearer token' if config.token else ''}")

        async def on_tick(self, counter: int) -> bool:
            if state.draining and (state.in_flight == 0 or time.monotonic() >= self.drain_deadline):
                self.should_exit = True
            return await super().on_tick(counter)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            saved = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for s, h in saved.items():
                    signal.signal(s, h)

    # log_config None: uvicorn keeps the handlers configure_logs set (its own dictConfig would replace them); its
    # loggers at --log-level, its access log (every request) only at debug
    uv = uvicorn.Config(build_app(state), log_config=None, log_level=config.log_level.lower(),
                        access_log=config.log_level.lower() == "debug", server_header=False,
                        timeout_graceful_shutdown=max(1, int(config.drain_s)), lifespan="off")
    server = DrainingServer(uv)
    try:
        server.run(sockets=[sock])
    finally:
        for m in served:
            m.close()
        metrics.close()
        sock.close()
    if not server.started:
        raise UsageError(f"The server could not start on {config.host}:{config.port}.")
    tell("stopped: every request in flight was answered" if state.in_flight == 0 else
        f"stopped with {state.in_flight} request(s) unanswered after --drain-s {config.drain_s:g}")
    return 0


__all__ = ["bind", "load_models", "serve"]
