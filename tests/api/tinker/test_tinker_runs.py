"""Tinker checkpoints are runs of the run seam (``rl.run``): what ``save_state`` and
``save_weights_for_sampler`` write is a run folder that ``open_run`` reads and ``list_runs`` lists, and
``tinker://`` paths load both these folders and the flat ones an earlier build wrote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from tinker import types
from tinker_server import BASE

from resonance_os.llm.adapters import read_adapter
from resonance_os.rl.run import list_runs, open_run


def state_folder(server, model_id: str, segment: str, name: str) -> Path:
    """The server's folder of checkpoint ``name`` (``segment``: weights or sampler_weights) of run ``model_id``."""
    run = model_id.replace(":", "_").replace("/", "_")
    (folder,) = (server.home / "tinker").glob(f"*/{run}/{segment}/{name}")
    return folder


def sft(training, ids: list[int]):
    batch = [
        types.Datum(
            model_input=types.ModelInput.from_ints(ids[:-1]), loss_fn_inputs={"target_tokens": ids[1:]}
        )
    ]
    out = training.forward_backward(batch, "cross_entropy").result()
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    return batch, out


def test_saved_states_are_runs_that_open_run_reads_and_lists(tinker_server, service_client):
    training = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=3).result()
    sft(training, [5, 6, 7, 8, 9])
    first = training.save_state("step1").result().path
    sft(training, [5, 6, 7, 8, 9])
    second = training.save_state("step2").result().path
    sampler = training.save_weights_for_sampler("final").result().path

    folder = state_folder(tinker_server, training.model_id, "weights", "step2")
    run = open_run(folder)
    assert run.kind == "tinker_lora"
    assert run.config["base_model"] == BASE and run.config["model_id"] == training.model_id
    assert run.config["lora"]["rank"] == 4 and run.config["seed"] == 3
    assert run.task["tinker_path"] == second
    assert sorted(p.name for p in run.checkpoint.iterdir()) == ["adapter.safetensors", "optimizer.pt"]
    states = list_runs(folder.parent)
    assert [(r.path.name, r.task["tinker_path"]) for r in states] == [("step1", first), ("step2", second)]

    weights = open_run(state_folder(tinker_server, training.model_id, "sampler_weights", "final"))
    assert weights.kind == "tinker_sampler" and weights.task["tinker_path"] == sampler
    adapter = read_adapter(
        weights.path
    )  # the generation engine's reader finds the peft files through the run
    assert adapter.layers and all(a.shape[0] == 4 for a, _, _ in adapter.layers.values())


def test_tinker_paths_load_checkpoints_written_flat_before(tinker_server, service_client):
    """A state in the flat layout of the previous build (files + meta.json in the folder itself)."""
    training = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=4).result()
    batch, _ = sft(training, [9, 8, 7, 6, 5])
    path = training.save_state("old").result().path
    expected = training.forward(batch, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_numpy()

    folder = state_folder(tinker_server, training.model_id, "weights", "old")
    run = open_run(folder)
    flat = folder.with_name(".flat")
    shutil.copytree(run.checkpoint, flat)
    (flat / "meta.json").write_text(json.dumps(run.config))
    shutil.rmtree(folder)
    flat.rename(folder)

    resumed = service_client.create_training_client_from_state_with_optimizer(path).result()
    again = resumed.forward(batch, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_numpy()
    np.testing.assert_array_equal(again, expected)
