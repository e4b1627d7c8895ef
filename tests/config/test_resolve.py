import re
from pathlib import Path

import pytest
import yaml

from crsp_ops.cli.main import main
from crsp_ops.config import ConfigError, load_settings, schema_for, sync_params, trl_fields
from crsp_ops.config.params_file import read_params, write_params

REPO = Path(__file__).resolve().parents[2]


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}


def test_defaults_come_from_kconfig(project):
    resolved = load_settings(project)
    assert set(resolved.sources.values()) == {"Kconfig"}
    specs = schema_for(project)
    s = resolved.settings
    assert s.limo.source == specs["limo.source"].default == "synthetic"
    assert s.model.tiny_learning_rate == float(specs["model.tiny_learning_rate"].default)
    assert s.tracking.enabled is (specs["tracking.enabled"].default == "y")
    assert s.model.device == specs["model.device"].default == "auto"


def test_repository_params_yaml_is_in_sync_with_kconfig():
    # The committed params.yaml is what DVC tracks; it must equal a fresh sync of the Kconfig.
    resolved = load_settings(REPO, env={})
    assert set(resolved.sources.values()) <= {"Kconfig", ".config"}


def test_precedence_dotconfig_params_set_env(project):
    (project / ".config").write_text('CONFIG_LIMO_N_SYNTHETIC=7\nCONFIG_MODEL_DEVICE_CPU=y\n')
    sync_params(project)
    data = yaml.safe_load((project / "params.yaml").read_text())
    assert data["limo"]["n_synthetic"] == 7 and data["model"]["device"] == "cpu"

    # params.yaml edited after the sync (e.g. `dvc exp run -S`) wins over .config
    data["limo"]["seed"] = 11
    text = (project / "params.yaml").read_text().replace("seed: 0", "seed: 11", 1)
    (project / "params.yaml").write_text(text)
    resolved = load_settings(
        project,
        ["financebench.heldout_size=5", "tracking.uri=sqlite:///x.db"],
        env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:5000"},
    )
    s, src = resolved.settings, resolved.sources
    assert (s.limo.n_synthetic, src["limo.n_synthetic"]) == (7, ".config")
    assert (s.model.device, src["model.device"]) == ("cpu", ".config")
    assert (s.limo.seed, src["limo.seed"]) == (11, "params.yaml")
    assert (s.financebench.heldout_size, src["financebench.heldout_size"]) == (5, "--set")
    assert (s.tracking.uri, src["tracking.uri"]) == ("http://127.0.0.1:5000", "env:MLFLOW_TRACKING_URI")


def test_float_strings_are_parsed_and_range_checked(project):
    s = load_settings(project, ["model.tiny_learning_rate=1e-4"]).settings
    assert s.model.tiny_learning_rate == pytest.approx(1e-4)
    with pytest.raises(ConfigError, match=r"model.tiny_learning_rate = 0.0: out of range \(0.0, 1.0\]"):
        load_settings(project, ["model.tiny_learning_rate=0"])
    with pytest.raises(ConfigError, match=r"model.tiny_learning_rate = 'fast': expected a number"):
        load_settings(project, ["model.tiny_learning_rate=fast"])
    with pytest.raises(ConfigError, match="not finite"):
        load_settings(project, ["model.tiny_learning_rate=nan"])


@pytest.mark.parametrize(
    ("dotconfig", "message"),
    [
        ("CONFIG_LIMO_N_SYNTHETIC=abc\n", r"\.config: limo.n_synthetic = 'abc': expected an integer"),
        ("CONFIG_LIMO_N_SYNTHETIC=0\n", r"\.config: limo.n_synthetic = 0: out of range \[1, 1000000\]"),
        ("CONFIG_NOT_AN_OPTION=1\n", r"\.config:1: unknown option CONFIG_NOT_AN_OPTION"),
        ("CONFIG_LIMO_SEED=1\nthis is not kconfig\n", r"\.config:2: malformed line 'this is not kconfig'"),
        ("CONFIG_LIMO_SOURCE=synthetic\n", r"\.config:1: CONFIG_LIMO_SOURCE=synthetic: strings must be quoted"),
        ("CONFIG_TRACKING_ENABLED=maybe\n", r"\.config:1: CONFIG_TRACKING_ENABLED=maybe: expected y or n"),
        ("CONFIG_MODEL_TINY_HEADS=3\nCONFIG_MODEL_TINY_KV_HEADS=3\n", r"model.tiny_heads=3 must divide model.tiny_hidden_size=128"),
        ("CONFIG_MODEL_TINY_KV_HEADS=3\n", r"model.tiny_kv_heads=3 must divide model.tiny_heads=4"),
    ],
)
def test_bad_dotconfig_errors_and_sync_writes_nothing(project, dotconfig, message):
    (project / ".config").write_text(dotconfig)
    before = snapshot(project)
    with pytest.raises(ConfigError, match=message):
        sync_params(project)
    assert snapshot(project) == before


REMOVE = object()


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        ("limo", "bogus", 1, r"params.yaml: unknown option limo.bogus"),
        ("limo", "n_synthetic", "many", r"params.yaml: limo.n_synthetic = 'many': expected an integer"),
        ("limo", "n_synthetic", True, r"limo.n_synthetic = True: expected an integer"),
        ("financebench", "heldout_size", -1, r"financebench.heldout_size = -1: out of range"),
        ("limo", "hub_split", REMOVE, r"missing options \['limo.hub_split'\].*config sync"),
    ],
)
def test_bad_params_yaml_is_an_error_naming_key_value_file(project, section, key, value, message):
    path = project / "params.yaml"
    data, sha = read_params(path)
    if value is REMOVE:
        del data[section][key]
    else:
        data[section][key] = value
    write_params(path, data, sha)
    with pytest.raises(ConfigError, match=message):
        load_settings(project)


@pytest.mark.parametrize("text", ["limo: [1, 2\n", "limo: [1, 2]\n", "- just a list\n"])
def test_malformed_params_yaml_is_an_error_naming_the_file(project, text):
    (project / "params.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"params.yaml: (not valid YAML|section 'limo' must be a mapping|expected a mapping)"):
        load_settings(project)


def test_params_out_of_sync_with_dotconfig_names_the_fix(project):
    default = load_settings(project).settings.limo.n_synthetic
    (project / ".config").write_text("CONFIG_LIMO_N_SYNTHETIC=9\n")
    with pytest.raises(ConfigError, match=rf"out of sync.*limo.n_synthetic is {default} in params.yaml but 9 in .config.*crsp-ops config sync"):
        load_settings(project)
    sync_params(project)
    assert load_settings(project).settings.limo.n_synthetic == 9


def test_cli_exit_code_2_and_message_on_bad_override(project, capsys):
    before = snapshot(project)
    assert main(["config", "show", "--set", "limo.n_synthetic=-5"]) == 2
    err = capsys.readouterr().err
    assert "limo.n_synthetic = -5" in err and "out of range" in err and "--set" in err
    assert main(["config", "show", "--set", "limo.nsynthetic=5"]) == 2
    assert "did you mean limo.n_synthetic" in capsys.readouterr().err
    assert snapshot(project) == before


def test_a_trl_name_is_answered_with_the_option_that_does_its_job(project, capsys):
    """`num_generations` would otherwise be "did you mean generation.seed?"."""
    with pytest.raises(ConfigError, match=r"TRL's num_generations: use train\.solver_samples"):
        load_settings(project, ["num_generations=8"])
    with pytest.raises(ConfigError, match=r"TRL's beta: use train\.ref_kl_coef"):
        load_settings(project, ["train.beta=0.04"])
    assert main(["config", "show", "--set", "max_completion_length=64"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.endswith("(TRL's max_completion_length: use train.max_new_tokens_solve)")


def test_every_option_a_trl_name_points_at_exists(project):
    specs = schema_for(project)
    targets = [trl_fields.target(name) for name in
               [*trl_fields.MAPPED, *trl_fields.GROUP_KEYS, *trl_fields.FACE]]
    named = {key for target in targets
             for key in re.findall(r"\b(?:train|generation|model|crsp|tracking)\.[a-z_]+", target)}
    assert named and named <= set(specs), sorted(named - set(specs))


def test_cli_sync_rejects_bad_dotconfig_without_writing(project, capsys):
    (project / ".config").write_text("CONFIG_MODEL_DEVICE_TPU=y\n")
    before = snapshot(project)
    assert main(["config", "sync"]) == 2
    assert "unknown option CONFIG_MODEL_DEVICE_TPU" in capsys.readouterr().err
    assert snapshot(project) == before


def test_choice_and_bool_from_dotconfig(project):
    (project / ".config").write_text(
        "# CONFIG_TRACKING_ENABLED is not set\nCONFIG_MODEL_DEVICE_CUDA=y\n# CONFIG_MODEL_DEVICE_AUTO is not set\n"
    )
    sync_params(project)
    s = load_settings(project).settings
    assert s.tracking.enabled is False and s.model.device == "cuda"
    with pytest.raises(ConfigError, match=r"model.device = 'tpu': choose one of \['auto', 'cpu', 'cuda'\]"):
        load_settings(project, ["model.device=tpu"])


def test_show_json_reports_sources(project, capsys):
    import json

    assert main(["config", "show", "--json", "--set", "limo.seed=4"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["limo.seed"] == {"value": 4, "source": "--set"}
    assert shown["limo.source"] == {"value": "synthetic", "source": "Kconfig"}
