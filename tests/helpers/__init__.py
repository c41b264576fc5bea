"""Test helpers: the scriptable fake model server and fixtures' building blocks."""
