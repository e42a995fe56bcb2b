from allfours.v1 import referee_pb2 as _referee_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConnectRequest(_message.Message):
    __slots__ = ("register", "ready")
    REGISTER_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    register: Register
    ready: Ready
    def __init__(self, register: _Optional[_Union[Register, _Mapping]] = ..., ready: _Optional[_Union[Ready, _Mapping]] = ...) -> None: ...

class ConnectResponse(_message.Message):
    __slots__ = ("registered", "assignment")
    REGISTERED_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    registered: Registered
    assignment: Assignment
    def __init__(self, registered: _Optional[_Union[Registered, _Mapping]] = ..., assignment: _Optional[_Union[Assignment, _Mapping]] = ...) -> None: ...

class Register(_message.Message):
    __slots__ = ("token", "bot_name", "bot_version", "protocol_version")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    token: str
    bot_name: str
    bot_version: str
    protocol_version: str
    def __init__(self, token: _Optional[str] = ..., bot_name: _Optional[str] = ..., bot_version: _Optional[str] = ..., protocol_version: _Optional[str] = ...) -> None: ...

class Registered(_message.Message):
    __slots__ = ("worker_id", "tournament")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    tournament: str
    def __init__(self, worker_id: _Optional[str] = ..., tournament: _Optional[str] = ...) -> None: ...

class Assignment(_message.Message):
    __slots__ = ("match_id", "seat", "ticket", "referee", "referee_tls", "rules", "time_control")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TICKET_FIELD_NUMBER: _ClassVar[int]
    REFEREE_FIELD_NUMBER: _ClassVar[int]
    REFEREE_TLS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    ticket: str
    referee: str
    referee_tls: bool
    rules: _referee_pb2.RuleSet
    time_control: _referee_pb2.TimeControl
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., ticket: _Optional[str] = ..., referee: _Optional[str] = ..., referee_tls: _Optional[bool] = ..., rules: _Optional[_Union[_referee_pb2.RuleSet, _Mapping]] = ..., time_control: _Optional[_Union[_referee_pb2.TimeControl, _Mapping]] = ...) -> None: ...

class Ready(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...
