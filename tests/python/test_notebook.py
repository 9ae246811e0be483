"""The example notebook runs end to end on the CPU backend (nbclient), as a user would run it."""

import json
import os
import sys

import pytest

from conftest import SOURCE_DIR

NOTEBOOK = SOURCE_DIR / "examples" / "python_survey.ipynb"


def _require(module: str):
    # Skipped without the notebook packages, except under CI, where they must be installed.
    if os.environ.get("CI") == "true":
        return __import__(module)
    return pytest.importorskip(module)


def test_notebook_runs(tmp_path, monkeypatch):
    nbformat = _require("nbformat")
    nbclient = _require("nbclient")
    _require("ipykernel")
    # The kernel is this interpreter (a virtual environment's, where the module is installed),
    # not whichever python3 the system's kernel spec names.
    spec = tmp_path / "jupyter" / "kernels" / "this-python"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "this python", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="this-python",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 4  # the model, the gathers, a gather and the model from the file
    assert (tmp_path / "out" / "notebook.h5").is_file()
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Result(3 gather(s)" in printed
