"""A new crsp_ops project in a directory: what ``crsp-ops init`` writes.

Its ``Kconfig`` sources the installed package's declarations, so its options are always this
package's; ``.config`` is one of the packaged profiles (``configs/``); ``params.yaml`` is synced
from them; ``dvc.yaml``, ``MLproject``, ``.gitignore``, ``.dvcignore`` and ``README.md`` are the
package's project templates.
"""

from __future__ import annotations

from pathlib import Path

from crsp_ops.atomic_io import atomic_write_bytes
from crsp_ops.config.errors import ConfigError
from crsp_ops.config.resolve import sync_params
from crsp_ops.errors import TargetExistsError
from crsp_ops.paths import PACKAGED_CONFIGS, PROJECT_TEMPLATE

# template file -> its name in the project: dot files are kept undotted in the package, and
# dvc.yaml renamed (a dvc.yaml anywhere in a DVC repository is one of its pipelines)
TEMPLATE_NAMES = {"Kconfig": "Kconfig", "dvc.yaml.template": "dvc.yaml", "MLproject": "MLproject",
                  "gitignore": ".gitignore", "dvcignore": ".dvcignore", "README.md": "README.md"}


def profiles() -> list[str]:
    """The packaged ``.config`` profiles, e.g. ``['defconfig', 'smollm2']``."""
    return sorted(path.name for path in PACKAGED_CONFIGS.iterdir() if path.is_file())


def init_project(directory: Path, profile: str = "defconfig", force: bool = False
                 ) -> list[Path]:
    """Write a new project into ``directory`` (created when missing); return the files written.

    Raises:
        TargetExistsError: ``directory`` holds files and ``force`` is off.
        ConfigError: ``profile`` is not a packaged profile.
    """
    directory = Path(directory).resolve()
    if directory.is_dir() and any(directory.iterdir()) and not force:
        raise TargetExistsError(f"{directory} is not empty: pass --force to write the project "
                                "files into it (existing files of the same name are replaced)")
    if profile not in profiles():
        raise ConfigError(f"unknown profile {profile!r}: choose one of {', '.join(profiles())}")
    written = [atomic_write_bytes(directory / name, (PROJECT_TEMPLATE / template).read_bytes())
               for template, name in TEMPLATE_NAMES.items()]
    written.append(atomic_write_bytes(directory / ".config",
                                      (PACKAGED_CONFIGS / profile).read_bytes()))
    written.append(sync_params(directory))
    return written
