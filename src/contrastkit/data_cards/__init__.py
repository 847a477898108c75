"""Dataset cards and datasheets rendered from build metadata.

Its modules arrive with the export issue; it reads build metadata only."""
