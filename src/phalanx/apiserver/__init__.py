"""apiserver."""
