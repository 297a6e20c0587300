"""Evaluation and benchmark code, beside the application: `tipline eval …` and `tipline bench …` run it
(evals/cli.py, loaded by adapters/dev_commands.py only when one of them runs, from a source checkout); nothing
in bot/, core/, storage/ or schema/ imports it, and the wheel and the image leave it out."""
