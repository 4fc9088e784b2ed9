"""The checker: sample inputs, comparisons with references, reports."""

from .checker import MODES, Tolerance, check, check_all, plan
from .report import Report, Row
from ..records import Sample

__all__ = ["MODES", "Tolerance", "check", "check_all", "plan", "Report", "Row", "Sample"]
