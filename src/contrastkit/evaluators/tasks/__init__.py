"""The evaluation tasks: resolution (pronoun choice per image) and retrieval (images per
gender-neutral query), VisoGender Sec. 3.5."""
