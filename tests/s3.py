"""A local S3-compatible server for object-store tests: moto in server mode on 127.0.0.1.

``S3Server`` starts ``python -m moto.server`` on a free loopback port and
gives the ``storage_options`` (Polars/object_store names) that reach it: the
endpoint is in the options only, never in the environment.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from typing import Any


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class S3Server:
    """One moto server process (a context manager)."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> S3Server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the moto server did not start") from None
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)

    @property
    def options(self) -> dict[str, Any]:
        """``storage_options`` for this server (credentials moto accepts, the endpoint, plain HTTP)."""
        return {
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
            "aws_region": "us-east-1",
            "aws_endpoint_url": self.endpoint,
            "aws_allow_http": "true",
        }

    def bucket(self) -> str:
        """A new empty bucket's URL (``s3://<name>``)."""
        from pyarrow import fs

        name = f"b-{uuid.uuid4().hex[:12]}"
        store = fs.S3FileSystem(
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            endpoint_override=f"127.0.0.1:{self.port}",
            scheme="http",
            allow_bucket_creation=True,
        )
        store.create_dir(name)
        return f"s3://{name}"

    def keys(self, url: str) -> list[str]:
        """Every object below a URL."""
        from pyarrow import fs

        store = fs.S3FileSystem(
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            endpoint_override=f"127.0.0.1:{self.port}",
            scheme="http",
        )
        base = url.removeprefix("s3://")
        infos = store.get_file_info(fs.FileSelector(base, recursive=True, allow_not_found=True))
        return sorted(info.path[len(base) + 1 :] for info in infos if info.type == fs.FileType.File)
