"""machinery."""
