"""optsched."""
