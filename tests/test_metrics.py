import numpy as np
import pytest

from nitro.metrics import fraction_of_optimum, random_fraction


def test_fraction_of_optimum_hand_computed():
    times = np.array([[1.0, 2.0], [4.0, 2.0], [3.0, np.nan]])
    # input 0 picks 1: 1/2; input 1 picks 1: 2/2; input 2 picks the failed variant: 0
    assert fraction_of_optimum(times, [1, 1, 1]) == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert fraction_of_optimum(times, [0, 1, 0]) == pytest.approx(1.0)


def test_random_is_the_mean_over_variants():
    times = np.array([[1.0, 4.0], [2.0, 2.0]])
    assert random_fraction(times, draws=20000) == pytest.approx((1 + 0.25 + 1 + 1) / 4, abs=0.01)


def test_majority_vote_takes_the_most_chosen_and_the_lowest_index_on_ties():
    from nitro.metrics import majority_vote
    choices = np.array([[0, 1, 2, 2], [1, 1, 0, 2], [1, 0, 0, 1]])
    assert majority_vote(choices, 3).tolist() == [1, 1, 0, 2]
    assert majority_vote(np.array([[0, 2], [2, 1]]), 3).tolist() == [0, 1]
