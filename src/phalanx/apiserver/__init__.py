"""The API server: `rest.API` (the generic registry every kind goes through), `server.Server` (its
HTTP front), discovery and Tables. Build an API with `build_api` (apiserver/builder.py)."""

from .builder import build_api

__all__ = ["build_api"]
