"""Survey: a file, text or a dict (arrays included) gets the program's checks and messages."""

import json
from pathlib import Path

import numpy as np
import pytest

import minimod_gpu as mm
from conftest import (NX, NY, NZ, SOURCE_DIR, acoustic_dict, cli, cli_error, velocity_xyz)

BAD = sorted((SOURCE_DIR / "tests" / "data" / "bad").glob("*.yaml"))


def python_error(path: Path) -> mm.InputError:
    with pytest.raises(mm.InputError) as caught:
        mm.Survey(path).validate(backend="cpu")
    return caught.value


def test_every_bad_survey_of_the_table_is_there():
    assert len(BAD) >= 70


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_survey_raises_the_programs_message(path):
    program = cli("validate", str(path), "--backend", "cpu", check=False)
    assert program.returncode == 2
    error = python_error(path)
    assert error.exit_code == 2
    assert str(error) == cli_error(program)
    assert "std::" not in str(error)


def test_text_and_dict_get_the_same_checks_as_a_file(tmp_path):
    text = (SOURCE_DIR / "tests" / "data" / "bad" / "layer_too_wide.yaml").read_text()
    with pytest.raises(mm.InputError) as from_text:
        mm.Survey.from_string(text).validate()
    with pytest.raises(mm.InputError) as from_file:
        mm.Survey(SOURCE_DIR / "tests" / "data" / "bad" / "layer_too_wide.yaml").validate()
    # The same message but for the name of the survey.
    assert str(from_text.value).split(":", 1)[1] == str(from_file.value).split(":", 1)[1]
    d = acoustic_dict(velocity_xyz())
    d["boundary"]["width"] = 11
    with pytest.raises(mm.InputError, match=r"boundary.width: 11 is not allowed: layer wider"):
        mm.Survey(d).validate()
    d["boundary"] = {"width": 4, "widht": 3}
    with pytest.raises(mm.InputError, match=r"<dict>:\d+: boundary.widht: unknown key"):
        mm.Survey(d)


def test_a_dict_is_the_same_survey_as_its_yaml(acoustic_files):
    survey, vp = acoustic_files
    from_file = mm.Survey(survey).validate(backend="cpu")
    from_dict = mm.Survey(acoustic_dict(vp)).validate(backend="cpu")
    for name in ("dt", "dt_limit", "steps", "layer_widths", "points_per_wavelength",
                 "trace_samples", "device_bytes", "model_vmin", "model_vmax"):
        assert getattr(from_file, name) == getattr(from_dict, name), name
    s = mm.Survey(acoustic_dict(vp))
    assert s.shots == 4 and s.shape == (NX, NY, NZ)
    assert np.array_equal(s.sources[2], [140, 90, 70])
    assert s.receivers.shape == (14, 3)
    # The text the output stores: JSON (a subset of YAML), the array named by its CRC-32.
    stored = json.loads(s.text)
    assert stored["model"]["file"].startswith("array:model.file@")
    assert stored["model"]["order"] == "zyx"


def test_a_bad_array_value_gets_the_message_of_the_same_file(tmp_path):
    vp = velocity_xyz()
    vp[3, 5, 7] = np.nan
    np.save(tmp_path / "vp.npy", vp)
    with pytest.raises(mm.InputError) as from_file:
        mm.Survey(acoustic_dict(str(tmp_path / "vp.npy"), order="zyx")).validate()
    with pytest.raises(mm.InputError) as from_array:
        mm.Survey(acoustic_dict(vp)).validate()
    name = json.loads(mm.Survey(acoustic_dict(velocity_xyz())).text)["model"]["file"]
    assert "(3, 5, 7)" in str(from_array.value)
    # Word for word the file's message, the array's name in place of the file's.
    array_name = str(from_array.value).split("array:model.file@")[1].split(".npy")[0]
    assert str(from_array.value).replace(f"array:model.file@{array_name}.npy",
                                         str(tmp_path / "vp.npy")) == str(from_file.value)
    assert name != f"array:model.file@{array_name}.npy"  # another array, another name


def test_arrays_that_are_not_models_are_refused():
    with pytest.raises(mm.InputError, match=r"model.file: an array of float32 and shape \(4, 4\)"):
        mm.Survey(acoustic_dict(np.ones((4, 4), np.float32)))
    with pytest.raises(mm.InputError, match="a 3-D float32 or float64 array"):
        mm.Survey(acoustic_dict(np.ones((NX, NY, NZ), np.int32)))
    d = acoustic_dict(velocity_xyz())
    d["model"]["format"] = "raw"
    with pytest.raises(mm.InputError, match="model.format: 'raw' is not allowed with an array"):
        mm.Survey(d)
    d = acoustic_dict(velocity_xyz())
    d["model"]["file"] = velocity_xyz()[:, :, :-1]
    with pytest.raises(mm.InputError, match="model"):
        mm.Survey(d).validate()


class DlpackOnly:
    """An array known only through DLPack (as a JAX or other framework's array is)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class OnAnUnknownDevice(DlpackOnly):
    """An array in a memory NumPy cannot read, whose producer cannot copy it to the host."""

    def __dlpack__(self, **kwargs):
        raise BufferError("no copy to the host from this device")

    def __dlpack_device__(self):
        return (14, 0)  # DLPack's oneAPI device type


def test_any_dlpack_array_is_a_model(acoustic_files):
    vp = velocity_xyz()
    from_numpy = mm.run(acoustic_dict(vp), backend="cpu", shots=0, progress=False)
    from_dlpack = mm.run(acoustic_dict(DlpackOnly(vp)), backend="cpu", shots=0, progress=False)
    assert np.array_equal(from_numpy.gathers[0].traces, from_dlpack.gathers[0].traces)
    with pytest.raises(mm.InputError, match=r"model.file: the OnAnUnknownDevice on DLPack "
                                            r"device type 14 cannot be read on the host"):
        mm.Survey(acoustic_dict(OnAnUnknownDevice(vp)))


def test_values_that_are_not_survey_values_are_refused():
    d = acoustic_dict(velocity_xyz())
    d["boundary"]["width"] = {4}
    with pytest.raises(mm.InputError, match="boundary.width: a value of type set is not allowed"):
        mm.Survey(d)
    d = acoustic_dict(object())
    with pytest.raises(mm.InputError, match="model.file: a value of type object is not allowed"):
        mm.Survey(d)


def test_wavelet_array_equals_the_same_samples_in_a_file(tmp_path):
    samples = np.sin(np.linspace(0, 6, 80)) * np.exp(-np.linspace(0, 4, 80))
    samples.astype("<f4").tofile(tmp_path / "w.bin")
    d = acoustic_dict(velocity_xyz(), steps=30)
    d["shots"]["wavelet"] = {"type": "file", "file": str(tmp_path / "w.bin"), "dt": 0.002,
                             "fmax": 30}
    from_file = mm.run(d, backend="cpu", shots=0, progress=False)
    d["shots"]["wavelet"]["file"] = samples
    from_array = mm.run(d, backend="cpu", shots=0, progress=False)
    assert np.array_equal(from_file.gathers[0].traces, from_array.gathers[0].traces)
    assert np.abs(from_array.gathers[0].traces).max() > 0


def test_receivers_and_shots_as_arrays():
    d = acoustic_dict(velocity_xyz())
    d["receivers"] = np.array([[60.0, 100, 50], [70, 100, 50], [80, 100, 50]])
    s = mm.Survey(d)
    assert np.array_equal(s.receivers, d["receivers"])
    d["receivers"] = np.array([[60.0, 100, 50], [70, 100, -50]])
    with pytest.raises(mm.InputError, match=r"receivers.points\[1\]"):
        mm.Survey(d)


def test_plan_object(acoustic_files):
    plan = mm.Survey(acoustic_files[0]).validate(backend="cpu", steps=20)
    program = cli("validate", str(acoustic_files[0]), "--backend", "cpu", "--steps", "20")
    assert plan.steps == 20 and 0 < plan.dt <= plan.dt_limit
    assert plan.layer_widths == (4, 4, 4, 4, 4, 4)
    # validate's printout, but for the host's free memory, which moves between the two.
    def steady(text):
        return [line for line in text.splitlines() if not line.startswith("host memory")]
    assert steady(plan.text) == steady(program.stdout.split("ok: ")[0])
    assert any("interior points" in w for w in plan.warnings)
    assert f"{plan.points_per_wavelength:g} points per shortest wavelength" in plan.text
    assert str(plan) == plan.text
    assert "Every check `run` makes" in mm.Survey.validate.__doc__
