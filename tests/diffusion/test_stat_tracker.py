import numpy as np
import pytest

from resonance_os.diffusion.stat_tracker import PerPromptStatTracker
from resonance_os.rl.errors import ConfigError


def test_batch_statistics_until_a_prompt_has_min_count_then_its_own_buffer() -> None:
    tracker = PerPromptStatTracker(buffer_size=4, min_count=3)
    prompts = np.array([0, 0, 1, 1])
    rewards = np.array([1.0, 3.0, 10.0, 30.0])
    first = tracker.update(prompts, rewards)
    batch = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
    np.testing.assert_allclose(first, batch)
    second = tracker.update(prompts, np.array([2.0, 2.0, 20.0, 20.0]))
    own0 = np.array([1.0, 3.0, 2.0, 2.0])
    np.testing.assert_allclose(second[:2], (2.0 - own0.mean()) / (own0.std() + 1e-6))
    # buffer keeps only the last 4 rewards of a prompt
    tracker.update(np.array([0]), np.array([100.0]))
    assert list(tracker.buffers[0]) == [3.0, 2.0, 2.0, 100.0]


def test_state_round_trip_and_bad_settings() -> None:
    tracker = PerPromptStatTracker(buffer_size=3, min_count=2)
    tracker.update(np.array([4, 4, 5]), np.array([1.0, 2.0, 3.0]))
    copy = PerPromptStatTracker(buffer_size=3, min_count=2)
    copy.load_state_dict(tracker.state_dict())
    assert {k: list(v) for k, v in copy.buffers.items()} == {4: [1.0, 2.0], 5: [3.0]}
    with pytest.raises(ConfigError, match="min_count"):
        PerPromptStatTracker(buffer_size=2, min_count=5)
