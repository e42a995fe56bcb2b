"""The conformance suite: a scripted referee that drives any bot, in any language, through named checks.

``python -m sdk.conformance [--players 2|4] [--rules K=V,...] [--only CHECK] [--json] [--lobby] -- COMMAND [ARGS…]``
(console script ``allfours-conformance``); docs/bot-authors.md explains each check and how to read
a failed one.

Parts (each with its own docstring):

- :mod:`sdk.conformance.scenarios`: the scripted matches (explicit decks, what the house seats do,
  which protocol situation is staged) — pure data.
- :mod:`sdk.conformance.referee`: the scripted referee, a ``RefereeService`` on loopback that plays
  one scenario with the bot and logs what it did (:class:`~sdk.conformance.referee.RunLog`).
- :mod:`sdk.conformance.launch`: launching the bot as the arena does (placeholders, environment),
  its start-up time, memory and exit status (per-game mode).
- :mod:`sdk.conformance.lobby`: lobby mode: the bot launched once as a worker, a scripted lobby
  (Register, one Assignment per scenario, Ready), the lobby going away and coming back
  (``lobby-redial``) and why a run stopped early.
- :mod:`sdk.conformance.checks`: the named checks, each a judge of one run's log, and the mode(s)
  each belongs to (``exit`` per-game only; ``lobby-register``, ``lobby-ready``,
  ``lobby-redial`` lobby only).
- :mod:`sdk.conformance.cli`: the command line, the table and the JSON output.
"""
