"""The files of the selected COCO sources, checked against their annotations before any
edit (issue 44, item 5): a person box and segmentation describe the image size the COCO
file declares, which is the size the person mask is rasterised at, so a declared size that
is not the file's (200000 x 200000 for a small photo) is refused, naming the file, before
anything is rasterised or edited."""

from __future__ import annotations

from collections.abc import Sequence

from contrastkit.builders.coco import SourceImage
from contrastkit.errors import DataFormatError

__all__ = ["check_image_sizes"]


def check_image_sizes(sources: Sequence[SourceImage]) -> None:
    """Check that each source's image file is there and, as the build reads it (turned
    as its EXIF orientation says: :mod:`contrastkit.builders.source_photos`), of the size
    its COCO annotations declare, which its person box and segmentation were checked
    against and its mask is rasterised at; only the headers are read.

    Raises:
        DataFormatError: naming the image file: missing, unreadable, or of another size.
    """
    from PIL import Image

    from contrastkit.pipeline.sources import exif_orientation

    for source in sources:
        try:
            with Image.open(source.path) as image:
                stored = image.size
                turned = exif_orientation(image) in (5, 6, 7, 8)  # a quarter turn
        except FileNotFoundError as error:
            raise DataFormatError(source.path, None, None, "image file not found") from error
        except (OSError, ValueError, Image.DecompressionBombError) as error:
            raise DataFormatError(
                source.path, None, None, f"not a readable image ({error})"
            ) from error
        shown = stored[::-1] if turned else stored
        declared = (source.width, source.height)
        if declared != shown:
            how = f" (stored {stored[0]}x{stored[1]}, turned by its EXIF)" if turned else ""
            raise DataFormatError(
                source.path, None, "width",
                f"the COCO annotations declare image {source.source_id} "
                f"{declared[0]}x{declared[1]}, but the file is {shown[0]}x{shown[1]}{how}: "
                "its person box and segmentation do not describe this image",
            )  # fmt: skip
