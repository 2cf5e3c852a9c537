"""`resonance ddpo train` ends with a plain verdict: did reward_mean rise beyond its epoch-to-epoch noise."""

from resonance_os.cli.ddpo import QUICK_PRESET, rise_summary


def test_a_rise_larger_than_twice_the_spread_is_called_a_rise():
    rising = [-0.49, -0.488, -0.485, -0.481, -0.478, -0.475, -0.471, -0.468]
    line = rise_summary(rising)
    assert "a rise beyond the noise" in line and "+0.0" in line


def test_the_old_quick_runs_wander_is_called_noise():
    wandering = [-0.4854, -0.4852, -0.4861, -0.4905, -0.4850, -0.4832, -0.4870, -0.4859, -0.4848]
    assert "within the noise: no clear rise" in rise_summary(wandering)
    assert rise_summary([-0.5]) == "too few epochs to compare the first with the last"


def test_the_quick_preset_is_the_measured_one():
    samples = QUICK_PRESET["epochs"] * QUICK_PRESET["samples_per_epoch"]
    assert samples == 1920 and QUICK_PRESET["inner_epochs"] == 2
