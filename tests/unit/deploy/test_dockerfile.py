"""The container image's conventions, read from the Dockerfile (no Docker engine here)."""

from __future__ import annotations

import re

from tests.unit.deploy.dockerfile import DOCKERIGNORE, dockerignore_includes, runtime_user, stages
from tests.unit.deploy.rendering import REPO

BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|make|build-essential|python3?-dev|libpq-dev|cargo)\b")


def test_multi_stage_on_a_pinned_slim_python() -> None:
    _, all_stages = stages()
    assert len(all_stages) >= 2
    for stage in all_stages:
        image, _, tag = stage.base.partition(":")
        assert image == "python", stage.base
        assert tag and tag != "latest" and "slim" in tag, stage.base
    assert all_stages[-1].name == "runtime"


def test_the_final_stage_copies_the_environment_and_installs_nothing() -> None:
    _, all_stages = stages()
    build, final = all_stages[0], all_stages[-1]
    copies = [c.words() for c in final.all("COPY")]
    assert ["--from=" + str(build.name), "/opt/statewright", "/opt/statewright"] in copies
    for run in final.all("RUN"):
        assert not re.search(r"\b(apt-get|apt|pip|pip3) +install\b", run.arguments), run
        assert not BUILD_TOOLS.search(run.arguments), run
    # The build stage installs the locked dependencies, every file checked against its
    # hash, from the index or, given one, only from a wheelhouse...
    locked, local = [r for r in build.all("RUN") if "pip install" in r.arguments]
    assert {"--require-hashes", "--no-deps", "requirements.lock"} <= set(locked.words())
    assert '${WHEELHOUSE:+--no-index --find-links "$WHEELHOUSE"}' in locked.arguments
    # ...then both distributions from the tree (the server depends on the client), with
    # nothing more from anywhere, and checks that no dependency is missing.
    words = local.words()
    assert "./clients/python" in words and "." in words
    assert {"--no-index", "--no-deps", "--no-build-isolation"} <= set(words)
    assert "/opt/statewright/bin/pip check" in local.arguments


def test_runs_as_an_unprivileged_numeric_user() -> None:
    assert runtime_user() >= 1000
    _, all_stages = stages()
    final = all_stages[-1]
    # USER comes after every RUN: nothing in the final image is set up as root later.
    keywords = [i.keyword for i in final.instructions]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")


def test_entrypoint_is_statewrightd_serve_on_every_interface() -> None:
    _, all_stages = stages()
    final = all_stages[-1]
    (entrypoint,) = final.all("ENTRYPOINT")
    assert entrypoint.exec_form() == ["statewrightd", "serve"]  # exec form: gets SIGTERM
    env = " ".join(e.arguments for e in final.all("ENV"))
    assert "STATEWRIGHT_LISTEN=0.0.0.0:50051" in env
    exposed = {p for e in final.all("EXPOSE") for p in e.words()}
    assert {"50051", "9464"} <= exposed


def test_every_copied_path_exists_and_is_in_the_build_context() -> None:
    _, all_stages = stages()
    included = dockerignore_includes()
    assert DOCKERIGNORE.read_text(encoding="utf-8").splitlines().count("**") == 1
    for stage in all_stages:
        for copy in stage.all("COPY"):
            words = copy.words()
            if any(w.startswith("--from=") for w in words):
                continue
            for source in words[:-1]:
                path = source.rstrip("/")
                assert (REPO / path).exists(), source
                assert any(path == i or path.startswith(i + "/") for i in included), (
                    f"{source} is excluded by .dockerignore"
                )
