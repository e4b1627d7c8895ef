"""The `crsp-ui` MLflow app: index.html carries the preferences script; everything else is MLflow's.

In process, no browser and no server: MLflow's Flask app through Flask's test client, and the
FastAPI app `mlflow ui` runs under uvicorn through Starlette's.
"""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from crsp_ops.tracking import ui_app


@pytest.fixture()
def store(tmp_path, monkeypatch):
    """A sqlite store with one experiment, served as `mlflow ui --backend-store-uri` would."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    experiment_id = MlflowClient(uri).create_experiment("crsp-evolve")
    monkeypatch.setenv("_MLFLOW_SERVER_FILE_STORE", uri)  # what `mlflow server` sets
    monkeypatch.setenv("_MLFLOW_SERVER_ARTIFACT_ROOT", str(tmp_path / "mlruns"))
    return experiment_id


@pytest.fixture()
def flask_app(monkeypatch):
    """MLflow's Flask app; its index view is put back afterwards."""
    from mlflow.server import app

    monkeypatch.setitem(app.view_functions, "serve", app.view_functions["serve"])
    return app


def preferences(page: str) -> dict[str, str]:
    """The key -> value map the injected script writes."""
    found = re.search(r'<script id="crsp-ui-preferences">\(function\(\)\{var p=(\{.*?\});', page)
    assert found, page[:500]
    return json.loads(found.group(1))


def test_the_entry_point_is_registered():
    apps = {ep.name: ep.value for ep in entry_points(group="mlflow.app")}
    assert apps.get(ui_app.APP_NAME) == "crsp_ops.tracking.ui_app:create_app"


def test_index_carries_the_preferences_and_api_routes_are_mlflows(store, flask_app, monkeypatch):
    monkeypatch.delenv("_MLFLOW_SGI_NAME", raising=False)  # gunicorn/waitress: the Flask app
    app = ui_app.create_app()
    assert app is flask_app
    assert ui_app.create_app() is flask_app  # a second call does not wrap twice
    client = app.test_client()

    index = client.get("/")
    page = index.get_data(as_text=True)
    assert index.status_code == 200 and index.mimetype == "text/html"
    assert page.count('id="crsp-ui-preferences"') == 1
    assert page.index("crsp-ui-preferences") < page.index("</head>")
    assert 'src="static-files/static/js/main.' in page  # MLflow's own page around it
    prefs = preferences(page)
    assert json.loads(prefs["mlflow.workflowType_v1"]) == "machine_learning"
    columns = json.loads(prefs[ui_app.experiment_page_key(store)])["selectedColumns"]
    assert "metrics.`best_composite`" in columns
    assert "metrics.`heldout_best_composite_score`" in columns

    # The script only fills what the browser lacks (never overwrites a user's choice).
    assert "localStorage.getItem(k)===null" in page

    api = client.get("/api/2.0/mlflow/experiments/search?max_results=10")
    assert api.status_code == 200
    assert "crsp-evolve" in {e["name"] for e in api.get_json()["experiments"]}
    assert "crsp-ui-preferences" not in api.get_data(as_text=True)

    js_name = re.search(r'src="static-files/(static/js/main\.[0-9a-f]+\.js)"', page).group(1)
    static = client.get(f"/static-files/{js_name}")
    static.direct_passthrough = False
    assert static.status_code == 200
    assert static.get_data() == Path(flask_app.static_folder, js_name).read_bytes()


def test_under_uvicorn_the_fastapi_app_serves_the_same(store, flask_app, monkeypatch):
    from fastapi import FastAPI
    from starlette.testclient import TestClient

    monkeypatch.setenv("_MLFLOW_SGI_NAME", "uvicorn")  # what `mlflow ui` sets for its workers
    app = ui_app.create_app()
    assert isinstance(app, FastAPI)
    with TestClient(app, base_url="http://localhost") as client:  # MLflow checks the Host
        page = client.get("/").text
        assert ui_app.experiment_page_key(store) in preferences(page)
        api = client.get("/api/2.0/mlflow/experiments/get-by-name",
                         params={"experiment_name": "crsp-evolve"})
        assert api.status_code == 200
        assert api.json()["experiment"]["experiment_id"] == store
        assert client.get("/health").text == "OK"


def test_an_unreadable_store_still_serves_the_page(flask_app, monkeypatch, tmp_path):
    monkeypatch.setenv("_MLFLOW_SERVER_FILE_STORE", "nosuchscheme://nowhere")
    monkeypatch.delenv("_MLFLOW_SGI_NAME", raising=False)
    page = ui_app.create_app().test_client().get("/").get_data(as_text=True)
    prefs = preferences(page)
    assert json.loads(prefs["mlflow.workflowType_v1"]) == "machine_learning"
    assert not [k for k in prefs if "ExperimentPage" in k]


def test_a_script_end_tag_in_the_data_cannot_close_the_script():
    page = ui_app.inject("<head></head>", {"x": "</script><b>"})
    assert page.count("</script>") == 1


def test_every_seeded_key_is_one_the_installed_ui_reads(flask_app):
    # The UI stores a hook's value under "<key>_v<version>": each fixed key must name a hook in
    # the installed bundle, or an MLflow upgrade has renamed it and the seed does nothing.
    bundle = "".join(path.read_text(encoding="utf-8", errors="replace")
                     for path in Path(flask_app.static_folder, "static", "js").glob("*.js"))
    fixed = [key for key in ui_app.ui_preferences([]) if not key.startswith("MLflowLocalStorage")]
    assert "_mlflow_model_registry_promo_modal_dismissed_v1" in fixed
    for key in fixed:
        name, version = re.fullmatch(r"(.+)_v(\d+)", key).groups()
        assert re.search(rf'key:"{re.escape(name)}",version:{version}\b', bundle), key
