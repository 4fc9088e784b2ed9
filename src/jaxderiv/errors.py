"""Exceptions that name where in a spec file a problem sits."""

from __future__ import annotations

__all__ = [
    "Location",
    "JaxderivError",
    "SpecError",
    "FormulaError",
    "SchemaError",
    "TranslationError",
    "NotImplementedDerivative",
    "RealOnlyDerivative",
]

import dataclasses


@dataclasses.dataclass(frozen=True)
class Location:
    """Where a piece of spec text comes from."""

    file: str | None = None  # path of the spec file, or None for text given directly
    line: int | None = None  # 1-based line of the entry or formula
    entry: str | None = None  # the entry's op name, e.g. "add.Tensor"
    key: str | None = None  # the formula's key, e.g. "self, other" or "result"

    def __str__(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(f"{self.file}:{self.line}" if self.line is not None else self.file)
        elif self.line is not None:
            parts.append(f"line {self.line}")
        if self.entry is not None:
            parts.append(f"entry {self.entry!r}")
        if self.key is not None:
            parts.append(f"key {self.key!r}")
        return ", ".join(parts)


class JaxderivError(Exception):
    """Base class of every error jaxderiv raises on purpose."""

    def __init__(self, message: str, location: Location | None = None, column: int | None = None):
        self.message = message
        self.location = location or Location()
        self.column = column  # 1-based column inside the formula text, when known
        super().__init__(self._render())

    def _render(self) -> str:
        where = str(self.location)
        if self.column is not None:
            where = f"{where}, column {self.column}" if where else f"column {self.column}"
        return f"{where}: {self.message}" if where else self.message

    def located(self, location: Location) -> "JaxderivError":
        """The same error with missing location fields filled in from `location`."""
        merged = Location(
            file=self.location.file if self.location.file is not None else location.file,
            line=self.location.line if self.location.line is not None else location.line,
            entry=self.location.entry if self.location.entry is not None else location.entry,
            key=self.location.key if self.location.key is not None else location.key,
        )
        err = type(self).__new__(type(self))
        JaxderivError.__init__(err, self.message, merged, self.column)
        for k, v in self.__dict__.items():
            if k not in ("message", "location", "column", "args"):
                setattr(err, k, v)
        return err


class SpecError(JaxderivError):
    """A spec file is malformed: bad YAML, missing `name`, unknown keys, duplicates."""


class SchemaError(JaxderivError):
    """An ATen schema in `name:` cannot be parsed."""


class FormulaError(JaxderivError):
    """A formula's text is not in the grammar, or is too long or too deeply nested."""


class TranslationError(JaxderivError):
    """A parsed formula names something the translator does not know, or calls it wrongly."""


class NotImplementedDerivative(JaxderivError, NotImplementedError):
    """The spec says `not_implemented(...)` for a derivative that was requested."""


class RealOnlyDerivative(JaxderivError, TypeError):
    """A derivative was asked, with complex values, of formulas their release wrote for real
    tensors only: the result would be silently wrong (see `translate.real_only_inputs`)."""
