"""Clients' transcript formats, one small module each (`evidence.TranscriptFormat`).

A hook adapter names the format its client writes (`interfaces/hook/`); the engine reads
the transcript with it (`evidence.read_evidence`). A client whose transcript cannot be
read at all needs no module here: its hook adapter names none, and its deliveries count
as printed.
"""
