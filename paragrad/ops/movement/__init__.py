"""Movement: ops that move elements without computing new values (views, joins, pads, rearrangements)."""
