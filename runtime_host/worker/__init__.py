"""The worker process: one per (person, agent), bound over its pipe at spawn.

Lean by design: readiness needs only the standard library. httpx, the providers and the tools are
imported in the background after `ready` is sent. Never imports Qt, the ORM or the store.
"""
