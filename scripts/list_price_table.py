"""Print the shipped list-price table (``perfmodel/data/prices/cloud_list_prices.yaml``) as Markdown.

One line per row, grouped by accelerator and cheapest per device-hour first (the order
:func:`perfmodel.planning.prices.list_prices` returns), with the price per device-hour

.. math::
    p_{dev} = p_{instance} / N_{devices}

the row's date (``as_of`` where the page gives one, else ``-``), the date it was read and its source.
``docs/planning.md`` quotes the output through ``scripts/gen_doc_blocks.py``.

    python -m scripts.list_price_table
"""

from __future__ import annotations

import argparse
from urllib.parse import urlparse

from perfmodel.planning.prices import LIST_PRICE_CAVEAT, list_prices


def table() -> str:
    """The Markdown table, one row per list price, grouped by accelerator id."""
    rows = sorted(list_prices(), key=lambda r: (r.accelerator, r.usd_per_device_hour, r.id))
    out = [f"USD, on-demand: {LIST_PRICE_CAVEAT}. {len(rows)} rows, "
           f"{len({r.accelerator for r in rows})} accelerators.", "",
           "| accelerator | $/device-h | provider | instance | devices | $/instance-h | as of | seen | source |",
           "|---|---:|---|---|---:|---:|---|---|---|"]
    for r in rows:
        host = urlparse(r.source).netloc
        out.append(f"| {r.accelerator} | {r.usd_per_device_hour:.4g} | {r.provider} | {r.instance} | {r.count} "
                   f"| {r.usd_per_hour:.10g} | {r.as_of or '-'} | {r.seen} | [{host}]({r.source}) |")
    return "\n".join(out)


if __name__ == "__main__":
    argparse.ArgumentParser(description="Print the shipped list-price table as Markdown.").parse_args()
    print(table())
