"""Running the service: the port checked before any model loads, the service loaded, then uvicorn."""

from __future__ import annotations

import ipaddress
import socket
import sys
import time

from kalbert.errors import KalbertError
from kalbert.serve.settings import ServeSettings


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_port(host: str, port: int) -> None:
    """Refuse a port that is taken (or an address this machine does not have) in one line, before loading."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise KalbertError(f"cannot listen on {host}:{port} ({exc.strerror or exc})",
                           "choose another --port (another kalbert serve?) or --host") from None


def serve(settings: ServeSettings) -> int:
    """Load everything, then answer requests until interrupted."""
    import faiss
    import uvicorn

    from kalbert.serve.app import create_app
    from kalbert.serve.service import Service

    check_port(settings.host, settings.port)
    started = time.perf_counter()
    faiss.omp_set_num_threads(1)  # concurrent searches each on one core, rather than all contending for all
    service = Service.load(settings)
    if not service.api_key and not _loopback(settings.host):
        print(f"kalbert serve: warning: listening on {settings.host} without --api-key: anyone who reaches it can "
              "read and change the indexes", file=sys.stderr)
    names = ", ".join([*(f"index {n}" for n in service.indexes), *(f"model {n}" for n in service.models)])
    print(f"kalbert serve: {names} on http://{settings.host}:{settings.port} (loaded in "
          f"{time.perf_counter() - started:.1f} s)", flush=True)
    uvicorn.run(create_app(service), host=settings.host, port=settings.port, log_level="warning",
                access_log=False, lifespan="on")
    return 0
