"""Exceptions: one memest.MemestError subclass per C status code (memest_status)."""
from __future__ import annotations

from typing import Dict, Type


class MemestError(Exception):
    """A request the C library refused.

    Attributes:
        code: the status name, as memest_status_name() gives it ("invalid_argument").
        status: the numeric memest_status.
        field: the request field at fault ("parallel.tp"), or "" when not about one field.
        message: the library's message (memest_last_error()).
    """

    code: str = "unknown"
    status: int = -1

    def __init__(self, message: str, *, field: str = "", code: str = "", status: int = -1) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        if code:
            self.code = code
        if status >= 0:
            self.status = status

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, field={self.field!r}, message={self.message!r})"


class InvalidArgumentError(MemestError, ValueError):
    """A value is out of range or inconsistent (MEMEST_ERR_INVALID_ARGUMENT)."""
    code, status = "invalid_argument", 1


class MissingFieldError(MemestError, ValueError):
    """A required field was not given (MEMEST_ERR_MISSING_FIELD)."""
    code, status = "missing_field", 2


class FieldTypeError(MemestError, TypeError):
    """A JSON field has the wrong type (MEMEST_ERR_TYPE)."""
    code, status = "wrong_type", 3


class ParseError(MemestError, ValueError):
    """The request is not valid JSON (MEMEST_ERR_PARSE)."""
    code, status = "parse_error", 4


class UnknownPresetError(MemestError, ValueError):
    """No model or GPU preset has that id (MEMEST_ERR_UNKNOWN_PRESET)."""
    code, status = "unknown_preset", 5


class UnknownFieldError(MemestError, ValueError):
    """A request object holds a field memest does not know (MEMEST_ERR_UNKNOWN_FIELD)."""
    code, status = "unknown_field", 6


class UnsupportedError(MemestError):
    """Valid input that this version cannot model (MEMEST_ERR_UNSUPPORTED)."""
    code, status = "unsupported", 7


class SizeOverflowError(MemestError, ArithmeticError):
    """Sizes so large that the result would not be finite (MEMEST_ERR_OVERFLOW)."""
    code, status = "overflow", 8


class StructSizeError(MemestError):
    """A request struct is older than this library needs (MEMEST_ERR_STRUCT_SIZE)."""
    code, status = "struct_size", 9


class NullPointerError(MemestError):
    """A required pointer was NULL (MEMEST_ERR_NULL_POINTER)."""
    code, status = "null_pointer", 10


class OutOfRangeError(MemestError, IndexError):
    """An index is past the end of a list (MEMEST_ERR_OUT_OF_RANGE)."""
    code, status = "out_of_range", 11


class NoMemoryError(MemestError, MemoryError):
    """Allocation failed (MEMEST_ERR_NO_MEMORY)."""
    code, status = "no_memory", 12


class InternalError(MemestError):
    """A bug in memest (MEMEST_ERR_INTERNAL): please report it."""
    code, status = "internal", 13


_BY_STATUS: Dict[int, Type[MemestError]] = {
    cls.status: cls
    for cls in (InvalidArgumentError, MissingFieldError, FieldTypeError, ParseError,
                UnknownPresetError, UnknownFieldError, UnsupportedError, SizeOverflowError,
                StructSizeError, NullPointerError, OutOfRangeError, NoMemoryError, InternalError)
}


def _make_error(status: int, code: str, field: str, message: str) -> MemestError:
    """Called by memest._native on a failed status. The code name comes from the C library
    (memest_status_name), so a status added later still raises a MemestError with its name."""
    cls = _BY_STATUS.get(status, MemestError)
    return cls(message, field=field, code=code, status=status)
