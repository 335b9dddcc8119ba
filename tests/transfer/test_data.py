"""The transfer data (``nitro.transfer.data``) on planted measurements: the source rows stacked
with their device features."""
import numpy as np
import pytest

from nitro.transfer.data import TransferData, concatenate, stack_sources

from tests.transfer.helpers import planted


def test_concatenation_shapes():
    m = planted(n_devices=4, n_inputs=30)
    data = TransferData.from_measurements(m)
    assert data.times.shape == (4, 30, 3) and data.D.shape == (4, 4) and data.X.shape == (30, 2)
    X, y, owner = stack_sources(data, [0, 2, 3], np.arange(30), [0, 3])
    assert X.shape == (90, 4) and y.shape == (90,) and set(owner) == {0, 2, 3}
    assert np.allclose(X[owner == 2, 2:], data.D[2, [0, 3]])
    assert concatenate(np.zeros((5, 2)), np.array([1.0, 2.0])).shape == (5, 4)
    with pytest.raises(ValueError):
        concatenate(np.zeros((5, 2)), np.zeros((4, 1)))
