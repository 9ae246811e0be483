"""open(): outputs of the program and of run() read back with coordinates, units and the model."""

import numpy as np
import pytest

import minimod_gpu as mm
from conftest import NX, NY, NZ, cli, read_gathers, same_bits


@pytest.fixture
def outputs(acoustic_files, tmp_path):
    survey, vp = acoustic_files
    text = survey.read_text().replace("output: {file: out/never.h5}",
                                      "output: {file: out/never.h5, snapshots: {every: 10}}")
    survey.write_text(text)
    cli("run", str(survey), "-o", str(tmp_path / "cli.h5"), "--backend", "cpu", "--quiet")
    mm.run(survey, backend="cpu", output=tmp_path / "py.h5", progress=False)
    return tmp_path / "cli.h5", tmp_path / "py.h5", vp


@pytest.mark.parametrize("which", [0, 1], ids=["program", "python"])
def test_open_round_trips(outputs, which):
    xr = pytest.importorskip("xarray")
    path, vp = outputs[which], outputs[2]
    out = mm.open(path)
    assert out.shots == [0, 1, 2, 3]
    ds = out.gathers
    assert isinstance(ds, xr.Dataset)
    assert ds.traces.dims == ("shot", "receiver", "time")
    reference = read_gathers(path)
    assert same_bits(ds.traces.sel(shot=2).values, reference[2])
    assert same_bits(ds.traces[1:3, 2:5, 10:20].values, np.stack([reference[1], reference[2]])[:, 2:5, 10:20])
    assert np.allclose(ds.receiver_x.values[0], np.linspace(50, 180, 14))
    assert ds.receiver_x.attrs["units"] == "m" and ds.time.attrs["units"] == "s"
    assert np.allclose(ds.source_x.values, [80, 120, 140, 100])
    assert np.allclose(ds.time.values[1] - ds.time.values[0], out.attrs["dt"])
    assert ds.attrs["survey"] == out.survey and "grid:" in out.survey
    assert ds.attrs["program_version"] == mm.__version__.split("+")[0]
    model = out.model()
    assert model.dims == ("z", "y", "x") and model.shape == (NZ, NY, NX)
    assert same_bits(model.values, np.ascontiguousarray(vp.transpose(2, 1, 0)))
    assert np.allclose(model.x.values, np.arange(NX) * 10.0)
    snaps = out.snapshots
    assert snaps.dims == ("snapshot", "z", "y", "x") and snaps.shape[0] == 5
    assert np.array_equal(snaps.step.values, [10, 20, 30, 40, 50])
    assert np.isfinite(snaps[-1].values).all() and np.abs(snaps[-1].values).max() > 0
    g = out.gather(3)
    assert same_bits(g.values, reference[3]) and g.dims == ("receiver", "time")


def test_open_refuses_what_is_not_an_output(tmp_path):
    (tmp_path / "x.h5").write_bytes(b"not hdf5")
    with pytest.raises(mm.InputError, match="cannot be read as an HDF5 file"):
        mm.open(tmp_path / "x.h5")


def test_open_without_xarray_gives_numpy(outputs, monkeypatch):
    import minimod_gpu._open as opened
    monkeypatch.setattr(opened, "_xarray", lambda: None)
    out = mm.open(outputs[1])
    ds = out.gathers
    assert isinstance(ds["traces"], np.ndarray) and ds["traces"].shape[:2] == (4, 14)
    assert same_bits(ds["traces"][3], read_gathers(outputs[1])[3])
    model = out.model()
    assert same_bits(model["values"], np.ascontiguousarray(outputs[2].transpose(2, 1, 0)))
    assert isinstance(out.gather(0), np.ndarray)
