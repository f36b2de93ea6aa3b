"""The licence: the Apache-2.0 text and its NOTICE at the root, beside every client package,
and inside every distribution built from them (Python wheels and sdists, the npm package's
file list, the Java jar's resources)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.support.deployment import REPO

# sha256 of the Apache License 2.0 as the ASF publishes it (LICENSE-2.0.txt).
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
CLIENTS = ("python", "ts", "java", "go")
FILES = ("LICENSE", "NOTICE")


def test_the_root_carries_the_apache_licence_and_its_notice() -> None:
    text = (REPO / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256, "the full, unchanged text"
    notice = (REPO / "NOTICE").read_text(encoding="utf-8")
    assert notice.startswith("Statewright\nCopyright ")


@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_package_carries_the_same_files(client: str) -> None:
    for name in FILES:
        assert (REPO / "clients" / client / name).read_bytes() == (REPO / name).read_bytes()


def test_every_package_declares_apache_2() -> None:
    for project in (REPO / "pyproject.toml", REPO / "clients/python/pyproject.toml"):
        meta = tomllib.loads(project.read_text(encoding="utf-8"))["project"]
        assert meta["license"] == "Apache-2.0", project
        assert meta["license-files"] == list(FILES), project
    package = json.loads((REPO / "clients/ts/package.json").read_text(encoding="utf-8"))
    assert package["license"] == "Apache-2.0"
    assert set(FILES) <= set(package["files"]), "npm packs only what `files` lists"
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    pom = ElementTree.parse(REPO / "clients/java/pom.xml").getroot()
    assert pom.findtext("m:licenses/m:license/m:name", namespaces=ns) == "Apache-2.0"
    shipped = [
        (
            r.findtext("m:targetPath", namespaces=ns),
            [i.text for i in r.findall("m:includes/m:include", ns)],
        )
        for r in pom.findall("m:build/m:resources/m:resource", ns)
    ]
    assert ("META-INF", list(FILES)) in shipped, "the jar carries both in META-INF"


_BUILD = """
import sys
from setuptools import build_meta
out = sys.argv[1]
built = [build_meta.build_sdist(out), build_meta.build_wheel(out)]
with open(out + "/built.txt", "w") as f:
    f.write(" ".join(built))
"""


@pytest.mark.parametrize(
    ("project", "copy"),
    [("clients/python", ["statewright"]), (".", ["service", "README.md"])],
    ids=["statewright", "statewrightd"],
)
def test_python_distributions_include_both(project: str, copy: list[str], tmp_path: Path) -> None:
    # Built from a copy: a build writes build/ and *.egg-info beside its sources.
    source, out = tmp_path / "src", tmp_path / "dist"
    source.mkdir()
    out.mkdir()
    root = REPO / project
    for name in [*copy, "pyproject.toml", *FILES]:
        if (root / name).is_dir():
            shutil.copytree(
                root / name,
                source / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
            )
        else:
            shutil.copy2(root / name, source / name)
    done = subprocess.run(
        [sys.executable, "-c", _BUILD, str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    sdist_name, wheel_name = (out / "built.txt").read_text().split()
    with tarfile.open(out / sdist_name) as sdist:
        top = sdist_name.removesuffix(".tar.gz")
        members = set(sdist.getnames())
        for name in FILES:
            assert f"{top}/{name}" in members
    with zipfile.ZipFile(out / wheel_name) as wheel:
        names = wheel.namelist()
        for name in FILES:
            (path,) = [n for n in names if n.endswith(f".dist-info/licenses/{name}")]
            assert wheel.read(path) == (REPO / name).read_bytes()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        assert b"License-Expression: Apache-2.0" in metadata
