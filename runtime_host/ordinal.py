"""The order chat and mail were written in, which memory reads them by (no clock moves it): the ``ordinal`` table
holds the last number given in each order ("message", "mail"), and ``carried`` how many rows the store's migration
0021 numbered (those kept before it, by time, then id)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

ORDINAL_TABLE = "CREATE TABLE ordinal (name TEXT PRIMARY KEY, last BIGINT NOT NULL, carried BIGINT NOT NULL)"


def next_in_order(conn: Any, name: str) -> int:
    """The next number of ``name``'s order ("message", "mail": see migration 0021), taken in the caller's transaction
    (a Connection). Its row stays locked until that transaction ends, so the numbers are taken in the order the rows
    they number become visible to a reader, none twice and none reused, whatever the clock says. Every message is
    given one as it is inserted (``store._numbered``), every kept mail by ``ledger.record_message``."""
    return int(conn.execute(text("UPDATE ordinal SET last = last + 1 WHERE name = :n RETURNING last"),
                            {"n": name}).scalar_one())


_ORDERED = {"message": ("message", "created_at"), "mail": ("mail_messages", "received_at")}


def carried_seq(conn: Any, name: str, after: tuple[float, str], account_id: str | None = None) -> int:
    """Where a reader that went by (time, id) up to ``after`` (memory's watermarks before migration 0021) stands in
    the order of ``name`` ("message", or one inbox's "mail"): among the rows that migration numbered (by time, then
    id: the order that reader went by), the last at or before ``after``; 0 if none. A row written since is past it,
    whatever its time says: it was never read."""
    table, at = _ORDERED[name]
    inbox = " AND account_id = :a" if name == "mail" else ""
    carried = conn.execute(text("SELECT carried FROM ordinal WHERE name = :n"), {"n": name}).scalar_one()
    last = conn.execute(text(f"SELECT MAX(seq) FROM {table} WHERE seq <= :c AND ({at} < :t OR ({at} = :t AND id <= :k))"
                             f"{inbox}"), {"c": carried, "t": after[0], "k": after[1], **({"a": account_id} if inbox else {})}).scalar()
    return int(last or 0)
