"""Transcript formats, one module each (`registry` lists them); `forgemem.capture.transcripts` is the way in."""
