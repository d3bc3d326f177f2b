"""Library messages the command line leaves out: warnings about situations kalbert handles itself, which read
like failures to a newcomer. kalbert's own messages are never filtered, and ``KALBERT_DEBUG=1`` shows all.

- transformers' LOAD REPORT table of checkpoint weights the loaded class has no place for, or has and the
  checkpoint lacks: a pretraining checkpoint's heads left out when its encoder loads, a pooler or task head
  initialised for training. A report of mismatched shapes or failed conversions is kept.
- transformers' "Token indices sequence length is longer than the specified maximum" warning: kalbert counts
  the tokens of whole documents to cut them into passages, and truncates what it encodes.
- torchvision's warnings (transformers imports it where it is installed; kalbert reads no images).
"""

from __future__ import annotations

import logging
import os
import warnings

_LOGGERS = ("transformers.modeling_utils", "transformers.tokenization_utils_base")
LONG_SEQUENCE = "Token indices sequence length is longer than the specified maximum"


class HandledByKalbert(logging.Filter):
    """Drops the transformers records listed above, passes every other one."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "LOAD REPORT" in message:
            return "MISMATCH" in message or "CONVERSION" in message
        return not message.startswith(LONG_SEQUENCE)


def quiet_libraries() -> None:
    """Install the filters (once per process; a no-op with ``KALBERT_DEBUG=1``)."""
    if os.environ.get("KALBERT_DEBUG") == "1":
        return
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, HandledByKalbert) for f in logger.filters):
            logger.addFilter(HandledByKalbert())
    warnings.filterwarnings("ignore", module=r"torchvision(\.|$)")
