"""Tournament formats: how many games a precision needs (duplicate pairs) and the sequential test
(SPRT) that stops a match-up as soon as it is decided."""
