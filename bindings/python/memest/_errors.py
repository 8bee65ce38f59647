"""Exceptions: one memest.MemestError subclass per C status code (memest_status).

Each class names its status by the library's own name for it (`code`, as memest_enum_name gives
it); the numeric `status` is looked up in the library's enum table when the package loads, and a
failed call picks its class by the name the library reports. tests/test_memest.py checks that
the classes and the library's status names are the same set."""
from __future__ import annotations

from typing import Dict, Type

from . import _native


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
    code = "invalid_argument"


class MissingFieldError(MemestError, ValueError):
    """A required field was not given (MEMEST_ERR_MISSING_FIELD)."""
    code = "missing_field"


class FieldTypeError(MemestError, TypeError):
    """A JSON field has the wrong type (MEMEST_ERR_TYPE)."""
    code = "wrong_type"


class ParseError(MemestError, ValueError):
    """The request is not valid JSON (MEMEST_ERR_PARSE)."""
    code = "parse_error"


class UnknownPresetError(MemestError, ValueError):
    """No model or GPU preset has that id (MEMEST_ERR_UNKNOWN_PRESET)."""
    code = "unknown_preset"


class UnknownFieldError(MemestError, ValueError):
    """A request object holds a field memest does not know (MEMEST_ERR_UNKNOWN_FIELD)."""
    code = "unknown_field"


class UnsupportedError(MemestError):
    """Valid input that this version cannot model (MEMEST_ERR_UNSUPPORTED)."""
    code = "unsupported"


class SizeOverflowError(MemestError, ArithmeticError):
    """Sizes so large that the result would not be finite (MEMEST_ERR_OVERFLOW)."""
    code = "overflow"


class StructSizeError(MemestError):
    """A struct's struct_size is not a layout this library knows (MEMEST_ERR_STRUCT_SIZE)."""
    code = "struct_size"


class NullPointerError(MemestError):
    """A required pointer was NULL (MEMEST_ERR_NULL_POINTER)."""
    code = "null_pointer"


class OutOfRangeError(MemestError, IndexError):
    """An index is past the end of a list (MEMEST_ERR_OUT_OF_RANGE)."""
    code = "out_of_range"


class NoMemoryError(MemestError, MemoryError):
    """Allocation failed (MEMEST_ERR_NO_MEMORY)."""
    code = "no_memory"


class InternalError(MemestError):
    """A bug in memest (MEMEST_ERR_INTERNAL): please report it."""
    code = "internal"


_CLASSES = (InvalidArgumentError, MissingFieldError, FieldTypeError, ParseError,
            UnknownPresetError, UnknownFieldError, UnsupportedError, SizeOverflowError,
            StructSizeError, NullPointerError, OutOfRangeError, NoMemoryError, InternalError)

_BY_CODE: Dict[str, Type[MemestError]] = {cls.code: cls for cls in _CLASSES}

# The numeric status of each class, from the library's table (-1 for a name it does not know,
# which the package's tests refuse).
for _cls in _CLASSES:
    _cls.status = int(_native.enum_value("status", _cls.code))
del _cls


def _make_error(status: int, code: str, field: str, message: str) -> MemestError:
    """Called by memest._native on a failed status. The class is chosen by the status name the
    C library gives (memest_status_name), so a status added later still raises a MemestError
    with its name."""
    cls = _BY_CODE.get(code, MemestError)
    return cls(message, field=field, code=code, status=status)
