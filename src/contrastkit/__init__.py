"""contrastkit: build, maintain, publish and score datasets that measure gender bias in
vision-language models."""

__version__ = "0.1.0"
