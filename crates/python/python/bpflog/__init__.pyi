"""Type stubs of bpflog, the Python package over bpflog's Rust library."""

import os
from typing import Any, Callable, Literal, Optional, Protocol, Union, overload

__version__: str

class _BinaryWriter(Protocol):
    def write(self, data: bytes, /) -> Any: ...

Log = Union[str, bytes, bytearray, memoryview]
"""A verifier log: str, or a bytes-like object (bytes, bytearray, memoryview, mmap...)."""

Style = Literal["kernel", "rich"]
Loader = Literal["libbpf", "aya", "cilium"]
Out = Union[_BinaryWriter, Callable[[bytes], Any]]

class Object:
    """A BPF object and its programs, each laid out as libbpf, aya and cilium/ebpf load it.

    Made by ``Object.open``; never changed after, so one object may serve several threads.
    """

    @staticmethod
    def open(path_or_bytes: Union[str, "os.PathLike[str]", "os.PathLike[bytes]", bytes, bytearray, memoryview], /) -> "Object":
        """Opens a BPF object from a path or from its bytes (copied); raises ObjectError."""
        ...
    @property
    def programs(self) -> list[str]:
        """The names of the object's programs, in the object's order."""
        ...
    @property
    def name(self) -> str:
        """How error messages name the object: its path, or ``<bytes>``."""
        ...
    @overload
    def annotate(
        self,
        log: Log,
        prog: Optional[str] = None,
        style: Style = "kernel",
        loader: Optional[Loader] = None,
        out: None = None,
    ) -> str:
        """The log annotated with the C source, as str."""
        ...
    @overload
    def annotate(
        self,
        log: Log,
        prog: Optional[str] = None,
        style: Style = "kernel",
        loader: Optional[Loader] = None,
        *,
        out: Out,
    ) -> None:
        """The log annotated with the C source, written to ``out`` in pieces."""
        ...
    def explain(
        self, log: Log, prog: Optional[str] = None, loader: Optional[Loader] = None
    ) -> list[dict[str, Any]]:
        """One dict per rejection, as ``bpflog explain --format json`` writes each."""
        ...
    def profile(
        self, log: Log, prog: Optional[str] = None, loader: Optional[Loader] = None
    ) -> list[dict[str, Any]]:
        """One dict per source line: file, line, text, visits, states; hottest first."""
        ...

class Error(Exception):
    """Base class of the errors bpflog raises; its message is one line naming the input."""

class ObjectError(Error):
    """The object could not be read, or is not a BPF object bpflog can read."""

class ProgramNotFoundError(Error):
    """The object has no program of the name given."""

class SelectError(Error):
    """No program was named and none could be chosen from the log."""

class NoProgramFitsError(SelectError):
    """No program was named and the log fits none of the object's programs."""

class AmbiguousProgramError(SelectError):
    """The log fits several programs that would annotate it differently."""

class LogError(Error):
    """The log could not be read (a line longer than the library's bound of 16 MiB)."""

class WriteError(Error):
    """Writing to ``out`` raised: the exception raised is the ``__cause__``."""

class InternalError(Error):
    """A bug in bpflog (a panic in the library, caught before it reached Python)."""
