"""Tournament formats: how many games a precision needs (duplicate pairs), the sequential test
(SPRT) that stops a match-up as soon as it is decided, and the ladder that chooses a large field's
next duplicate pairs by what they teach."""
