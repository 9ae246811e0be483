"""minimod-gpu from Python: run seismic surveys in this process, read results as NumPy arrays.

The same library as the command line ``minimod-gpu`` (one build, no second implementation):

>>> import minimod_gpu as mm
>>> survey = mm.Survey("input/demo.yaml")          # or YAML text, or a dict with NumPy arrays
>>> plan = survey.validate()                          # every check `run` makes; the plan
>>> result = mm.run(survey, backend="cpu")            # gathers as NumPy arrays (no copy)
>>> result.gathers[0].traces.shape                    # (receivers, samples)
>>> out = mm.open("out/demo.h5")                      # an output, as xarray objects

Errors are exceptions with the command line's messages: InputError (exit 2), RuntimeFailure and
DeviceError (3), OutputError (4). docs/python.md has the whole interface.
"""

from ._core import (DeviceError, InputError, InternalError, MinimodError, OutputError,
                    RuntimeFailure)
from ._core import __commit__ as _commit
from ._core import __version__ as _program_version
from ._core import kernels
from ._open import Output, open
from ._run import Gather, Result, run
from ._survey import Plan, Survey

#: The program's version and the commit it was built from ("0.1.0+g1a2b3c4d5e6f", ".dirty"
#: when tracked files differed from it), as `minimod-gpu --version` reports them.
__version__ = (_program_version if _commit in ("", "unknown")
               else f"{_program_version}+g{_commit.replace('-', '.')}")
__commit__ = _commit

__all__ = ["Survey", "Plan", "run", "Result", "Gather", "open", "Output", "kernels",
           "MinimodError", "InputError", "RuntimeFailure", "DeviceError", "OutputError",
           "InternalError", "__version__", "__commit__"]
