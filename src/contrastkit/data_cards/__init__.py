"""Dataset cards and datasheets rendered from build metadata.

:func:`render_card` turns an export's ``build_metadata.json`` into the Hub ``README.md``:
YAML metadata (licence, task categories, size category, pretty name, configs) followed by
a datasheet (motivation, composition, collection, preprocessing, uses, distribution,
maintenance). Every number in the card comes from the metadata; the templates hold prose
only. This package reads build metadata only and imports nothing from the builders.
"""

from contrastkit.data_cards.cards import card_yaml, render_card, size_category

__all__ = ["card_yaml", "render_card", "size_category"]
