"""The MLflow UI as ``make ui`` serves it: the model-training view, the key metrics as columns.

``mlflow ui --app-name crsp-ui`` finds ``create_app`` through this package's ``mlflow.app``
entry point; it serves MLflow's own page with a script that sets browser preferences only where
the browser holds none. Every other route is MLflow's, unchanged.

Design: docs/design/platform.md#ui_app.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

_logger = logging.getLogger(__name__)

APP_NAME = "crsp-ui"  # the name under [project.entry-points."mlflow.app"] in pyproject.toml
MARKER = "crsp-ui-preferences"  # the injected <script>'s id

# The metrics a researcher compares runs by, one column each in every experiment's runs table:
# evolve's best search score and the best processor's held-out composite and correctness,
# train's held-out solve rate, base-model's final loss.
KEY_METRICS = (
    "best_composite",
    "heldout_best_composite_score",
    "heldout_best_correctness_ratio",
    "eval/solve_rate/all",
    "final_loss",
)
# MLflow 3.17's default columns, kept in front, less ``Dataset``: the project logs no MLflow
# datasets, and the empty column would push the metrics off the screen.
DEFAULT_COLUMNS = ("attributes.`Source`", "attributes.`Models`")


def experiment_page_key(experiment_id: str) -> str:
    """The ``localStorage`` key under which the UI keeps one experiment's runs-table state.

    >>> experiment_page_key("6")
    'MLflowLocalStorage-1.1-ExperimentPage-["6"]-ReactComponentState'
    """
    scope = json.dumps([experiment_id])  # the UI's id of the set of experiments on the page
    return f"MLflowLocalStorage-1.1-ExperimentPage-{scope}-ReactComponentState"


def ui_preferences(
    experiment_ids: Iterable[str], metrics: Iterable[str] = KEY_METRICS
) -> dict[str, str]:
    """The browser preferences to seed: ``localStorage`` key -> the JSON text the UI stores.

    Args:
        experiment_ids: the experiments whose runs table gets the metric columns.
        metrics: the metric names to show as columns.

    Returns:
        Keys in the UI's own format, values already JSON-encoded as the UI writes them.

    >>> prefs = ui_preferences(["6"], ["best_composite"])
    >>> prefs["mlflow.workflowType_v1"]
    '"machine_learning"'
    >>> json.loads(prefs[experiment_page_key("6")])["selectedColumns"][-1]
    'metrics.`best_composite`'
    """
    columns = [*DEFAULT_COLUMNS, *(f"metrics.`{name}`" for name in metrics)]
    table = json.dumps({"selectedColumns": columns})
    prefs = {
        "mlflow.workflowType_v1": json.dumps("machine_learning"),
        "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": json.dumps(True),
        "_mlflow_model_registry_promo_modal_dismissed_v1": json.dumps(True),
    }
    prefs.update({experiment_page_key(str(eid)): table for eid in experiment_ids})
    return prefs


def inject(html: str, prefs: dict[str, str]) -> str:
    """``html`` with a script, run before the UI's own, that stores each absent preference.

    >>> page = inject("<html><head></head><body></body></html>", {"k": '"v"'})
    >>> page.count('<script id="crsp-ui-preferences">')
    1
    >>> page.index("<script") < page.index("</head>")
    True
    """
    # "</" inside the data could end the <script> element early; JSON allows "<\/" instead.
    data = json.dumps(prefs).replace("</", "<\\/")
    script = (
        f'<script id="{MARKER}">(function(){{var p={data};'
        "try{for(var k in p){if(window.localStorage.getItem(k)===null)"
        "{window.localStorage.setItem(k,p[k]);}}}catch(e){}})();</script>"
    )
    head_end = html.find("</head>")
    if head_end < 0:  # not the page we know: leave it as MLflow serves it
        return html
    return html[:head_end] + script + html[head_end:]


def _experiment_ids() -> list[str]:
    """The active experiments of the store this server serves (none if it cannot be read)."""
    from mlflow.server.constants import BACKEND_STORE_URI_ENV_VAR
    from mlflow.tracking import MlflowClient

    uri = os.environ.get(BACKEND_STORE_URI_ENV_VAR)
    try:
        experiments = MlflowClient(tracking_uri=uri).search_experiments(max_results=1000)
    except Exception as exc:  # the page must still load; it just gets no column choice
        _logger.warning("crsp-ui: no experiments listed for the runs-table columns (%s)", exc)
        return []
    return [e.experiment_id for e in experiments]


def wrap_index(flask_app) -> None:
    """Make ``flask_app``'s index route (endpoint ``serve``) answer with the injected page."""
    from flask import Response

    original = flask_app.view_functions["serve"]
    if getattr(original, MARKER, False):  # already wrapped (a second create_app call)
        return

    def serve():
        index = Path(flask_app.static_folder, "index.html")
        if not index.is_file():  # a source checkout without the built UI: MLflow's message
            return original()
        page = inject(index.read_text(encoding="utf-8"), ui_preferences(_experiment_ids()))
        # Not MLflow's file response: no ETag that a copy cached from plain `mlflow ui` shares,
        # and never a cached copy (the page lists the store's experiments).
        return Response(page, mimetype="text/html", headers={"Cache-Control": "no-cache"})

    setattr(serve, MARKER, True)
    flask_app.view_functions["serve"] = serve


def create_app(app=None):
    """The ``mlflow.app`` factory: MLflow's server app with the project's index page.

    Args:
        app: MLflow's Flask app (``mlflow.server.app`` when omitted, as MLflow calls it).

    Returns:
        Under uvicorn (``mlflow ui``'s default) the FastAPI app wrapping it, as MLflow builds
        its own; under gunicorn or waitress the Flask app.
    """
    # Imported here, not at the top: importing mlflow.server builds MLflow's Flask app, which
    # only the server needs (the pure helpers above are imported by tests and doctests).
    from mlflow.environment_variables import _MLFLOW_SGI_NAME
    from mlflow.server import app as flask_app
    from mlflow.server.fastapi_app import create_fastapi_app

    app = flask_app if app is None else app
    wrap_index(app)
    if _MLFLOW_SGI_NAME.get() == "uvicorn":
        return create_fastapi_app(app)
    return app
