"""What a conformance run saw, written down by the scripted referee (:class:`RunLog`, one per scenario)
and the scripted lobby (:class:`LobbyLog`), and read by the checks (times in seconds from the bot's
launch)."""

from __future__ import annotations

from dataclasses import dataclass, field

from referee.rules import Action


@dataclass(slots=True)
class HelloSeen:
    """A Hello the bot sent: on which stream (1-based), when (s after launch), and its fields."""

    stream: int
    at: float
    ticket: str
    protocol_version: str
    bot_name: str
    first_message: bool


@dataclass(slots=True)
class RequestSent:
    """A DecisionRequest sent to the bot (``k``: the bot's k-th request, 1-based)."""

    k: int
    seq: int
    game: int
    phase: str
    legal: list[Action]
    sent_at: float
    time_left_ms: int
    stream: int
    resent: bool = False
    answered_at: float | None = None
    first_answer: Action | None = None
    first_answer_legal: bool = False
    first_answer_at: float | None = None
    timed_out: bool = False
    #: What was wrong with a malformed message (a Decision the wire refuses, or bytes that are not a
    #: PlayRequest) sent while this request was pending and before any well-formed answer, else empty.
    first_answer_malformed: str = ""


@dataclass(slots=True)
class DecisionSeen:
    """A Decision the bot sent. ``verdict``: ``answer`` (played), ``illegal`` (rejected by the rules),
    ``rejected-on-purpose`` (the staged rejection), ``malformed``, ``duplicate`` (a seq already
    answered), ``late`` (a seq that had timed out), ``unknown-seq`` (never sent to this seat),
    ``lost-with-stream`` (sent on the stream the referee dropped)."""

    seq: int
    action: str
    at: float
    stream: int
    verdict: str
    #: The seq of the request it was taken for (``seq``, or the pending request's for a seq of 0).
    answers: int = 0


@dataclass(slots=True)
class RunLog:
    """Everything a run saw (times in seconds from the bot's launch)."""

    scenario: str
    ticket: str
    hellos: list[HelloSeen] = field(default_factory=list)
    requests: list[RequestSent] = field(default_factory=list)
    decisions: list[DecisionSeen] = field(default_factory=list)
    rejections: list[tuple[int, str]] = field(default_factory=list)
    streams_dropped: list[int] = field(default_factory=list)
    disconnects: list[str] = field(default_factory=list)
    match_end_sent: bool = False
    match_end_at: float | None = None
    failure: str = ""
    exit_code: int | None = None
    exit_after_end_s: float | None = None
    startup_s: float | None = None
    peak_rss_mib: float = 0.0
    stderr_tail: str = ""
    wall_s: float = 0.0
    #: Lobby mode: what the scripted lobby saw (the same log for every scenario of the run), else ``None``.
    lobby: LobbyLog | None = None
    notes: list[str] = field(default_factory=list)
    #: The failures of its own code the bot reported with its Decisions (``Decision.counts``, cumulative
    #: over the match: the highest seen): exceptions its strategy raised, fallback moves sent in its place.
    bot_exceptions: int = 0
    bot_fallbacks: int = 0

    def by_seq(self, seq: int) -> list[DecisionSeen]:
        """The decisions taken for request ``seq`` (naming it, or sent with seq 0 while it was pending)."""
        return [d for d in self.decisions if d.answers == seq]


@dataclass(slots=True)
class RegisterSeen:
    """A Register the worker sent (``first_message``: it was the stream's first message)."""

    at: float
    token: str
    bot_name: str
    protocol_version: str
    first_message: bool


@dataclass(slots=True)
class RedialSeen:
    """The ``lobby-redial`` step (times in seconds from the launch): the scripted lobby closed the worker's
    stream with UNAVAILABLE and stopped serving, as an arena that restarts does, then listened again on
    the same address; what the worker did then.

    - ``dropped_at``: when the stream was closed; ``back_at``: when the lobby listened again (``None``: it
      could not, ``failure`` says why).
    - ``refused_at``: when the lobby, back, refused the worker's first new stream (UNAVAILABLE; ``None``:
      none came); ``register``: the first Register on a stream accepted after the drop (``None``: none).
    - ``exit_code``: the worker's status if it ended before it registered again, and ``last_words``: the
      last line of its output then (quoted, or ``""``).
    - ``match_id``: the Assignment given after the new Register; ``failure``: why that Assignment was not
      played to MatchEnd with a Ready after it (one line; ``""``: it was).
    """

    dropped_at: float
    back_at: float | None = None
    refused_at: float | None = None
    register: RegisterSeen | None = None
    exit_code: int | None = None
    last_words: str = ""
    match_id: str = ""
    failure: str = ""


@dataclass(slots=True)
class LobbyLog:
    """What the scripted lobby saw (times in seconds from the launch).

    - ``registers``: one per lobby stream the worker opened.
    - ``readies``: ``(match id cut to 80 characters, seconds from the launch)`` per Ready (at most
      :data:`sdk.conformance.lobby.MAX_READIES`).
    - ``assigned``: match ids in the order assigned; ``ended``: those whose match reached MatchEnd.
    - ``ready_after_s``: match id -> seconds from its MatchEnd to the Ready naming it (absent: none).
    - ``ready_early_s``: match id -> seconds from its first Ready to its MatchEnd, for one sent before
      the match ended (the arena's lobby would take the worker as idle while it still plays the seat).
    - ``fatal``: why the run stopped early (one line), else ``""``.
    - ``redial``: the ``lobby-redial`` step, after the scenarios (``None``: not run).
    """

    token: str
    bot_name: str
    registers: list[RegisterSeen] = field(default_factory=list)
    readies: list[tuple[str, float]] = field(default_factory=list)
    assigned: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)
    ready_after_s: dict[str, float] = field(default_factory=dict)
    ready_early_s: dict[str, float] = field(default_factory=dict)
    fatal: str = ""
    redial: RedialSeen | None = None
