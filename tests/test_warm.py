"""Warm starts (issue 40, privdb.cli.warm): a real ``privdb`` command handed to the user's warm process
behaves as the same command in a fresh process — its output, exit status, Ctrl-C, a kill, a crash by a
signal, its working directory, environment and standard input — and independent noise in every answer; a
changed source file, a shadowing directory or an unsafe socket directory means a cold start, never a wrong
one; an idle warm process ends. Each test has its own runtime directory (``XDG_RUNTIME_DIR``), so its warm
process is its own, and is stopped at the end."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from privdb.database import Database
from slowpeople import SLOW, slow_people


@pytest.fixture(scope="module")
def slow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three million people and an analyst with a large budget: SLOW reads for seconds."""
    return slow_people(tmp_path_factory.mktemp("warm") / "db", 3_000_000, epsilon=1000)


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    """An environment with its own runtime directory (short: a socket's address holds 107 bytes); its warm
    processes are stopped afterwards."""
    run = Path(tempfile.mkdtemp(prefix="xdg", dir="/tmp"))
    environment = os.environ | {"XDG_RUNTIME_DIR": str(run), "PRIVDB_WARM": "1", "PRIVDB_WARM_IDLE": "120"}
    environment["PRIVDB_PROBE_SECRET"] = "s3cr3t-of-the-first-caller"  # never kept by the warm process
    yield environment
    for pid in _warm_pids(environment):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(run, ignore_errors=True)


def _warm_pids(env: dict[str, str]) -> list[int]:
    where = Path(env["XDG_RUNTIME_DIR"]) / "privdb"
    pids = []
    for lock in where.glob("*.lock") if where.is_dir() else ():
        text = lock.read_text().strip()
        if text and Path(f"/proc/{text}").exists():
            pids.append(int(text))
    return pids


def _privdb(
    env: dict[str, str], *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "privdb", *args], env=env, cwd=cwd, input=stdin, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


def _start(env: dict[str, str], *args: str, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "privdb", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def _warm(env: dict[str, str], db: Path) -> int:
    """Run one command (which starts the warm process) and wait until it listens; its pid."""
    assert _privdb(env, "budget", "--db", str(db), "--analyst", "eve").returncode == 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        socks = list((Path(env["XDG_RUNTIME_DIR"]) / "privdb").glob("warm-*.sock"))
        pids = _warm_pids(env)
        if socks and pids:
            return pids[0]
        time.sleep(0.05)
    raise AssertionError("the warm process did not start")


def _listening(env: dict[str, str], count: int) -> None:
    """Wait until ``count`` warm processes hold their locks and listen on their sockets."""
    where = Path(env["XDG_RUNTIME_DIR"]) / "privdb"
    deadline = time.monotonic() + 120
    while len(_warm_pids(env)) < count or len(list(where.glob("warm-*.sock"))) < count:
        assert time.monotonic() < deadline, "the warm processes did not start"
        time.sleep(0.05)


def _gone(pid: int) -> bool:
    """The process has ended (a zombie not yet reaped by whoever adopted it counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _descendants(pid: int) -> list[int]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    found = [int(c) for c in children]
    return found + [d for c in found for d in _descendants(c)]


def _holding(pids: list[int], file: Path) -> list[int]:
    """The processes among ``pids`` that have ``file`` open."""
    held = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == str(file):
                    held.append(pid)
                    break
            except OSError:
                continue
    return held


def _reading(warm: int, db: Path, timeout: float = 60) -> list[int]:
    """Wait until a process under the warm one has the database open; those processes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = _holding(_descendants(warm), db / "data.duckdb")
        if held:
            return held
        time.sleep(0.02)
    raise AssertionError("no command under the warm process opened the database")


def test_a_warm_command_runs_in_the_warm_process_and_answers_as_a_cold_one(
    slow_db: Path, env: dict[str, str]
) -> None:
    warm = _warm(env, slow_db)
    cold_env = env | {"PRIVDB_WARM": "0"}
    for args in (
        ["budget", "--db", str(slow_db), "--analyst", "eve", "--format", "json"],
        ["explain", "--db", str(slow_db), "DP-SELECT 1 COUNT(*) FROM people", "--format", "json"],
        ["query", "--db", str(slow_db), "--analyst", "eve", "DP-SELECT 1 COUNT(*) FROM nowhere"],
        ["query", "--no-such-option"],
        ["--help"],
    ):
        hot, cold = _privdb(env, *args), _privdb(cold_env, *args)
        assert (hot.returncode, hot.stdout, hot.stderr) == (cold.returncode, cold.stdout, cold.stderr), args
    process = _start(
        env, "query", "--db", str(slow_db), "--analyst", "eve", SLOW.format(0.25), "--format", "json"
    )
    (reader,) = _reading(warm, slow_db)
    assert reader != process.pid and process.pid not in _descendants(warm)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert json.loads(out)["epsilon_spent"] == pytest.approx(0.25)
    assert _warm_pids(env) == [warm]  # the same warm process stays for the next command
    assert len(os.listdir(f"/proc/{warm}/task")) == 1  # one thread: nothing another held is locked in a fork
    assert b"s3cr3t-of-the-first-caller" not in Path(f"/proc/{warm}/environ").read_bytes()
    where = Path(env["XDG_RUNTIME_DIR"]) / "privdb"
    assert where.stat().st_mode & 0o777 == 0o700
    assert {p.stat().st_mode & 0o777 for p in where.iterdir()} == {0o600}  # the socket and its lock


def test_ctrl_c_reaches_the_warm_command(slow_db: Path, env: dict[str, str]) -> None:
    warm = _warm(env, slow_db)
    process = _start(env, "query", "--db", str(slow_db), "--analyst", "eve", SLOW.format(0.27))
    _reading(warm, slow_db)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert (process.returncode, err) == (130, "interrupted\n")
    with Database(slow_db) as db:
        entry = db.log("eve", limit=1, newest_first=True)[0]
        assert entry["query"] == SLOW.format(0.27) and entry["outcome"] == "interrupted"


def test_a_killed_caller_takes_its_command_with_it(slow_db: Path, env: dict[str, str]) -> None:
    warm = _warm(env, slow_db)
    process = _start(env, "query", "--db", str(slow_db), "--analyst", "eve", SLOW.format(0.28))
    readers = _reading(warm, slow_db)
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while _holding(readers, slow_db / "data.duckdb") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _holding(readers, slow_db / "data.duckdb"), "the command went on after its caller was killed"


def test_a_command_killed_by_a_signal_ends_its_caller_by_that_signal(
    slow_db: Path, env: dict[str, str]
) -> None:
    """The OOM killer's SIGKILL to the command itself: the caller dies of SIGKILL too, as a cold command
    would (a shell sees 137, never a status the command did not have)."""
    warm = _warm(env, slow_db)
    process = _start(env, "query", "--db", str(slow_db), "--analyst", "eve", SLOW.format(0.29))
    (reader,) = _reading(warm, slow_db)
    os.kill(reader, signal.SIGKILL)
    process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL


def test_working_directory_environment_and_standard_input_are_the_callers(
    slow_db: Path, env: dict[str, str], tmp_path: Path
) -> None:
    _warm(env, slow_db)
    here = tmp_path / "here"
    here.mkdir()
    os.symlink(slow_db, here / "mydb")
    narrow = env | {"COLUMNS": "50"}
    hot = _privdb(narrow, "budget", "--db", "mydb", "--analyst", "eve", cwd=here)
    cold = _privdb(narrow | {"PRIVDB_WARM": "0"}, "budget", "--db", "mydb", "--analyst", "eve", cwd=here)
    assert hot.returncode == 0 and (hot.stdout, hot.stderr) == (cold.stdout, cold.stderr)
    assert max(len(line) for line in hot.stdout.splitlines()) <= 50
    wide = _privdb(env | {"COLUMNS": "200"}, "budget", "--db", "mydb", "--analyst", "eve", cwd=here)
    assert wide.stdout != hot.stdout or max(len(line) for line in hot.stdout.splitlines()) < 50
    # standard input: a query read from it, with `-` (where the command takes one) or a piped answer
    piped = subprocess.run(
        f"{sys.executable} -m privdb budget --db mydb --analyst eve --format json | cat",
        shell=True, env=env, cwd=here, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert json.loads(piped.stdout)["analyst"] == "eve"


def test_warm_answers_have_independent_noise(slow_db: Path, env: dict[str, str]) -> None:
    """30 COUNTs at ε ≈ 0.001 (scale ≈ 1000), each a fresh ε so no stored answer is reused: forked copies of
    one warm process sharing a random state would give equal answers. Two independent draws are equal with
    probability ≈ ε/2 = 5e-4, so among 435 pairs ≥ 10 equal ones happen with probability < 1e-12."""
    _warm(env, slow_db)
    answers = []
    for i in range(30):
        done = _privdb(
            env, "query", "--db", str(slow_db), "--analyst", "eve", "--format", "json",
            f"DP-SELECT {0.001 + i * 1e-7:.7f} COUNT(*) FROM people WHERE age < 10",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        answers.append(json.loads(done.stdout)["rows"][0][0])
    equal_pairs = sum(a == b for i, a in enumerate(answers) for b in answers[i + 1 :])
    assert equal_pairs < 10, answers


def test_a_changed_source_file_means_a_cold_start_and_a_new_warm_process(
    slow_db: Path, env: dict[str, str], tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("")  # imported as every interpreter starts, the warm one too
    env = env | {"PYTHONPATH": os.pathsep.join([str(site), env.get("PYTHONPATH", "")])}
    first = _warm(env, slow_db)
    os.utime(site / "sitecustomize.py", ns=(time.time_ns(), time.time_ns() + 10**9))
    done = _privdb(env, "budget", "--db", str(slow_db), "--analyst", "eve")
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 120
    while (_warm_pids(env) in ([], [first])) and time.monotonic() < deadline:
        time.sleep(0.05)
    (second,) = _warm_pids(env)
    assert second != first and _gone(first)


def test_a_directory_that_shadows_a_loaded_module_runs_cold(
    slow_db: Path, env: dict[str, str], tmp_path: Path
) -> None:
    _warm(env, slow_db)
    here = tmp_path / "shadow"
    here.mkdir()
    real = Path(sysconfig.get_paths()["stdlib"]) / "colorsys.py"
    (here / "colorsys.py").write_text(
        "import sys\nsys.stderr.write('the shadow\\n')\n"
        f"exec(compile(open({str(real)!r}).read(), {str(real)!r}, 'exec'))\n"
    )
    done = _privdb(env, "budget", "--db", str(slow_db), "--analyst", "eve", cwd=here)
    assert done.returncode == 0 and "the shadow" in done.stderr  # the module a fresh process imports here


def test_a_socket_directory_others_can_enter_is_not_used(slow_db: Path, env: dict[str, str]) -> None:
    where = Path(env["XDG_RUNTIME_DIR"]) / "privdb"
    where.mkdir(mode=0o755)
    where.chmod(0o755)
    for _ in range(2):
        done = _privdb(env, "budget", "--db", str(slow_db), "--analyst", "eve")
        assert done.returncode == 0, done.stderr
    time.sleep(0.5)
    assert not list(where.iterdir()) and not _warm_pids(env)


def test_commands_at_once_and_an_idle_warm_process_ends(slow_db: Path, env: dict[str, str]) -> None:
    env = env | {"PRIVDB_WARM_IDLE": "3"}
    warm = _warm(env, slow_db)
    processes = [
        _start(env, "budget", "--db", str(slow_db), "--analyst", "eve", "--format", "json") for _ in range(6)
    ]
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0 and json.loads(out)["analyst"] == "eve", err
    deadline = time.monotonic() + 60
    while not _gone(warm) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(warm)
    assert not list((Path(env["XDG_RUNTIME_DIR"]) / "privdb").glob("*.sock"))


def test_the_caller_side_imports_almost_nothing() -> None:
    """What a warm command's own process imports before it hands over: the standard library's sockets and
    privdb's few modules of the hand-over, none of the libraries a cold start spends its time on."""
    probe = "import sys, privdb.cli.warm; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    heavy = {"numpy", "duckdb", "sqlglot", "typer", "click", "rich", "pydantic", "cryptography", "pandas"}
    assert not {m.split(".")[0] for m in loaded} & heavy
    assert {m for m in loaded if m.startswith("privdb")} <= {
        "privdb", "privdb.errors", "privdb.cli", "privdb.cli.warm", "privdb.cli.warm.caller",
        "privdb.cli.warm.address", "privdb.cli.warm.wire",
    }  # fmt: skip


def test_the_callers_niceness_and_cpus_hold_for_its_command(slow_db: Path, env: dict[str, str]) -> None:
    """``nice -n 7 taskset -c 0 privdb query …``: the command that reads runs at niceness 7 (a warm process
    of callers at 7, started by the first of them) on CPU 0 (the caller's affinity, taken by the fork)."""
    plain = _warm(env, slow_db)
    niced = ["nice", "-n", "7"]
    first = subprocess.run(
        [*niced, sys.executable, "-m", "privdb", "budget", "--db", str(slow_db), "--analyst", "eve"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    _listening(env, 2)
    (warm,) = set(_warm_pids(env)) - {plain}
    process = subprocess.Popen(
        [*niced, "taskset", "-c", "0", sys.executable, "-m", "privdb", "query",
         "--db", str(slow_db), "--analyst", "eve", SLOW.format(0.31)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    (reader,) = _reading(warm, slow_db)
    fields = Path(f"/proc/{reader}/stat").read_text().rsplit(")", 1)[1].split()
    assert int(fields[16]) == 7  # the 19th field of /proc/PID/stat: nice
    assert os.sched_getaffinity(reader) == {0}
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=120)


def _state(pid: int) -> str:
    """The process's state letter (T: stopped); "gone" once it has ended."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _signals(pid: int, field: str, sig: int) -> bool:
    """Whether ``sig`` is in the signal set ``field`` (SigCgt, SigBlk, ShdPnd, …) of /proc/PID/status."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return bool(int(fields[field], 16) & 1 << (sig - 1))


def _catches(pid: int, sig: int) -> bool:
    """Whether ``pid`` has a handler for ``sig`` and does not block it."""
    return _signals(pid, "SigCgt", sig) and not _signals(pid, "SigBlk", sig)


def test_ctrl_z_stops_the_command_and_fg_continues_it(slow_db: Path, env: dict[str, str]) -> None:
    warm = _warm(env, slow_db)
    # a process group of its own in this session, as a shell's job is (in an orphaned group the kernel
    # discards a terminal stop, for a cold command and a warm one alike); a query of many seconds
    slower = SLOW.replace("md5(md5(md5(", "md5(md5(md5(md5(md5(md5(").replace(")))) LIKE", "))))))) LIKE")
    process = _start(
        env, "query", "--db", str(slow_db), "--analyst", "eve", slower.format(0.32), process_group=0
    )
    (reader,) = _reading(warm, slow_db)
    deadline = time.monotonic() + 30
    while (
        not _catches(process.pid, signal.SIGTSTP) and time.monotonic() < deadline
    ):  # its relays are in place
        time.sleep(0.01)
    process.send_signal(signal.SIGTSTP)
    deadline = time.monotonic() + 30
    while (_state(reader) != "T" or _state(process.pid) != "T") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (_state(reader), _state(process.pid)) == ("T", "T")  # both stopped, as one process would be
    _fg(process, reader)
    _ctrl_c(process)


def _fg(process: subprocess.Popen[str], command: int) -> None:
    """``fg`` (SIGCONT to the stopped caller) continues the command."""
    process.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + 30
    while _state(command) == "T" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _state(command) != "T"


def _ctrl_c(process: subprocess.Popen[str]) -> None:
    """A Ctrl-C ends a warm command as it ends a cold one."""
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert (process.returncode, err) == (130, "interrupted\n")


def test_a_ctrl_z_during_the_hand_over_stops_the_command_once_it_runs(
    slow_db: Path, env: dict[str, str]
) -> None:
    """A Ctrl-Z that comes while the caller waits for the warm process's answer is held (blocked) and relayed
    once the command runs: the command stops with its caller, not the caller alone. The warm process is
    stopped to hold the hand-over open (its backlog still takes the connection) for the signal to come."""
    warm = _warm(env, slow_db)
    os.kill(warm, signal.SIGSTOP)
    try:
        process = _start(
            env, "query", "--db", str(slow_db), "--analyst", "eve", SLOW.format(0.33), process_group=0
        )
        deadline = time.monotonic() + 4  # the caller runs cold after 5 s without an answer
        while not _signals(process.pid, "SigBlk", signal.SIGTSTP) and time.monotonic() < deadline:
            time.sleep(0.005)
        assert _signals(process.pid, "SigBlk", signal.SIGTSTP)  # waiting for the answer, Ctrl-Z held
        process.send_signal(signal.SIGTSTP)
        assert _signals(process.pid, "ShdPnd", signal.SIGTSTP) and _state(process.pid) != "T"
    finally:
        os.kill(warm, signal.SIGCONT)
    deadline = time.monotonic() + 30  # the command stops as soon as it runs (before it opens the database)
    while time.monotonic() < deadline:
        stopped = [pid for pid in _descendants(warm) if _state(pid) == "T"]
        if stopped and _state(process.pid) == "T":
            break
        time.sleep(0.02)
    assert len(stopped) == 1 and _state(process.pid) == "T"
    _fg(process, stopped[0])
    assert _reading(warm, slow_db) == stopped  # the stopped process was the command, now reading
    _ctrl_c(process)


def test_a_malformed_request_ends_its_keeper_not_the_warm_process(slow_db: Path, env: dict[str, str]) -> None:
    warm = _warm(env, slow_db)
    (path,) = (Path(env["XDG_RUNTIME_DIR"]) / "privdb").glob("warm-*.sock")
    for junk in (b"\xff\xff\xff\xff", b"\x00\x00\x00\x05nojson", b"\x00\x00\x00\x02{}", b""):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(path))
            sock.sendall(junk)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(30)
            assert sock.recv(16) in (b"", b"C")  # closed, or told to run cold: never a command started
    done = _privdb(env, "budget", "--db", str(slow_db), "--analyst", "eve", "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)["analyst"] == "eve"
    assert _warm_pids(env) == [warm] and not _gone(warm)


def test_a_sandboxed_or_niced_caller_is_not_served_by_an_unsandboxed_warm_process(
    slow_db: Path, env: dict[str, str]
) -> None:
    """Another network namespace (``unshare -n``, as a sandbox or a unit's PrivateNetwork makes) or another
    niceness (which a fork could raise, never lower back) is another warm process."""
    first = _warm(env, slow_db)
    budget = [sys.executable, "-m", "privdb", "budget", "--db", str(slow_db), "--analyst", "eve"]
    for prefix in (["unshare", "-n"], ["nice", "-n", "5"]):
        done = subprocess.run([*prefix, *budget], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    _listening(env, 3)
    assert len(set(_warm_pids(env))) == 3 and first in _warm_pids(env)
