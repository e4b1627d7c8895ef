import numpy as np
import pytest
import torch

from crsp_ops.inference.chosen_logprobs import ChosenTokenLogprobs


def run_steps(recorder, steps, chosen, mutate=False):
    """Feed ``steps (S, B, V)`` scores as generate() does; ``chosen (B, S)`` the picked ids."""
    input_ids = torch.zeros((chosen.shape[0], 1), dtype=torch.long)
    for step, scores in enumerate(steps):
        scores = scores.clone()
        assert recorder(input_ids, scores) is scores
        if mutate:  # a later processor (steering) adding a bias in place
            scores[:, 0].add_(100.0)
        input_ids = torch.cat([input_ids, chosen[:, step : step + 1]], dim=1)


def expected(steps, chosen):
    return torch.stack(
        [torch.log_softmax(s, -1).gather(1, chosen[:, i : i + 1])[:, 0]
         for i, s in enumerate(steps)], dim=1).numpy()


@pytest.mark.parametrize("batch", [1, 3])
def test_records_the_chosen_log_softmax_of_every_step(batch):
    generator = torch.Generator().manual_seed(batch)
    steps = torch.randn(5, batch, 11, generator=generator) * 4
    chosen = torch.randint(0, 11, (batch, 5), generator=generator)
    recorder = ChosenTokenLogprobs(copy=False)
    run_steps(recorder, steps, chosen)
    np.testing.assert_allclose(recorder.logprobs(chosen), expected(steps, chosen), atol=1e-6)


def test_copy_protects_against_a_later_in_place_change():
    steps = torch.randn(4, 2, 7, generator=torch.Generator().manual_seed(0))
    chosen = torch.tensor([[1, 2, 3, 4], [6, 5, 0, 1]])
    copied, shared = ChosenTokenLogprobs(copy=True), ChosenTokenLogprobs(copy=False)
    run_steps(copied, steps, chosen, mutate=True)
    run_steps(shared, steps, chosen, mutate=True)
    np.testing.assert_allclose(copied.logprobs(chosen), expected(steps, chosen), atol=1e-6)
    # without the copy every step reads the biased scores: token 0 took all the mass
    assert not np.allclose(shared.logprobs(chosen), expected(steps, chosen), atol=1e-3)


def test_extra_recorded_steps_are_dropped_and_too_few_is_an_error():
    steps = torch.randn(4, 1, 5, generator=torch.Generator().manual_seed(1))
    chosen = torch.tensor([[0, 1, 2, 3]])
    recorder = ChosenTokenLogprobs(copy=True)
    run_steps(recorder, steps, chosen)
    # generate() undid its last step: three tokens kept, four steps recorded
    np.testing.assert_allclose(recorder.logprobs(chosen[:, :3]), expected(steps, chosen)[:, :3],
                               atol=1e-6)
    with pytest.raises(RuntimeError, match="recorded 3 steps for 6 tokens"):
        recorder.logprobs(torch.zeros((1, 6), dtype=torch.long))
    assert ChosenTokenLogprobs(copy=False).logprobs(torch.zeros((2, 0))).shape == (2, 0)
