"""MLflow pyfunc model of a steering processor (models from code: this file is the model).

Self-contained on purpose (numpy and mlflow only): ``mlflow.pyfunc.load_model`` runs it without
crsp_ops. Artifacts: ``deltas`` (deltas JSON), ``token_clusters`` (``token_clusters.npy``),
``processor`` (the generated ``processor.py``). ``predict`` maps token ids to their logit bias,
``deltas[token_cluster[id]]``.
"""

import json
from typing import Any

import mlflow
import numpy as np
from mlflow.pyfunc import PythonModel


class SteeringProcessorModel(PythonModel):
    """Token ids in, logit bias out."""

    def load_context(self, context):
        """Read the deltas and the token→cluster table."""
        with open(context.artifacts["deltas"], encoding="utf-8") as handle:
            deltas = json.load(handle)
        self.deltas = np.array([deltas[str(i)] for i in range(len(deltas))], dtype=np.float32)
        self.table = np.load(context.artifacts["token_clusters"], allow_pickle=False)

    # The type hints are the model's signature: MLflow validates inputs against them (and
    # warns at log time when a predict has none).
    def predict(
        self, context: Any, model_input: list[int], params: dict[str, Any] | None = None
    ) -> list[float]:
        """Bias of each token id (a list; MLflow turns a one-column DataFrame into one)."""
        ids = np.asarray(getattr(model_input, "values", model_input)).reshape(-1).astype(np.int64)
        return self.deltas[self.table[ids]].tolist()


mlflow.models.set_model(SteeringProcessorModel())
