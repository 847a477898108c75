"""The wheels that travel to the GPU machine: read the lists, check a download, print the
``carry`` list and the CPU rehearsal's base requirements.

    python bench/gpu/wheels.py check [DIR]       # the downloaded wheels against the lists
    python bench/gpu/wheels.py carry [DIR]       # the device tool's carry list (JSON)
    python bench/gpu/wheels.py rehearsal         # requirements of the rehearsal's base env
    python bench/gpu/wheels.py pip-args          # pip download's target options
    python bench/gpu/wheels.py lock [DIR]        # record DIR's wheels in wheels.lock.json
    python bench/gpu/wheels.py verify [DIR]      # on the machine: requirements vs installed

``bench/gpu/wheels.txt`` names each wheel (``name==version``); ``bench/gpu/device-packages.txt``
what the GPU machine already has. ``check`` fails (exit 1) unless DIR holds exactly one
wheel per listed pin, each installable on CPython 3.12 / manylinux x86-64, none of a
package the machine has, every requirement of every wheel (extras aside, markers for
Python 3.12 on Linux x86-64) met by another wheel or by a machine package (at its version
where that is known), and the whole under the 64 MiB a device call carries, with room for
the working tree. Needs only the standard library and ``packaging`` (both on the machine).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import zipfile
from dataclasses import asdict, dataclass
from email.parser import HeaderParser
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.tags import Tag
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WHEEL_LIST = HERE / "wheels.txt"
DEVICE_LIST = HERE / "device-packages.txt"
LOCK = HERE / "wheels.lock.json"  # what prepare.sh downloaded: file, sha256, size, requires
WHEEL_DIR = ROOT / ".gpu-wheels"
CARRY_LIMIT = 64 * 2**20  # what one device call carries: working tree + carried paths
TREE_ALLOWANCE = 16 * 2**20  # kept free for the working tree itself (about 5 MiB today)
PYTHON = (3, 12)
GLIBC_MAX = (2, 35)  # manylinux_2_N tags accepted (the machine's glibc is newer)
PLATFORMS = [
    "manylinux_2_35_x86_64", "manylinux_2_34_x86_64", "manylinux_2_31_x86_64",
    "manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64",
]  # fmt: skip
MARKERS = {
    **default_environment(),
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
}


@dataclass(frozen=True)
class Pin:
    """One line of a list: a package, its version if pinned, whether the rehearsal
    installs it (device list), and the line it came from."""

    name: str
    version: Version | None
    rehearsal: bool
    line: int


def read_list(path: Path) -> dict[str, Pin]:
    """The packages of ``path`` by canonical name: ``name`` or ``name==version`` a line,
    ``#`` comments (``# rehearsal`` marks the rehearsal's packages)."""
    pins: dict[str, Pin] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text, _, comment = raw.partition("#")
        text = text.strip()
        if not text:
            continue
        requirement = Requirement(text)
        specs = list(requirement.specifier)
        if len(specs) > 1 or (specs and specs[0].operator != "=="):
            raise ValueError(f"{path}:{number}: '{text}': write name or name==version")
        name = canonicalize_name(requirement.name)
        if name in pins:
            raise ValueError(f"{path}:{number}: {name} is listed twice")
        version = Version(specs[0].version) if specs else None
        pins[name] = Pin(name, version, "rehearsal" in comment, number)
    return pins


def supported(tag: Tag) -> bool:
    """Whether a wheel tag installs on CPython 3.12 / manylinux x86-64."""
    interpreter, abi, platform = tag.interpreter, tag.abi, tag.platform
    pure = interpreter in {"py3", "py312", "py2"} and abi == "none"
    if interpreter.startswith("cp3"):
        minor = int(interpreter[3:])
        cpython = (abi == "abi3" and minor <= PYTHON[1]) or (minor == PYTHON[1] and abi == "cp312")
    else:
        cpython = False
    if platform == "any":
        return pure or cpython
    if not platform.endswith("_x86_64"):
        return False
    if platform.startswith("manylinux_"):
        major, minor_glibc = (int(p) for p in platform.split("_")[1:3])
        linux = (major, minor_glibc) <= GLIBC_MAX
    else:
        linux = platform in {"manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64"}
    return linux and (pure or cpython)


@dataclass(frozen=True)
class Wheel:
    """One downloaded wheel as bench/gpu/wheels.lock.json records it."""

    file: str
    sha256: str
    size: int
    requires: tuple[str, ...]  # Requires-Dist that apply on the machine (no extra)


def requirements(wheel: Path) -> list[Requirement]:
    """The wheel's ``Requires-Dist`` that apply on the machine (no extra)."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        headers = HeaderParser().parsestr(archive.read(metadata).decode("utf-8"))
    wanted = []
    for text in headers.get_all("Requires-Dist") or []:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({**MARKERS, "extra": ""}):
            wanted.append(requirement)
    return wanted


def describe(folder: Path) -> list[Wheel]:
    """The wheels of ``folder``: name, hash, size and requirements."""
    return [
        Wheel(
            path.name,
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_size,
            tuple(str(r) for r in requirements(path)),
        )
        for path in sorted(folder.glob("*.whl"))
    ]


def write_lock(folder: Path, lock: Path = LOCK) -> None:
    """Record the wheels of ``folder`` in ``lock`` (the offline test reads it)."""
    entries = [asdict(wheel) for wheel in describe(folder)]
    lock.write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")


def read_lock(lock: Path = LOCK) -> list[Wheel]:
    """The wheels recorded by the last ``prepare.sh``."""
    entries = json.loads(lock.read_text(encoding="utf-8"))
    return [Wheel(e["file"], e["sha256"], e["size"], tuple(e["requires"])) for e in entries]


def check(folder: Path) -> list[str]:
    """Every problem with the wheels in ``folder`` (empty: they are ready to travel)."""
    return check_wheels(describe(folder), read_list(WHEEL_LIST), read_list(DEVICE_LIST))


def check_wheels(wheels: list[Wheel], pins: dict[str, Pin], device: dict[str, Pin]) -> list[str]:
    """Every problem with ``wheels`` against the pins and the machine's packages."""
    problems = [f"{n} is on the GPU machine already: carrying it too stops the install"
                for n in pins if n in device]  # fmt: skip
    found: dict[str, Version] = {}
    for wheel in wheels:
        name, version, _, tags = parse_wheel_filename(wheel.file)
        if name in found:
            problems.append(f"{wheel.file}: a second version of {name}")
        found[name] = version
        pin = pins.get(name)
        if pin is None or pin.version != version:
            problems.append(f"{wheel.file}: not pinned in {WHEEL_LIST.name}")
        if not any(supported(tag) for tag in tags):
            problems.append(f"{wheel.file}: no tag for CPython 3.12 on manylinux x86-64")
        problems += unmet(wheel, pins, device)
    problems += [f"{n}=={p.version}: no wheel" for n, p in pins.items() if n not in found]
    total = sum(wheel.size for wheel in wheels)
    if total > CARRY_LIMIT - TREE_ALLOWANCE:
        problems.append(
            f"the wheels take {total / 2**20:.1f} MiB: over the {CARRY_LIMIT / 2**20:.0f} MiB a "
            f"call carries less {TREE_ALLOWANCE / 2**20:.0f} MiB for the working tree"
        )
    return problems


def unmet(wheel: Wheel, pins: dict[str, Pin], device: dict[str, Pin]) -> list[str]:
    """The requirements of ``wheel`` met neither by a carried wheel nor by the machine."""
    problems = []
    for requirement in map(Requirement, wheel.requires):
        name = canonicalize_name(requirement.name)
        have = pins.get(name) or device.get(name)
        if have is None:
            problems.append(f"{wheel.file} needs {requirement}: neither carried nor on the machine")
        elif have.version is not None and not requirement.specifier.contains(
            have.version, prereleases=True
        ):
            where = "carried" if name in pins else "on the machine"
            problems.append(f"{wheel.file} needs {requirement}: {have.version} is {where}")
    return problems


def prune(folder: Path, wheel_list: Path = WHEEL_LIST) -> list[Path]:
    """Remove the wheels of ``folder`` that ``wheel_list`` does not pin (an older version)."""
    pins = read_list(wheel_list)
    removed = []
    for wheel in sorted(folder.glob("*.whl")):
        name, version, _, _ = parse_wheel_filename(wheel.name)
        if name not in pins or pins[name].version != version:
            wheel.unlink()
            removed.append(wheel)
    return removed


def verify(folder: Path) -> list[str]:
    """On the machine, after the install: each carried wheel's requirements against the
    versions this Python imports (a carried one or the machine's own)."""
    from importlib import metadata

    problems = []
    for wheel in sorted(folder.glob("*.whl")):
        for requirement in requirements(wheel):
            try:
                have = Version(metadata.version(requirement.name))
            except metadata.PackageNotFoundError:
                problems.append(f"{wheel.name} needs {requirement}: not installed")
                continue
            if not requirement.specifier.contains(have, prereleases=True):
                problems.append(f"{wheel.name} needs {requirement}: {have} is installed")
    return problems


def rehearsal_requirements(device_list: Path = DEVICE_LIST) -> list[str]:
    """The rehearsal base environment's requirements: the machine's packages it needs, at
    the machine's versions where known."""
    return [
        f"{pin.name}=={pin.version}" if pin.version else pin.name
        for pin in read_list(device_list).values()
        if pin.rehearsal
    ]


def pip_download_args() -> list[str]:
    """pip download's options for wheels that install on the machine."""
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    return [
        "--no-deps", "--only-binary=:all:", "--python-version", "3.12", "--implementation",
        "cp", *platforms,
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "command",
        choices=("check", "carry", "rehearsal", "pip-args", "pins", "prune", "verify", "lock"),
    )
    parser.add_argument("folder", nargs="?", type=Path, default=WHEEL_DIR)
    args = parser.parse_args()
    if args.command == "check":
        problems = check(args.folder)
        for problem in problems:
            print(f"wheels: {problem}", file=sys.stderr)
        total = sum(w.stat().st_size for w in args.folder.glob("*.whl"))
        count = len(list(args.folder.glob("*.whl")))
        print(f"{count} wheels, {total / 2**20:.1f} MiB in {args.folder}: "
              f"{'NOT ready' if problems else 'ready to travel'}")  # fmt: skip
        sys.exit(1 if problems else 0)
    if args.command == "carry":
        print(json.dumps([str(args.folder.resolve().relative_to(ROOT))]))
    elif args.command == "rehearsal":
        print("\n".join(rehearsal_requirements()))
    elif args.command == "lock":
        write_lock(args.folder)
        print(f"wrote {LOCK.relative_to(ROOT)}")
    elif args.command == "prune":
        for wheel in prune(args.folder):
            print(f"removed {wheel.name}: not pinned in {WHEEL_LIST.name}")
    elif args.command == "verify":
        problems = verify(args.folder)
        for problem in problems:
            print(f"deps: {problem}")
        print(f"deps: {len(problems)} requirement(s) of the carried wheels not met here")
        sys.exit(1 if problems else 0)
    elif args.command == "pip-args":
        print(" ".join(pip_download_args()))
    else:
        print("\n".join(f"{p.name}=={p.version}" for p in read_list(WHEEL_LIST).values()))


if __name__ == "__main__":
    main()
