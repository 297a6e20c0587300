"""Evidence for a claim: the shared types (base.py) and one module per source."""
