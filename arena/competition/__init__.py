"""A competition: strangers submit their own bots to a running league (docs/competition.md).

book.py (competitors' token digests and submissions, SQLite), intake.py (an archive unpacked safely),
desk.py (limits, freeze, a submission taken in, the league grown by the accepted entrants),
pipeline.py (the build queue: build, validate, enroll), validate.py (the conformance suite against an
image in a container without a network), service.py (the Submission gRPC service on the lobby's
server), reads.py (a competitor's reads a minute, on the service and the pages), client.py (``arena
submit`` and ``arena submissions``), setup.py (:func:`open_competition`:
the whole of it beside ``arena serve``'s league).
"""
