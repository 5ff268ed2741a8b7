"""The package version, in a leaf module so that any module may import it without importing edgekit's API."""

__version__ = "0.1.0"
