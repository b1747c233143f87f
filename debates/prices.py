"""What a model's tokens cost: USD per million input and output tokens, for the money shown next to
every token count and for a debate's money budget.

Where a price comes from, first found wins: the Provider row's own prices (set in the admin), the
environment's `AGORA_PRICE_PER_MTOK` for the default provider, the offline table of the
`genai-prices` package (looked up by model name and the server's address), nothing (the money is
then unknown, and said so). The bundled local model and a person cost nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from debates.engine import optional

FREE = (0.0, 0.0)
_log = logging.getLogger(__name__)
_said: set[str] = set()


@dataclass(frozen=True)
class Price:
    input: float  # USD per million input tokens
    output: float
    source: str  # "admin" | "environment" | "genai-prices" | "local"

    @property
    def pair(self) -> tuple[float, float]:
        return self.input, self.output


def from_table(model: str, base_url: str = "", when: datetime | None = None) -> Price | None:
    """The offline table's price for `model` (at `base_url`, which tells providers apart) for a call
    made `when` (default: now). Some providers price by the hour: DeepSeek charges half off-peak,
    16:30–00:30 UTC."""
    if not model:
        return None
    try:
        genai_prices = optional.load("genai_prices")
    except optional.MissingPackage as missing:
        _say_missing(missing)
        return None
    try:
        found = genai_prices.calc_price(
            genai_prices.Usage(input_tokens=1_000_000, output_tokens=1_000_000),
            model_ref=model,
            provider_api_url=base_url or None,
            genai_request_timestamp=when,
        )
    except LookupError:
        return None
    return Price(float(found.input_price), float(found.output_price), "genai-prices")


def _say_missing(missing: optional.MissingPackage) -> None:
    """Without genai-prices the money of a model without admin or environment prices is unknown
    (and shown so): said once per process in the log, and by `manage.py check`."""
    if missing.package not in _said:
        _said.add(missing.package)
        _log.warning("Model prices: %s", missing)


def for_provider(provider, model: str, when: datetime | None = None) -> Price | None:
    if provider.input_price is not None and provider.output_price is not None:
        return Price(float(provider.input_price), float(provider.output_price), "admin")
    return from_table(model or provider.default_model, provider.base_url, when)


def for_default(model: str) -> Price | None:
    """The default provider's price: the environment's, else the table's; free for the local model."""
    if not settings.OPENAI_BASE_URL:
        return Price(0.0, 0.0, "local")
    if settings.AGORA_PRICE_PER_MTOK:
        first, _comma, second = settings.AGORA_PRICE_PER_MTOK.partition(",")
        return Price(float(first), float(second or first), "environment")
    return from_table(model, settings.OPENAI_BASE_URL)
