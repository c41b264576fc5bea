"""A worker that misbehaves on purpose, to test the supervisor: `python bad_worker.py MODE`.

Modes: never-ready, garbage, oversized, ignore-term, exit-on-turn.
"""

from __future__ import annotations

import json
import signal
import sys
import time


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    send({"type": "hello", "pid": 0, "protocol": 1})
    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg["type"]
        if kind == "bind":
            if mode == "never-ready":
                continue
            send({"type": "ready", "pid": 0, "rss": 0})
        elif kind == "turn.start":
            if mode == "garbage":
                for i in range(50):
                    sys.stdout.write(f"this is not json {i}\n")
                sys.stdout.flush()
                time.sleep(30)
            elif mode == "oversized":
                sys.stdout.write('{"type": "event", "pad": "' + "x" * (9 * 1024 * 1024) + '"}\n')
                sys.stdout.flush()
                time.sleep(30)
            elif mode == "exit-on-turn":
                sys.exit(3)
        elif kind == "health.ping":
            send({"type": "health.pong", "id": msg.get("id"), "rss": 0})
        elif kind == "shutdown":
            if mode == "ignore-term":
                while True:
                    time.sleep(1)
            return


if __name__ == "__main__":
    main()
