"""Hearth's safety core: personal-data and secret detectors, per-phase policy decisions, untrusted-text
wrapping and prompt-injection scoring, and audit events. Qt-free and stdlib only, so the worker may import it.

Submodules load on first attribute access; `import runtime_host.safety` costs next to nothing.
"""
