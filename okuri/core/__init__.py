"""The pure core: value types, codecs, key layout and transitions. No I/O, no clock reads."""
