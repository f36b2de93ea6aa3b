"""The largest definition accepted (documented in docs/definitions.md).

What is past these is refused before anything else is checked, and validating a
definition at every limit takes well under two seconds (bench/definition_limits.py).
"""

from __future__ import annotations

MAX_DEFINITION_BYTES = 1024 * 1024
MAX_STATES = 1_000
MAX_TRANSITIONS = 2_000
MAX_EXPRESSIONS = 2_000
MAX_CONTEXT_FIELDS = 500
MAX_EXPRESSION_LENGTH = 16 * 1024
MAX_RECURSION_LIMIT = 10_000
# The longest retention a definition may ask for (ten years); `forever` means never.
MAX_RETENTION_SECONDS = 3650 * 86400.0
