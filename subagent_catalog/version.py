"""The package version (one place; the facade, the cache key and archive manifests read it)."""

__version__ = "0.1.0"
