"""verify sits low in the house: it imports core (and distributed, for sandbox pools as actors) only,
and no torch."""

from __future__ import annotations

import subprocess
import sys


def test_importing_verify_loads_only_core_distributed_and_no_torch():
    code = (
        "import sys, resonance_os.verify\n"
        "ours = sorted({m.split('.')[1] for m in sys.modules if m.startswith('resonance_os.')})\n"
        "print(ours, 'torch' in sys.modules)\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "['core', 'distributed', 'verify'] False"
