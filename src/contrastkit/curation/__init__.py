"""Keep datasets healthy: URL canonicalisation and duplicate finding (``dedup``), dataset
checks (``validation``)."""
