"""Start and stop a throwaway ArcadeDB server with its Bolt plugin (the `arcadedb-embedded` test
extra) on 127.0.0.1: the live Bolt server the Neo4j legs of the tests and the store benchmark
run against. Stop it with `stop()`, never a signal."""
from __future__ import annotations

import os
import secrets
import socket
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
