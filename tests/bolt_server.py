"""Start and stop a throwaway ArcadeDB server with its Bolt plugin (the `arcadedb-embedded` test
extra) on 127.0.0.1: the live Bolt server the Neo4j legs of the tests and the store benchmark
run against. Stop it with `stop()`, never a signal.

The server runs in a child Python process (`ArcadeDBProcess`), not in the test process: JPype
shuts the JVM down at interpreter exit, and in a process that has also loaded torch that
shutdown segfaulted about every other run (exit 139 after every test had passed). The child
starts the server with `create_server`, prints its URI, waits for a line on stdin, calls
`stop()` and leaves with `os._exit(0)`, skipping the JVM teardown."""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DATABASE = "kgnorm"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_arcadedb(root: Path) -> tuple[Any, str, str]:
    """(server, bolt URI with a fresh password, database name); the server's files live under `root`."""
    import arcadedb_embedded

    password = secrets.token_hex(12)
    port = free_port()
    here = os.getcwd()
    os.chdir(root)  # ArcadeDB writes ./log relative to the working directory the JVM starts in
    try:
        server = arcadedb_embedded.create_server(
            str(root / "databases"), root_password=password,
            config={"host": "127.0.0.1", "http_port": free_port(), "bolt_port": port,
                    "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin"})
        server.start()
        server.create_database(DATABASE)
    finally:
        os.chdir(here)
    return server, f"bolt://root:{password}@127.0.0.1:{port}", DATABASE


class ArcadeDBProcess:
    """A throwaway ArcadeDB server in a child process: `uri`, `database`; `stop()` ends it.
    The child's output goes to ROOT/server.log; it writes ROOT/server.json once it is up."""

    def __init__(self, root: Path, start_timeout: float = 180.0) -> None:
        self._ready = root / "server.json"
        self._log = open(root / "server.log", "w")
        self._proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), str(root)],
                                      stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + start_timeout
        while not self._ready.exists():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the ArcadeDB server did not come up (exit {self._proc.returncode}); "
                                   f"see {root / 'server.log'}")
            time.sleep(0.2)
        info = json.loads(self._ready.read_text())
        self.uri: str = info["uri"]
        self.database: str = info["database"]

    def stop(self, timeout: float = 120.0) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.write("stop\n")
            self._proc.stdin.flush()
            self._proc.wait(timeout=timeout)
        self._log.close()


def _serve(root: Path) -> None:
    server, uri, database = start_arcadedb(root)
    tmp = root / "server.json.tmp"
    tmp.write_text(json.dumps({"uri": uri, "database": database}))
    tmp.rename(root / "server.json")
    try:
        sys.stdin.readline()  # the parent's "stop" (or its end: the parent is gone)
    finally:
        server.stop()
        sys.stdout.flush()
        os._exit(0)  # skip JPype's JVM teardown at exit (see the module docstring)


if __name__ == "__main__":
    _serve(Path(sys.argv[1]))
