"""Evaluation and benchmark code, beside the application: `tipline eval …` and `tipline bench …`
(adapters/main.py) run it; nothing in adapters/, bot/, core/, storage/ or schema/ imports it."""
