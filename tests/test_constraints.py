"""constraints.txt pins what `make setup` installs, so a later install gets the same versions."""

import re
from pathlib import Path

import tomllib
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _pins() -> dict[str, str]:
    lines = (REPO / "constraints.txt").read_text().splitlines()
    pins = {}
    for line in lines:
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt: {line!r} is not NAME==VERSION"
            pins[_name(name)] = version
    return pins


def test_every_dependency_make_setup_installs_is_pinned():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    declared = [*project["dependencies"], *extras["dev"], *extras["real"]]
    pins = _pins()
    missing = [req for req in declared
               if _name(Requirement(req).name) not in pins and Requirement(req).name != "torch"]
    assert not missing, f"not pinned in constraints.txt (run `make lock`): {missing}"
    for req in map(Requirement, declared):
        if _name(req.name) in pins:
            assert req.specifier.contains(pins[_name(req.name)], prereleases=True), (
                f"constraints.txt pins {req.name}=={pins[_name(req.name)]}, outside {req}")


def test_torch_is_left_to_the_makefile():
    """A +cpu torch pin would clash with TORCH_INDEX_URL's or the full index's build."""
    assert "torch" not in _pins()
