"""The trainer samples with generation.top_p/top_k/min_p/repetition_penalty and renders every
prompt with generation.chat_template_kwargs, in the backend and in its InferenceContext alike."""

import math

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.config import ConfigError
from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.trainer.build import build_trainer
from crsp_ops.crsp.trainer.setup import make_generation
from tests.crsp.conftest import ScriptedGeneration

KNOBS = ("generation.top_p=0.9", "generation.top_k=5", "generation.min_p=0.05",
         "generation.repetition_penalty=1.1")
THINKING_OFF = 'generation.chat_template_kwargs={"enable_thinking": false}'


def trainer_for(model_dir, settings, out_dir, scripted):
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    return build_trainer(settings, model, tokenizer,
        out_dir=out_dir, accelerator=make_accelerator("no", "cpu"),
        generation=ScriptedGeneration(model, tokenizer) if scripted else None)


def test_every_role_samples_with_the_configured_knobs(tiny_model_dir, small_settings, tmp_path):
    trainer = trainer_for(tiny_model_dir, small_settings(*KNOBS, "reward.creativity_enabled=y"),
                          tmp_path, scripted=True)
    trainer.generate_and_score(1, trainer.alphas(1))
    calls = trainer.generation.backend.calls
    sampled = {role: params for role, params in calls if role != "grade"}
    assert set(sampled) == {"propose", "solve", "critique"}
    for params in sampled.values():
        assert (params.temperature, params.top_p, params.top_k, params.min_p,
                params.repetition_penalty) == (1.0, 0.9, 5, 0.05, 1.1)
    [grading] = [params for role, params in calls if role == "grade"]
    assert grading.greedy and grading.engine_extras == {} and grading.top_p == 1.0


def test_defaults_sample_as_before(tiny_model_dir, small_settings, tmp_path):
    trainer = trainer_for(tiny_model_dir, small_settings(), tmp_path, scripted=True)
    trainer.generate_and_score(1, trainer.alphas(1))
    for _, params in trainer.generation.backend.calls:
        assert params.top_p == 1.0 and params.engine_extras == {}


def test_a_step_in_process_with_knobs_and_template_kwargs_trains_on_aligned_prompts(
        thinking_model_dir, small_settings, tmp_path):
    trainer = trainer_for(thinking_model_dir, small_settings(*KNOBS, THINKING_OFF), tmp_path,
                          scripted=False)
    assert trainer.generation.backend.chat_template_kwargs == {"enable_thinking": False}
    assert trainer.context.chat_template_kwargs == {"enable_thinking": False}
    metrics, episode = trainer.train_step()
    prompt = episode.samples[0].completion.prompt_token_ids
    assert "no thinking" in trainer.tokenizer.decode(list(prompt))
    assert metrics["rollouts/count"] > 0 and metrics["rollouts/skipped"] == 0
    assert metrics["context/prompt_alignment_mismatches"] == 0
    assert math.isfinite(metrics["loss"])
    assert metrics["ratio_mean"] == pytest.approx(1.0, abs=1e-3)  # on-policy: the knobs
    # change which samples are drawn, not the loss


def test_template_kwargs_the_model_does_not_read_stop_generation_setup(
        tiny_model_dir, small_settings, tmp_path):
    settings = small_settings(THINKING_OFF)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    with pytest.raises(ConfigError, match=r"chat_template_kwargs: .*does not read") as error:
        make_generation(settings.generation, settings.train, make_accelerator("no", "cpu"),
                        policy=model, exported=model, tokenizer=tokenizer, out_dir=tmp_path,
                        step=0)
    assert "\n" not in str(error.value)


def test_train_cli_stops_before_any_run_on_a_key_the_template_ignores(
        scratch_project, tiny_model_dir, capsys):
    import sqlite3

    from crsp_ops.cli.main import main

    code = main(["train", "--model", str(tiny_model_dir), "--set", THINKING_OFF])
    line = capsys.readouterr().err.strip().splitlines()[-1]  # after transformers' progress bar
    assert code == 2 and line.startswith("crsp-ops train: configuration error: generation.chat")
    assert "does not read ['enable_thinking']" in line
    store = scratch_project / "mlflow.db"
    if store.exists():
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_seeding_renders_its_prompts_with_the_template_kwargs(thinking_model_dir):
    from crsp_ops.crsp.selfplay.seeding import prepare_examples
    from crsp_ops.data.examples import LimoExample

    tokenizer = AutoTokenizer.from_pretrained(thinking_model_dir)
    rows = [LimoExample("What is 2 + 2?", "2 + 2 = 4", "4")]
    [plain], _ = prepare_examples(rows, tokenizer, max_seq_len=512)
    [switched], _ = prepare_examples(rows, tokenizer, max_seq_len=512,
                                     chat_template_kwargs={"enable_thinking": False})
    assert "no thinking" in tokenizer.decode(list(switched.input_ids))
    assert "no thinking" not in tokenizer.decode(list(plain.input_ids))
