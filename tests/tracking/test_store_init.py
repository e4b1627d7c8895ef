"""Several processes opening one fresh sqlite MLflow store at once all get a working store.

MLflow 3.17 migrates a fresh store without a lock; run bare, two such processes started
together fail with alembic errors. Through ``open_client`` they wait on the lock file.
"""

from __future__ import annotations

import os
import subprocess
import sys

from mlflow.tracking import MlflowClient

OPEN = """
import sys
from crsp_ops.tracking.store_init import open_client
client = open_client(sys.argv[1])
client.create_experiment(sys.argv[2])
"""


def test_processes_opening_a_fresh_store_together_all_succeed(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", OPEN, uri, f"exp{i}"], env=env,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    errors = [proc.communicate(timeout=300)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], errors
    names = {e.name for e in MlflowClient(uri).search_experiments()}
    assert {"exp0", "exp1"} <= names
    assert (tmp_path / "mlflow.db-init.lock").is_file()
