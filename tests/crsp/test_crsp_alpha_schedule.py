import pytest

from crsp_ops.crsp.rewards.alpha_schedule import (
    Alphas,
    constant_alphas,
    linear_alphas,
    make_alpha_schedule,
    rlsp_coupled_alphas,
)


@pytest.mark.parametrize(("step", "alpha_s", "alpha_c"), [
    (0, 0.3, 0.1),
    (199, 0.3, 0.1),  # last step of phase 1
    (200, 0.3, 0.1),  # phase 2 starts where phase 1 ends
    (400, 0.55, 0.35),  # middle of phase 2
    (599, 0.79875, 0.59875),
    (600, 0.8, 0.6),  # phase 3 starts where phase 2 ends
    (800, 0.875, 0.7),
    (1000, 0.95, 0.8),
])
def test_rlsp_coupled_phase_boundaries(step, alpha_s, alpha_c):
    alphas = rlsp_coupled_alphas(step, 1000)
    assert alphas.alpha_s == pytest.approx(alpha_s)
    assert alphas.alpha_c == pytest.approx(alpha_c)


def test_rlsp_coupled_exact_endpoints_and_monotone():
    assert rlsp_coupled_alphas(100, 100) == Alphas(0.95, 0.8)
    values = [rlsp_coupled_alphas(step, 37) for step in range(38)]
    assert all(0 <= v.alpha_s <= 1 and 0 <= v.alpha_c <= 1 for v in values)
    assert all(a.alpha_s <= b.alpha_s and a.alpha_c <= b.alpha_c
               for a, b in zip(values[:-1], values[1:], strict=True))


@pytest.mark.parametrize(("step", "total"), [(-1, 10), (11, 10), (0, 0)])
def test_schedule_rejects_out_of_range_steps(step, total):
    with pytest.raises(ValueError, match="step|total_steps"):
        rlsp_coupled_alphas(step, total)


def test_constant_and_linear():
    assert constant_alphas(3, 10, alpha_s=0.4, alpha_c=0.2) == Alphas(0.4, 0.2)
    start, end = Alphas(0.2, 0.0), Alphas(1.0, 0.8)
    assert linear_alphas(0, 4, start=start, end=end) == start
    assert linear_alphas(4, 4, start=start, end=end) == end
    middle = linear_alphas(1, 4, start=start, end=end)
    assert middle.alpha_s == pytest.approx(0.4) and middle.alpha_c == pytest.approx(0.2)


def test_make_alpha_schedule_by_name():
    assert make_alpha_schedule("rlsp_coupled")(50, 100) == rlsp_coupled_alphas(50, 100)
    assert make_alpha_schedule("constant", alpha_s=0.7, alpha_c=0.3)(1, 2) == Alphas(0.7, 0.3)
    linear = make_alpha_schedule("linear", start=Alphas(0.0, 0.0), end=Alphas(1.0, 1.0))
    assert linear(1, 2).alpha_s == pytest.approx(0.5)


def test_make_alpha_schedule_errors_name_the_fix():
    with pytest.raises(ValueError, match="choose one of"):
        make_alpha_schedule("cosine")
    with pytest.raises(ValueError, match="non-decreasing"):
        make_alpha_schedule("linear", start=Alphas(0.9, 0.5), end=Alphas(0.1, 0.5))
    with pytest.raises(ValueError, match="alpha_s must be in"):
        make_alpha_schedule("constant", alpha_s=1.5, alpha_c=0.1)
    with pytest.raises(ValueError, match="takes only start and end"):
        make_alpha_schedule("rlsp_coupled", alpha_s=0.1)


def test_rlsp_coupled_honours_configured_start_and_end():
    """reward.alpha_*_start/_end move the rlsp_coupled curve (they used to be ignored)."""
    schedule = make_alpha_schedule("rlsp_coupled", start=Alphas(0.5, 0.2), end=Alphas(0.9, 0.7))
    assert schedule(0, 100) == Alphas(0.5, 0.2)
    assert schedule(19, 100) == Alphas(0.5, 0.2)
    assert schedule(100, 100).alpha_s == pytest.approx(0.9)
    assert schedule(100, 100).alpha_c == pytest.approx(0.7)
    # the second breakpoint is as far along start->end as the seed's 0.8 is along 0.3->0.95
    assert schedule(60, 100).alpha_s == pytest.approx(0.5 + 0.4 * 0.5 / 0.65)
    assert schedule(60, 100).alpha_c == pytest.approx(0.2 + 0.5 * 0.5 / 0.7)
    values = [schedule(step, 100).alpha_s for step in range(101)]
    assert values == sorted(values)
    # defaults are the seed's numbers
    assert make_alpha_schedule("rlsp_coupled")(60, 100) == Alphas(0.8, 0.6)
