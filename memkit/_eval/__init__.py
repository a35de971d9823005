"""Offline evaluations of a memkit configuration (``memkit eval ...``)."""

from memkit._eval.locomo import format_report, run_locomo

__all__ = ["format_report", "run_locomo"]
