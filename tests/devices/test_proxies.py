import pytest

from nitro._variants import proxies


@pytest.mark.parametrize("kind", list(proxies.Kind.__members__.values()))
def test_proxies_perform_phi_fifths_of_their_kind(kind):
    for phi in range(6):
        assert proxies.run(kind, phi, 10_000) == phi * 10_000


def test_intensity_out_of_range_is_refused():
    with pytest.raises(ValueError, match="0..5"):
        proxies.run(proxies.Kind.ATOMIC, 6, 10)
