"""Imported by argv_exit.py from its own folder, as `python argv_exit.py` would find it."""
GREETING = "found beside the script"
