"""Hearth's desktop window: Qt views over the Pod. Everything here adapts runtime_host; no pod logic lives here."""

__version__ = "0.1.0"
