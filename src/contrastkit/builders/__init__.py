"""Assemble datasets: VisoGender-style URL sets (``visogender``)."""
