"""The shared vocabulary of every floor: verdicts, fact-checks, matches, citations and the `Result` of a
check (schema/models.py). It sits below storage/, which persists these values, and imports none of
adapters/, bot/, core/ or storage/ (tests/test_architecture.py)."""
