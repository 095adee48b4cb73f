"""Validation of OpenAI-style message lists in a ``results.jsonl`` row and its steps.

Rules of Benchflow's ``validate_prime_sft_row`` plus the project's stricter ones: a tool
message must answer an earlier call by id, tool arguments must be JSON objects, a called
tool must be defined, and banned keys are looked for on every message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from bf_assets.contract import BANNED_MESSAGE_KEYS

ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class Problem:
    check: str  # GATE_ROW_SHAPE | GATE_ROW_TOOLDEFS | GATE_ROW_BANNED_KEY
    message: str


def tool_names(tool_defs: Any) -> set[str] | None:
    """Names defined in ``tool_defs`` (None when the value is not a usable list)."""
    if isinstance(tool_defs, str):
        try:
            tool_defs = orjson.loads(tool_defs)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(tool_defs, list):
        return None
    names: set[str] = set()
    for t in tool_defs:
        if not isinstance(t, dict):
            continue
        fn = t.get("function")
        name = fn.get("name") if isinstance(fn, dict) else t.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


class MessageChecker:
    """Validates a message list incrementally: a later list that extends an earlier one (each
    step's prompt repeats the conversation so far) is checked only for what it adds."""

    __slots__ = (
        "where",
        "defined_tools",
        "check_tooldefs",
        "limit",
        "problems",
        "seen_calls",
        "has_assistant",
        "any_calls",
        "called",
    )

    def __init__(
        self,
        where: str,
        defined_tools: set[str] | None,
        *,
        check_tooldefs: bool = True,
        limit: int = 5,
    ) -> None:
        self.where = where
        self.defined_tools = defined_tools
        self.check_tooldefs = check_tooldefs
        self.limit = limit
        self.problems: list[Problem] = []
        self.seen_calls: set[str] = set()
        self.has_assistant = False
        self.any_calls = False
        self.called: set[str] = set()

    def fork(self, where: str) -> MessageChecker:
        """A checker that continues from this one's state, with no problems reported yet."""
        c = MessageChecker(
            where, self.defined_tools, check_tooldefs=self.check_tooldefs, limit=self.limit
        )
        c.seen_calls = set(self.seen_calls)
        c.has_assistant, c.any_calls, c.called = (
            self.has_assistant,
            self.any_calls,
            set(self.called),
        )
        return c

    def _add(self, check: str, message: str) -> None:
        if len(self.problems) < self.limit:
            self.problems.append(Problem(check, message))

    def feed(self, messages: list[Any], start: int = 0) -> None:
        w = self.where
        for i in range(start, len(messages)):
            if len(self.problems) >= self.limit:
                return
            m = messages[i]
            if not isinstance(m, dict):
                self._add("GATE_ROW_SHAPE", f"{w}[{i}] is not an object")
                continue
            banned = BANNED_MESSAGE_KEYS.intersection(m)
            if banned:
                self._add(
                    "GATE_ROW_BANNED_KEY",
                    f"{w}[{i}] carries banned key(s) {', '.join(sorted(banned))}",
                )
            role = m.get("role")
            if role not in ROLES:
                self._add("GATE_ROW_SHAPE", f"{w}[{i}] has invalid role {role!r}")
                continue
            if role == "system" and i != 0:
                self._add(
                    "GATE_ROW_SHAPE", f"{w}[{i}] is a system message after the first position"
                )
            if "content" not in m and "tool_calls" not in m:
                self._add("GATE_ROW_SHAPE", f"{w}[{i}] has neither content nor tool_calls")
            calls = m.get("tool_calls")
            if calls and role != "assistant":
                self._add("GATE_ROW_SHAPE", f"{w}[{i}] ({role}) carries tool_calls")
            if role == "assistant":
                self.has_assistant = True
                for call in calls or []:
                    self._call(call, i)
            elif role == "tool":
                tcid = m.get("tool_call_id")
                if not isinstance(tcid, str) or not tcid:
                    self._add("GATE_ROW_SHAPE", f"{w}[{i}] is a tool message without tool_call_id")
                elif tcid not in self.seen_calls:
                    self._add(
                        "GATE_ROW_SHAPE",
                        f"{w}[{i}] answers tool call {tcid!r}, which no earlier message made",
                    )

    def _call(self, call: Any, i: int) -> None:
        w = self.where
        if not isinstance(call, dict):
            self._add("GATE_ROW_SHAPE", f"{w}[{i}] has a tool call that is not an object")
            return
        self.any_calls = True
        cid = call.get("id")
        if isinstance(cid, str) and cid:
            self.seen_calls.add(cid)
        fn = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = fn.get("name")
        if isinstance(name, str):
            self.called.add(name)
        if not _is_json_object(fn.get("arguments")):
            self._add(
                "GATE_ROW_SHAPE",
                f"{w}[{i}] tool call {name!r} has arguments that are not a JSON object",
            )
        if self.check_tooldefs and self.defined_tools and name not in self.defined_tools:
            self._add(
                "GATE_ROW_TOOLDEFS",
                f"{w}[{i}] calls tool {name!r}, which tool_defs does not define",
            )

    def finish(self, *, require_assistant: bool = True) -> list[Problem]:
        out = list(self.problems)
        if require_assistant and not self.has_assistant:
            out.append(Problem("GATE_ROW_SHAPE", f"{self.where} has no assistant message"))
        if self.check_tooldefs and self.any_calls and not self.defined_tools:
            out.append(
                Problem(
                    "GATE_ROW_TOOLDEFS",
                    f"{self.where} has tool calls but tool_defs is empty or missing",
                )
            )
        return out


def check_messages(
    messages: Any,
    *,
    where: str,
    defined_tools: set[str] | None,
    require_assistant: bool = True,
    check_tooldefs: bool = True,
    limit: int = 5,
) -> list[Problem]:
    """Problems of one message list; at most ``limit`` to keep reports short."""
    if not isinstance(messages, list) or not messages:
        return [Problem("GATE_ROW_SHAPE", f"{where} is not a non-empty list of messages")]
    checker = MessageChecker(where, defined_tools, check_tooldefs=check_tooldefs, limit=limit)
    checker.feed(messages)
    return checker.finish(require_assistant=require_assistant)


def _is_json_object(args: Any) -> bool:
    if isinstance(args, dict):
        return True
    if not isinstance(args, str):
        return False
    try:
        return isinstance(orjson.loads(args), dict)
    except orjson.JSONDecodeError:
        return False


@dataclass(slots=True)
class StepFacts:
    """What the gate keeps of one ``trajectory[]`` step (the step itself is dropped)."""

    position: int
    is_object: bool
    exchange_index: Any
    source: Any
    has_extras: bool
    is_truncated: Any
    problems: list[Problem]
    called_tools: frozenset[str] = frozenset()


class StepValidator:
    """Facts of each ``trajectory[]`` step in turn.  Step k+1's prompt normally repeats step
    k's prompt and completion; when it does (a C-level list comparison), only the new messages
    are validated, so a 400-step row costs O(messages) instead of O(steps x messages)."""

    def __init__(self) -> None:
        self._prev: list[Any] | None = None
        self._checker: MessageChecker | None = None

    def state(self) -> tuple[list[Any] | None, MessageChecker | None]:
        """The state carried to the next step (neither part is mutated once stored)."""
        return self._prev, self._checker

    def restore(self, state: tuple[list[Any] | None, MessageChecker | None]) -> None:
        self._prev, self._checker = state

    def facts(self, position: int, step: Any) -> StepFacts:
        where = f"trajectory[{position}]"
        if not isinstance(step, dict):
            self._prev = self._checker = None
            return StepFacts(
                position,
                False,
                None,
                None,
                False,
                None,
                [Problem("GATE_ROW_SHAPE", f"{where} is not an object")],
            )
        extras = step.get("extras")
        prompt, completion = step.get("prompt"), step.get("completion")
        problems: list[Problem] = []
        called: frozenset[str] = frozenset()
        if not isinstance(prompt, list) or not isinstance(completion, list):
            problems.append(Problem("GATE_ROW_SHAPE", f"{where} prompt/completion are not lists"))
            self._prev = self._checker = None
        else:
            msgs = prompt + completion
            prev, base = self._prev, self._checker
            if (
                prev is not None
                and base is not None
                and len(prompt) >= len(prev)
                and prompt[: len(prev)] == prev
            ):
                checker = base.fork(where)
                checker.feed(msgs, start=len(prev))
            else:
                checker = MessageChecker(where, None, check_tooldefs=False)
                if msgs:
                    checker.feed(msgs)
                else:
                    checker.problems.append(
                        Problem("GATE_ROW_SHAPE", f"{where} is not a non-empty list of messages")
                    )
            problems = checker.finish()
            called = frozenset(checker.called)
            self._prev, self._checker = msgs, checker
        return StepFacts(
            position=position,
            is_object=True,
            exchange_index=extras.get("exchange_index") if isinstance(extras, dict) else None,
            source=extras.get("source") if isinstance(extras, dict) else None,
            has_extras=isinstance(extras, dict),
            is_truncated=step.get("is_truncated"),
            problems=problems,
            called_tools=called,
        )
