"""A real scrapyd for tests: started in a temporary folder on a free loopback port, the project
deployed to it with ``scrapyd-deploy`` from the repository root, jobs scheduled and waited for
through its JSON API."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROJECT = "knowledge_crawler"
TARGET = "kc-test"  # the [deploy:kc-test] target written for the test, beside scrapy.cfg's own


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ScrapydServer:
    """``scrapyd`` as a subprocess, its state (eggs, logs, queues) all in ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process: subprocess.Popen[bytes] | None = None
        self.deploy_output = ""
        self.log = root / "scrapyd.out"

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 30) -> None:
        (self.root / "scrapyd.conf").write_text(
            "[scrapyd]\n"
            "bind_address = 127.0.0.1\n"
            f"http_port = {self.port}\n"
            f"eggs_dir = {self.root / 'eggs'}\n"
            f"logs_dir = {self.root / 'logs'}\n"
            f"dbs_dir = {self.root / 'dbs'}\n"
            "items_dir =\n"
            "jobs_dir =\n"
            "max_proc = 2\n"
            "poll_interval = 0.2\n",
            encoding="utf-8",
        )
        # scrapyd reads ./scrapyd.conf, then ~/.scrapyd.conf: a HOME of its own keeps a
        # developer's configuration out of the test.
        env = {**os.environ, "HOME": str(self.root)}
        env.pop("KC_DATABASE_URL", None)  # every job names its database with setting=
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(BIN / "scrapyd")], cwd=self.root, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"scrapyd exited with {self.process.returncode}:\n{self.tail()}")
            try:
                if self.get("daemonstatus.json")["status"] == "ok":
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"scrapyd did not answer within {timeout} s:\n{self.tail()}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-chars:]

    # ------------------------------------------------------------------ deploy

    def deploy(self) -> subprocess.CompletedProcess[str]:
        """``scrapyd-deploy kc-test --version test`` from the repository root, as a user would.

        The target lives in a scrapy.cfg of the user's own configuration folder
        (``$XDG_CONFIG_HOME/scrapy.cfg``, which scrapyd-deploy reads with the project's),
        so the project's ``scrapy.cfg`` is used as it is.
        """
        config = self.root / "config"
        config.mkdir(exist_ok=True)
        (config / "scrapy.cfg").write_text(
            f"[deploy:{TARGET}]\nurl = {self.url}\nproject = {PROJECT}\n", encoding="utf-8"
        )
        env = {**os.environ, "XDG_CONFIG_HOME": str(config), "HOME": str(self.root)}
        result = subprocess.run(
            [str(BIN / "scrapyd-deploy"), TARGET, "--version", "test"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        self.deploy_output = result.stdout + result.stderr
        return result

    def egg(self) -> Path:
        [egg] = (self.root / "eggs" / PROJECT).glob("*.egg")
        return egg

    # ------------------------------------------------------------------ API

    def get(self, endpoint: str, **params: str) -> dict[str, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(self.url + endpoint + query, timeout=10) as response:
            return dict(json.load(response))

    def post(self, endpoint: str, data: list[tuple[str, str]]) -> dict[str, Any]:
        body = urllib.parse.urlencode(data).encode()
        with urllib.request.urlopen(self.url + endpoint, data=body, timeout=10) as response:
            return dict(json.load(response))

    def schedule(self, settings: dict[str, str], **args: str) -> str:
        data = [("project", PROJECT), ("spider", "knowledge"), *args.items()]
        data += [("setting", f"{name}={value}") for name, value in settings.items()]
        answer = self.post("schedule.json", data)
        assert answer["status"] == "ok", answer
        return str(answer["jobid"])

    def wait_for(self, job: str, timeout: float = 90) -> dict[str, Any]:
        """The finished job's entry of ``listjobs.json``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for entry in self.get("listjobs.json", project=PROJECT)["finished"]:
                if entry["id"] == job:
                    return dict(entry)
            time.sleep(0.2)
        raise AssertionError(f"job {job} did not finish within {timeout} s:\n{self.tail()}")

    def job_log(self, entry: dict[str, Any]) -> str:
        with urllib.request.urlopen(self.url + entry["log_url"].lstrip("/"), timeout=10) as r:
            return str(r.read().decode("utf-8", errors="replace"))
