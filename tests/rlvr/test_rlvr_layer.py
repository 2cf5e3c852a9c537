"""rlvr joins llm and verify and reaches no higher: nothing of cli, api, evolution or generation loads."""

from __future__ import annotations

import ast
import subprocess
import sys


def test_importing_rlvr_loads_llm_verify_and_their_layers_only():
    code = (
        "import sys, resonance_os.rlvr\n"
        "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('resonance_os.')}))\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    layers = set(ast.literal_eval(output.strip()))
    assert {"rlvr", "llm", "verify"} <= layers
    assert layers <= {"rlvr", "llm", "verify", "rl", "core", "distributed"}, layers
