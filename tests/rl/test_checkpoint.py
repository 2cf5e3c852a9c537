import json
from fractions import Fraction

import pytest
import torch

from resonance_os.rl.checkpoint import FORMAT_VERSION, load_checkpoint, save_checkpoint
from resonance_os.rl.errors import CheckpointError
from resonance_os.rl.networks import build_mlp


def _net_and_optimizer():
    torch.manual_seed(0)
    net = build_mlp(4, [8], 2)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    net(torch.ones(3, 4)).sum().backward()
    optimizer.step()
    return net, optimizer


def test_round_trip_restores_weights_optimizer_config_and_metadata(tmp_path):
    net, optimizer = _net_and_optimizer()
    path = save_checkpoint(
        tmp_path / "ckpt",
        weights={"policy": net.state_dict()},
        states={"optimizer": optimizer.state_dict()},
        config={"learning_rate": 1e-3},
        metadata={"algorithm": "PPO", "timesteps": 128},
    )
    loaded = load_checkpoint(path, expected_algorithm="PPO")
    restored = build_mlp(4, [8], 2)
    restored.load_state_dict(loaded.weights["policy"])
    x = torch.randn(5, 4)
    assert torch.equal(restored(x), net(x))
    optimizer2 = torch.optim.Adam(restored.parameters(), lr=1e-3)
    optimizer2.load_state_dict(loaded.states["optimizer"])
    assert optimizer2.state_dict()["state"][0]["step"] == optimizer.state_dict()["state"][0]["step"]
    assert loaded.config == {"learning_rate": 1e-3}
    assert loaded.metadata["timesteps"] == 128
    assert loaded.metadata["format_version"] == FORMAT_VERSION


def test_overwrite_replaces_the_folder_and_leaves_no_temporary_files(tmp_path):
    net, _ = _net_and_optimizer()
    for step in (1, 2):
        save_checkpoint(
            tmp_path / "ckpt", weights={"p": net.state_dict()}, config={}, metadata={"timesteps": step}
        )
    assert load_checkpoint(tmp_path / "ckpt").metadata["timesteps"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_failed_write_keeps_the_previous_checkpoint(tmp_path):
    net, _ = _net_and_optimizer()
    save_checkpoint(tmp_path / "ckpt", weights={"p": net.state_dict()}, config={}, metadata={"timesteps": 1})

    class Unserialisable:
        pass

    with pytest.raises(TypeError):
        save_checkpoint(tmp_path / "ckpt", weights={"p": net.state_dict()}, config={"bad": Unserialisable()})
    assert load_checkpoint(tmp_path / "ckpt").metadata["timesteps"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_missing_corrupt_and_future_checkpoints_give_clear_errors(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint folder"):
        load_checkpoint(tmp_path / "absent")
    net, _ = _net_and_optimizer()
    path = save_checkpoint(
        tmp_path / "ckpt", weights={"p": net.state_dict()}, config={}, metadata={"algorithm": "PPO"}
    )
    with pytest.raises(CheckpointError, match="holds a PPO model, not SAC"):
        load_checkpoint(path, expected_algorithm="SAC")
    (path / "weights" / "p.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="corrupt weights file"):
        load_checkpoint(path)
    path = save_checkpoint(tmp_path / "ckpt2", weights={}, config={}, metadata={})
    meta = json.loads((path / "metadata.json").read_text())
    meta["format_version"] = FORMAT_VERSION + 1
    (path / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="upgrade resonance-os"):
        load_checkpoint(path)
    (path / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="unreadable"):
        load_checkpoint(path)


def test_state_files_are_loaded_weights_only(tmp_path):
    path = save_checkpoint(tmp_path / "ckpt", weights={}, config={}, metadata={})

    torch.save({"obj": Fraction(1, 3)}, path / "state" / "evil.pt")  # an arbitrary object, not a state dict
    with pytest.raises(CheckpointError, match="corrupt or unsafe"):
        load_checkpoint(path)


def test_unwritable_destination_is_reported(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CheckpointError, match="cannot"):
        save_checkpoint(blocker / "ckpt", weights={}, config={})
