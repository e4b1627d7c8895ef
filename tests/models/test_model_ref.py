from crsp_ops.models.model_ref import MODEL_REF_FILE, resolve_model_dir, write_model_ref


def test_model_ref_points_stages_at_an_existing_model_dir(tmp_path):
    real = tmp_path / "hf-model"
    real.mkdir()
    stage_out = tmp_path / "models" / "base"
    write_model_ref(stage_out, real, {"model_type": "llama"})
    assert (stage_out / MODEL_REF_FILE).is_file()
    assert resolve_model_dir(stage_out) == real.resolve()
    # a directory without a reference is the model itself
    assert resolve_model_dir(real) == real
