from __future__ import annotations

import re

import msgspec
import pytest

from kernel.events import KERNEL_EVENT_TYPES, Event, EventRegistry, RunStarted, tag_of


def all_types():
    from kernel.lifecycle.session import Session

    return Session.open(environ={}).events.types()


@pytest.mark.parametrize("event_type", KERNEL_EVENT_TYPES, ids=lambda t: t.__name__)
def test_round_trip_msgpack_and_json(event_type):
    registry = EventRegistry(KERNEL_EVENT_TYPES)
    event = event_type(seq=3, time=42)
    for protocol, encode in (("msgpack", msgspec.msgpack.encode), ("json", msgspec.json.encode)):
        assert registry.decoder(protocol).decode(encode(event)) == event


def test_every_registered_event_is_past_tense_with_a_unique_snake_case_tag():
    types = all_types()
    tags = [tag_of(t) for t in types]
    assert len(tags) == len(set(tags))
    for event_type in types:
        words = re.findall(r"[A-Z][a-z]*", event_type.__name__)
        assert any(w.endswith("ed") for w in words), f"{event_type.__name__} is not named in the past tense"
        assert re.fullmatch(r"[a-z][a-z0-9_]*", tag_of(event_type))
        assert event_type.__struct_config__.frozen


def test_old_payload_still_decodes_with_defaults():
    """A payload written before a field existed decodes; the new field takes its default."""
    old = b'{"kind":"run_started","seq":0,"time":5,"job_name":"wordcount"}'
    event = EventRegistry(KERNEL_EVENT_TYPES).decoder("json").decode(old)
    assert event == RunStarted(time=5, job_name="wordcount", clock="", seed=0)
    old_msgpack = msgspec.msgpack.encode({"kind": "run_started", "time": 5})
    assert EventRegistry(KERNEL_EVENT_TYPES).decoder().decode(old_msgpack) == RunStarted(time=5)


def test_tags_are_never_reused():
    registry = EventRegistry(KERNEL_EVENT_TYPES)

    class Impostor(Event, tag="run_started"):
        other: int = 0

    with pytest.raises(ValueError, match="event tag 'run_started' is used by both"):
        registry.register(Impostor)


def test_tag_must_be_explicit_and_fields_need_defaults():
    registry = EventRegistry()

    class NoTagGiven(Event):
        x: int = 0

    with pytest.raises(ValueError, match="needs an explicit snake_case tag"):
        registry.register(NoTagGiven)

    class FieldWithoutDefault(Event, tag="field_without_default"):
        x: int

    with pytest.raises(ValueError, match="FieldWithoutDefault.x needs a default"):
        registry.register(FieldWithoutDefault)

    class RequiredAmongDefaults(Event, kw_only=True, tag="required_among_defaults"):
        a: int = 0
        b: str
        c: list = msgspec.field(default_factory=list)

    with pytest.raises(ValueError, match="RequiredAmongDefaults.b needs a default"):
        registry.register(RequiredAmongDefaults)


def test_events_are_frozen():
    event = RunStarted(time=1)
    with pytest.raises(AttributeError):
        event.time = 2  # type: ignore[misc]
