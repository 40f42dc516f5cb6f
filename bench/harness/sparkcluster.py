"""A throw-away Spark standalone cluster on loopback: a master and two workers (one core each), started with
pyspark's own launcher (``bin/spark-class`` in pyspark's install folder), removed afterwards.

Every daemon runs in its own process group, so tearing down kills the JVM that spark-class execs and any
executor a worker forked. Logs and the workers' folders live in a temporary directory; a cluster that does
not come up within the deadline fails with the tail of each log."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.harness.ports import free_port as _port

WORKERS = 2
# a worker offers this much to executors; Spark's default executor asks for 1g (a cap on the JVM's heap,
# not memory taken up front), so a smaller offer would leave the application without executors
WORKER_MEMORY = "1g"
JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
DAEMON_MEMORY = "256m"  # the master's and workers' own heap (SPARK_DAEMON_MEMORY; Spark's default is 1g)


def spark_home() -> Path:
    """pyspark's install folder: it holds ``bin/spark-class`` and the ``jars/`` the daemons run from."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


def _alive_workers(webui: int) -> int:
    """How many workers the master's JSON status lists as ALIVE (0 while the master is not up yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=2) as reply:
            status = json.load(reply)
    except (OSError, ValueError):
        return 0
    return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the daemon's process group, SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def spark_cluster(timeout: float = 60.0) -> Iterator[str]:
    """Yields the master's URL, ``spark://127.0.0.1:PORT``, once both workers are registered and ALIVE."""
    if shutil.which("java") is None:
        raise RuntimeError("Spark needs Java (make java installs Debian's headless JRE)")
    home = spark_home()
    launcher = home / "bin" / "spark-class"
    work = Path(tempfile.mkdtemp(prefix="privdb-spark-cluster-"))
    (work / "conf").mkdir()  # a SPARK_CONF_DIR of its own: no spark-defaults.conf of the machine applies
    # conf/java-opts is added to every JVM Spark's launcher starts from here (the daemons, and the executors
    # the workers start): C1 only and the serial collector halve the cluster's start on two busy cores
    (work / "conf" / "java-opts").write_text(JAVA_OPTS)
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_CONF_DIR": str(work / "conf"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(work / "workers"),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
    }
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    port, webui = _port(), _port()
    master = f"spark://127.0.0.1:{port}"
    commands = {
        "master": ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                   "--webui-port", str(webui)],
        **{f"worker{i}": ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                          "--memory", WORKER_MEMORY, "--webui-port", str(_port()), master]
           for i in range(1, WORKERS + 1)},
    }  # fmt: skip
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name, args in commands.items():
            with open(work / f"{name}.log", "wb") as log:
                processes[name] = subprocess.Popen(
                    [str(launcher), *args], env=env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
        deadline = time.monotonic() + timeout
        while (alive := _alive_workers(webui)) < WORKERS:
            exited = [n for n, p in processes.items() if p.poll() is not None]
            if exited or time.monotonic() > deadline:
                why = f"{', '.join(exited)} exited" if exited else f"not up after {timeout:.0f} s"
                logs = "\n".join(f"--- {n}.log\n{_tail(work / f'{n}.log')}" for n in processes)
                raise RuntimeError(
                    f"the Spark standalone cluster did not start ({why}; {alive}/{WORKERS} workers ALIVE)"
                    f"\n{logs}"
                )
            time.sleep(0.5)
        yield master
    finally:
        for process in reversed(list(processes.values())):  # workers first: the master sees them leave
            _stop(process)
        shutil.rmtree(work, ignore_errors=True)
