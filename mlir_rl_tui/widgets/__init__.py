"""Widgets of the app, one feature per module, each with its own DEFAULT_CSS."""
