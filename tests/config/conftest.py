from pathlib import Path

import pytest

from crsp_ops.paths import copy_config_tree

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A throwaway project root holding the real Kconfig and a synced params.yaml."""
    copy_config_tree(REPO, tmp_path)
    monkeypatch.chdir(tmp_path)
    for variable in ("CRSP_OPS_ROOT", "DVC_ROOT", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(variable, raising=False)
    from crsp_ops.config import sync_params

    sync_params(tmp_path)
    return tmp_path
