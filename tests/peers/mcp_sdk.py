"""The official MCP Python SDK for the peer scripts (mcp_client.py, mcp_protocol.py).

`ensure(script, modules)` returns when `modules` import; otherwise it creates the virtual
environment under target/peers-venv (never system-wide), installs the pinned SDK there and
re-executes `script` with that environment's interpreter. Python 3 standard library only.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
VENV = ROOT / "target" / "peers-venv"
SDK = "mcp==2.3.0"


def ensure(script: str, modules: list[str]) -> None:
    try:
        for m in modules:
            importlib.import_module(m)
        return
    except ImportError:
        pass
    name = Path(script).name
    if os.environ.get("PHIWARD_MCP_TEST_REEXEC"):
        sys.exit(f"{name}: the MCP SDK is still not importable inside {VENV}")
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = subprocess.run([str(py), "-c", "import " + ", ".join(modules)], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", SDK], check=True)
    env = dict(os.environ, PHIWARD_MCP_TEST_REEXEC="1")
    os.execve(str(py), [str(py), str(Path(script).resolve()), *sys.argv[1:]], env)
