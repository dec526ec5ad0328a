"""Controllers and admission predicates (thesis 5.4 and chapter 7)."""

from .threshold import QueueThreshold

__all__ = ["QueueThreshold"]
