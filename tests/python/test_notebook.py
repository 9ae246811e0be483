"""The example notebook runs end to end on the CPU backend (nbclient), as a user would run it."""

import os

import pytest

from conftest import SOURCE_DIR

NOTEBOOK = SOURCE_DIR / "examples" / "python_survey.ipynb"


def _require(module: str):
    # Skipped without the notebook packages, except under CI, where they must be installed.
    if os.environ.get("CI") == "true":
        return __import__(module)
    return pytest.importorskip(module)


def test_notebook_runs(tmp_path):
    nbformat = _require("nbformat")
    nbclient = _require("nbclient")
    _require("ipykernel")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 4  # the model, the gathers, a gather and the model from the file
    assert (tmp_path / "out" / "notebook.h5").is_file()
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Result(3 gather(s)" in printed
