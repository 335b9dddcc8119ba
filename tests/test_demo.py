import warnings

from nitro import devices
from nitro.demo import format_demo, run_demo
from nitro.noise import NoisyMachineWarning, summarize


def test_a_noisy_tuning_is_reported_once_in_the_demo_not_warned_as_well(store):
    """The demo prints the timing report with its result; the tuner's NoisyMachineWarning would
    say the same again. An earlier run's timings, recorded as too noisy, are read back here
    (nothing is measured again), so the report is a noisy one whatever this machine does now."""
    run_demo(store, n_train=4, n_test=2, progress=False)
    device = devices.current_device_id()
    model = store.model("histogram", device)
    noisy = summarize([{"status": "undecided", "gap": 0.05, "noise": 0.2}] * 4)
    model["provenance"]["timing"] = noisy
    store.put_model("histogram", device, model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyMachineWarning)
        result = run_demo(store, n_train=4, n_test=2, progress=False)
    assert result["timing"] == noisy
    assert format_demo(result).count("WARNING: 4 of 4 inputs stayed undecided") == 1
