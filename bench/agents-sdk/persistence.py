"""What the OpenAI Agents SDK's SQLiteSession spends to store one tool call.

The peer side of scripts/bench-persistence-compare.sh. A call is stored as the SDK's runner
stores a turn's new items: one `add_items` with the `function_call` item and its
`function_call_output` (one commit; the SDK keeps no journal and records nothing before the
tool runs). Items are the same size as toolsmith's bench (crates/store/benches/persistence.rs).

Usage: python persistence.py SECONDS
Prints one JSON line per mode: the SDK as shipped (SQLite's default `synchronous=FULL`: the WAL
is synced at every commit) and with `synchronous=NORMAL`, toolsmith's setting.
"""

import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from agents import SQLiteSession
from agents.memory import sqlite_session


def items(n: int) -> list[dict]:
    call_id = f"call_{n}"
    return [
        {
            "type": "function_call",
            "call_id": call_id,
            "name": "lookup",
            "arguments": json.dumps({"key": "some key", "n": n}),
        },
        {
            "type": "function_call_output",
            "call_id": call_id,
            "output": json.dumps({"value": "a result of moderate length, as tools return"}),
        },
    ]


async def measure(seconds: float, db: Path) -> dict:
    session = SQLiteSession("bench", db)
    await session.add_items([{"role": "user", "content": "Look these up."}])
    # Warm-up: the worker threads' connections opened, the statements cached.
    for n in range(200):
        await session.add_items(items(n))
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        await session.add_items(items(calls))
        calls += 1
    elapsed = time.perf_counter() - start
    session.close()
    return {"calls": calls, "per_call_us": elapsed / calls * 1e6}


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    shipped = SQLiteSession._configure_connection

    def normal(conn: sqlite3.Connection) -> None:
        shipped(conn)
        conn.execute("PRAGMA synchronous=NORMAL")

    for mode, configure in [("default (synchronous=FULL)", shipped), ("synchronous=NORMAL", normal)]:
        sqlite_session.SQLiteSession._configure_connection = staticmethod(configure)
        with tempfile.TemporaryDirectory() as tmp:
            result = asyncio.run(measure(seconds, Path(tmp) / "bench.db"))
        print(json.dumps({"mode": mode, **result}), flush=True)


if __name__ == "__main__":
    main()
