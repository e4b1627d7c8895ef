"""Secrets are caught by value, by key name and by pattern, in text, params, files and logs."""

from __future__ import annotations

import logging

from mlflow.tracking import MlflowClient

from crsp_ops.tracking import MlflowTracker
from crsp_ops.tracking.artifact_scan import redacted_artifact
from crsp_ops.tracking.redaction import Redactor, install_log_redaction

SK = "sk-proj-AbCdEfGhIjKlMnOpQrStUv"


def test_patterns_replace_only_the_secret_part():
    redactor = Redactor()
    assert redactor.text("GET http://alice:pa55word@h:8/v1/x") == "GET http://***@h:8/v1/x"
    assert redactor.text("Authorization: Bearer abc.def-ghi_123") == "Authorization: Bearer ***"
    assert redactor.text(f"key {SK} rejected") == "key *** rejected"
    assert redactor.text("url?api_key=abcdef123456&n=1") == "url?api_key=***&n=1"
    untouched = "max_tokens=2000 http://host:8000/v1 sk-short token budget"
    assert redactor.text(untouched) == untouched


def test_values_of_secret_env_vars_and_explicit_keys_are_redacted():
    redactor = Redactor.from_env({"MY_TOKEN": "tok-value-1234", "HOME": "/home/me-long"},
                                 extra=["plain-key-9876"])
    assert redactor.text("a tok-value-1234 b plain-key-9876 /home/me-long") == \
        "a *** b *** /home/me-long"
    assert redactor.params({"x.api_key": "v", "u": "http://h/tok-value-1234",
                            "x.api_key_env": "MY_TOKEN"}) == \
        {"x.api_key": "***", "u": "***", "x.api_key_env": "MY_TOKEN"}


def test_artifact_files_and_directories_are_scanned_before_logging(tmp_path):
    redactor = Redactor.from_env({"API_KEY": "envsecret-42xyz"})
    clean = tmp_path / "clean.txt"
    clean.write_text("nothing here")
    with redacted_artifact(clean, redactor) as path:
        assert path == clean
    folder = tmp_path / "run"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "reply.txt").write_text(f"echo {SK}")
    (folder / "blob.bin").write_bytes(b"\x00\xffenvsecret-42xyz\x00")
    (folder / "ok.txt").write_text("fine")
    with redacted_artifact(folder, redactor) as path:
        assert path != folder and path.name == "run"
        assert (path / "sub" / "reply.txt").read_text() == "echo ***"
        assert (path / "blob.bin").read_bytes() == b"\x00\xff***\x00"
        assert (path / "ok.txt").read_text() == "fine"
    assert SK in (folder / "sub" / "reply.txt").read_text()  # the local file is not changed


def test_tracker_redacts_artifacts_tags_and_texts_in_the_store(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("e", artifact_location=(tmp_path / "art").as_uri())
    run_id = client.create_run(experiment).info.run_id
    tracker = MlflowTracker(client, run_id, experiment, 100, 60.0, env={})
    local = tmp_path / "exchange.json"
    local.write_text(f'{{"error": "401: Incorrect API key provided: {SK}"}}')
    tracker.log_artifact(local, "reflector")
    tracker.set_tags({"endpoint": "http://u:hunter2pass@h/v1"})
    tracker.log_text(f"sent Bearer {SK}", "notes.txt")
    stored = [p.read_bytes() for p in (tmp_path / "art").rglob("*") if p.is_file()]
    assert len(stored) == 2 and all(SK.encode() not in data for data in stored)
    assert client.get_run(run_id).data.tags["endpoint"] == "http://***@h/v1"


def test_log_messages_are_redacted(caplog):
    previous = logging.getLogRecordFactory()
    install_log_redaction(Redactor.from_env({}, extra=["explicit-key-5555"]))
    try:
        with caplog.at_level(logging.INFO):
            logging.getLogger("crsp_ops.test").info("proposer at %s with %s",
                                                    "http://u:pw123456@h/v1", "explicit-key-5555")
        assert caplog.records[-1].getMessage() == "proposer at http://***@h/v1 with ***"
    finally:
        logging.setLogRecordFactory(previous)
