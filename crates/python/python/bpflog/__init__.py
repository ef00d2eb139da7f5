"""Make Linux BPF verifier logs readable: put the C source back into them.

Open an object, then annotate, explain or profile a verifier log of one of its programs::

    import bpflog
    obj = bpflog.Object.open("prog.o")
    print(obj.annotate(log, style="rich"))

See docs/python.md in bpflog's repository for the whole API.
"""

from ._bpflog import (
    AmbiguousProgramError,
    Error,
    InternalError,
    LogError,
    NoProgramFitsError,
    Object,
    ObjectError,
    ProgramNotFoundError,
    SelectError,
    WriteError,
    __version__,
)

__all__ = [
    "AmbiguousProgramError",
    "Error",
    "InternalError",
    "LogError",
    "NoProgramFitsError",
    "Object",
    "ObjectError",
    "ProgramNotFoundError",
    "SelectError",
    "WriteError",
    "__version__",
]
