"""An output that cannot be written fails at once, before any request reaches the server.

Root ignores file permissions, so the outputs are made unwritable for real: each case
runs in a child process in its own user and mount namespace (``unshare -rm``) where a
tmpfs is mounted read-only (EROFS) or full (ENOSPC). The loopback server counts requests.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from contrastkit.schema import Context, Gender
from contrastkit.tsv import write_visogender_tsv
from factories import make_row
from loopback import LoopbackServer, jpeg_bytes, static


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    return probe.returncode == 0


pytestmark = [
    pytest.mark.skipif(
        not _namespaces_work(),
        reason="needs `unshare -rm` (user + mount namespaces) to make a folder read-only or "
        "full even for root",
    ),
    pytest.mark.slow,  # a subprocess in a namespace per case
]

CHILD = """
import json, sys
from contrastkit.curation.urls import CheckConfig
from contrastkit.errors import ResourceError

job, options = sys.argv[1], json.loads(sys.argv[2])
network = CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0)
try:
    if job == "check":
        from contrastkit.curation.integrity import URLCheckJobConfig, check_dataset_urls
        check_dataset_urls(URLCheckJobConfig(network=network, **options))
    else:
        from contrastkit.curation.maintenance import MaintainConfig, maintain
        maintain(MaintainConfig(network=network, **options))
except ResourceError as error:
    print(f"ResourceError: {error}")
    sys.exit(3)
print("finished")
"""


def read_only(folder: Path, *seed: Path) -> str:
    """Shell: mount a tmpfs on ``folder``, copy ``seed`` files in, make it read-only."""
    copies = "".join(f" && cp {shlex.quote(str(f))} {shlex.quote(str(folder))}/" for f in seed)
    return f"mount -t tmpfs tmpfs {folder}{copies} && mount -o remount,ro {folder}"


def full(folder: Path) -> str:
    """Shell: mount a 16 KiB tmpfs on ``folder`` and fill it."""
    return (f"mount -t tmpfs -o size=16k tmpfs {folder} && "
            f"(dd if=/dev/zero of={folder}/fill bs=1k count=64 2>/dev/null; true)")  # fmt: skip


def isolated(setup: str, *command: str) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in a new user + mount namespace after the shell ``setup``."""
    script = f"{setup} && exec {shlex.join(command)}"
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def job(setup: str, name: str, **options: object) -> subprocess.CompletedProcess[str]:
    options = {k: [str(p) for p in v] if isinstance(v, tuple) else str(v)
               for k, v in options.items()}  # fmt: skip
    return isolated(setup, sys.executable, "-c", CHILD, name, json.dumps(options))


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    from PIL import Image

    body = jpeg_bytes(Image.new("RGB", (96, 96), "teal"))
    with LoopbackServer({f"/{n}.jpg": static(body) for n in range(4)}) as running:
        yield running


@pytest.fixture
def tsv(server: LoopbackServer, tmp_path: Path) -> Path:
    genders = (Gender.MASCULINE, Gender.FEMININE)
    rows = [make_row("doctor", genders[n % 2], n=n + 1, url=server.url(f"/{n}.jpg"))
            for n in range(4)]  # fmt: skip
    write_visogender_tsv(tmp_path / "oo.tsv", rows, Context.OO)
    return tmp_path / "oo.tsv"


def requests(server: LoopbackServer) -> int:
    return sum(server.hits.values())


def test_a_sanity_run_in_the_namespace_reaches_the_server(
    server: LoopbackServer, tsv: Path, tmp_path: Path
) -> None:
    (tmp_path / "out").mkdir()
    before = requests(server)
    done = job(f"mount -t tmpfs tmpfs {tmp_path / 'out'}", "check", files=(tsv,),
               results=tmp_path / "out" / "results.jsonl")  # fmt: skip
    assert done.returncode == 0 and "finished" in done.stdout, done.stderr
    assert requests(server) == before + 4


@pytest.mark.parametrize(
    ("mount", "option", "reason"),
    [
        (read_only, "results", "read-only file system"),
        (read_only, "store", "read-only file system"),
        (full, "results", "no space left on the device"),
        (full, "store", "no space left on the device"),
    ],
)
def test_check_fails_before_any_request(
    server: LoopbackServer, tsv: Path, tmp_path: Path, mount: object, option: str, reason: str
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / ("results.jsonl" if option == "results" else "store")
    before = requests(server)
    done = job(mount(folder), "check", files=(tsv,), **{option: target})  # type: ignore[operator]
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert (
        done.stdout.startswith(f"ResourceError: {target}: cannot write") and reason in done.stdout
    )
    assert requests(server) == before


@pytest.mark.slow
@pytest.mark.parametrize("output", ["db", "report", "store", "tsv"])
def test_maintain_fails_before_any_request(
    server: LoopbackServer, tsv: Path, tmp_path: Path, output: str
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    options: dict[str, object] = {"files": (tsv,), "db": tmp_path / "state.sqlite"}
    seed: list[Path] = []
    if output == "tsv":  # the TSV's own folder is read-only: it cannot be rewritten
        seed, options["files"] = [tsv], (locked / tsv.name,)
    else:
        options[output] = locked / {"db": "state.sqlite", "report": "r.md", "store": "s"}[output]
    before = requests(server)
    done = job(read_only(locked, *seed), "maintain", **options)
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "read-only file system" in done.stdout and str(locked) in done.stdout
    assert requests(server) == before
    assert not (tmp_path / "state.sqlite").exists()  # nothing started


def test_the_command_line_names_it_an_environment_error(
    server: LoopbackServer, tsv: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    before = requests(server)
    cli = "from contrastkit.cli.urls import app; app(prog_name='contrastkit urls')"
    done = isolated(full(folder), sys.executable, "-c", cli, "check", str(tsv),
                    "--allow-private", "--results", str(folder / "r.jsonl"))  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "environment error:" in done.stderr and "no space left" in done.stderr
    assert "Traceback" not in done.stderr
    assert requests(server) == before
