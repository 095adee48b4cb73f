"""LLM request/response bodies per harness, in the shapes LiteLLM's callback capture writes.

- codex-acp: Responses bodies (``input[]`` with a ``developer`` message, ``function_call`` /
  ``function_call_output`` items; responses with ``output[]``), path ``/v1/chat/completions``;
- claude-agent-acp: Anthropic ``/v1/messages`` bodies (``tool_use`` / ``tool_result`` blocks);
- openhands, gemini: chat-completions bodies (``messages`` with ``tool_calls`` / ``tool`` roles).

A :class:`Conversation` keeps the harness-format history; every request body re-sends it.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass
from typing import Any

from bf_sample import harness as H
from bf_sample.tasks import Action

ALNUM = string.ascii_letters + string.digits


def token(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choices(alphabet, k=n))


def hex_token(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def uuid_like(rng: random.Random) -> str:
    """A UUID-shaped hex id (8-4-4-4-12) drawn from ``rng``."""
    return "-".join(hex_token(rng, n) for n in (8, 4, 4, 4, 12))


@dataclass(frozen=True)
class Usage:
    """One exchange's tokens, cache-inclusive input (artifacts.md §3.2 ``agent_result``)."""

    prompt: int
    output: int
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.output


class Conversation:
    """Base: holds the task prompt, the startup catalog and the growing history."""

    def __init__(self, info: H.HarnessInfo, entries: list[tuple[str, str, str]], prompt: str):
        self.info = info
        self.entries = entries
        self.prompt = prompt
        self.history: list[dict[str, Any]] = []
        self.start()

    # -- per-harness pieces -------------------------------------------------------------
    def start(self) -> None:
        raise NotImplementedError

    def body(self) -> dict[str, Any]:
        raise NotImplementedError

    def call(self, action: Action) -> tuple[str, dict[str, Any]] | None:
        raise NotImplementedError

    def response(
        self, action: Action, call_id: str, usage: Usage, rid: str, created: int
    ) -> dict[str, Any]:
        raise NotImplementedError

    def push(self, action: Action, call_id: str) -> None:
        raise NotImplementedError

    def usage_dict(self, u: Usage) -> dict[str, Any]:
        raise NotImplementedError

    def call_id(self, rng: random.Random) -> str:
        return "call_" + token(rng, 24)

    def response_id(self, rng: random.Random) -> str:
        return "chatcmpl-" + uuid_like(rng)

    def input_shape(self) -> dict[str, Any]:
        return {"has_messages": True, "has_input": False, "n_messages": len(self.history)}

    # -- shared helpers ------------------------------------------------------------------
    def output_text(self, action: Action) -> str:
        """What the model emitted (for output-token estimates)."""
        parts = [action.say, action.thought]
        called = self.call(action)
        if called is not None:
            parts.append(json.dumps(called[1]))
        return "".join(parts)


class ChatConversation(Conversation):
    """openhands and gemini: OpenAI chat-completions through LiteLLM."""

    def start(self) -> None:
        system = (
            H.openhands_system(self.entries)
            if self.info.key == "openhands"
            else H.gemini_system(self.entries)
        )
        self.history = [
            {"role": "system", "content": system},
            {"role": "user", "content": self.prompt},
        ]

    def body(self) -> dict[str, Any]:
        return {
            "model": self.info.alias,
            "messages": list(self.history),
            "tools": H.CHAT_TOOLS[self.info.key],
            "stream": True,
        }

    def call(self, action: Action) -> tuple[str, dict[str, Any]] | None:
        oh = self.info.key == "openhands"
        if action.kind == "shell":
            if oh:
                return "execute_bash", {"command": action.command}
            return "run_shell_command", {"command": action.command, "description": action.say}
        if action.kind == "write":
            if oh:
                return "str_replace_editor", {
                    "command": "create",
                    "path": action.path,
                    "file_text": action.content,
                }
            return "write_file", {"file_path": action.path, "content": action.content}
        if action.kind == "skill":
            return ("invoke_skill" if oh else "activate_skill"), {"name": action.skill}
        return ("finish", {"message": action.say}) if oh else None

    def call_id(self, rng: random.Random) -> str:
        if self.info.key == "openhands":
            return "toolu_01" + token(rng, 22)
        return "call_" + hex_token(rng, 32)

    def response(
        self, action: Action, call_id: str, usage: Usage, rid: str, created: int
    ) -> dict[str, Any]:
        called = self.call(action)
        message: dict[str, Any] = {
            "content": action.say if called is None else (action.say or None),
            "role": "assistant",
            "tool_calls": None,
            "function_call": None,
        }
        if called is not None:
            name, args = called
            message["tool_calls"] = [
                {
                    "function": {"arguments": json.dumps(args), "name": name},
                    "id": call_id,
                    "type": "function",
                }
            ]
        if self.info.key == "gemini" and action.thought:
            message["reasoning_content"] = action.thought
        return {
            "id": rid,
            "created": created,
            "model": self.info.upstream,
            "object": "chat.completion",
            "system_fingerprint": None,
            "choices": [
                {
                    "finish_reason": "tool_calls" if called is not None else "stop",
                    "index": 0,
                    "message": message,
                }
            ],
            "usage": self.usage_dict(usage),
        }

    def push(self, action: Action, call_id: str) -> None:
        called = self.call(action)
        if called is None:
            self.history.append({"role": "assistant", "content": action.say})
            return
        name, args = called
        self.history.append(
            {
                "role": "assistant",
                "content": action.say or None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        self.history.append({"role": "tool", "tool_call_id": call_id, "content": action.output})

    def usage_dict(self, u: Usage) -> dict[str, Any]:
        out: dict[str, Any] = {
            "completion_tokens": u.output,
            "prompt_tokens": u.prompt,
            "total_tokens": u.total,
            "prompt_tokens_details": {"cached_tokens": u.cache_read},
        }
        if self.info.key == "gemini":
            out["completion_tokens_details"] = {"reasoning_tokens": u.reasoning}
        return out


class ResponsesConversation(Conversation):
    """codex-acp: OpenAI Responses API bodies (LiteLLM still records path /v1/chat/completions)."""

    def start(self) -> None:
        dev = [{"type": "input_text", "text": t} for t in H.codex_developer_texts(self.entries)]
        self.history = [
            {"type": "message", "role": "developer", "content": dev},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": H.CODEX_ENV_CONTEXT}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": self.prompt}],
            },
        ]

    def body(self) -> dict[str, Any]:
        return {
            "model": self.info.alias,
            "input": list(self.history),
            "tools": H.CODEX_TOOLS,
            "stream": True,
        }

    def input_shape(self) -> dict[str, Any]:
        return {"has_messages": False, "has_input": True, "n_messages": 0}

    def call(self, action: Action) -> tuple[str, dict[str, Any]] | None:
        if action.kind == "final":
            return None
        if action.kind == "write":
            cmd = f"cat > {action.path} <<'EOF'\n{action.content}EOF"
        elif action.kind == "skill":
            cmd = f"cat {self.info.skill_root}/{action.skill}/SKILL.md"
        else:
            cmd = action.command
        return "shell", {"command": ["bash", "-lc", cmd], "workdir": "/app", "timeout_ms": 120000}

    def response_id(self, rng: random.Random) -> str:
        return "resp_" + hex_token(rng, 48)

    def _reasoning(self, action: Action, rid: str) -> dict[str, Any]:
        summary = [{"type": "summary_text", "text": action.thought}] if action.thought else []
        return {"type": "reasoning", "id": "rs_" + rid[5:37], "summary": summary}

    def response(
        self, action: Action, call_id: str, usage: Usage, rid: str, created: int
    ) -> dict[str, Any]:
        output: list[dict[str, Any]] = [self._reasoning(action, rid)]
        called = self.call(action)
        if called is None:
            output.append(
                {
                    "type": "message",
                    "id": "msg_" + rid[5:37],
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": action.say, "annotations": []}],
                }
            )
        else:
            output.append(
                {
                    "type": "function_call",
                    "id": "fc_" + rid[5:37],
                    "call_id": call_id,
                    "name": called[0],
                    "arguments": json.dumps(called[1]),
                    "status": "completed",
                }
            )
        return {
            "id": rid,
            "object": "response",
            "created_at": created,
            "status": "completed",
            "model": self.info.upstream,
            "output": output,
            "usage": self.usage_dict(usage),
        }

    def push(self, action: Action, call_id: str) -> None:
        called = self.call(action)
        if called is None:
            self.history.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": action.say}],
                }
            )
            return
        self.history.append(
            {
                "type": "function_call",
                "name": called[0],
                "arguments": json.dumps(called[1]),
                "call_id": call_id,
            }
        )
        self.history.append(
            {"type": "function_call_output", "call_id": call_id, "output": action.output}
        )

    def usage_dict(self, u: Usage) -> dict[str, Any]:
        return {
            "input_tokens": u.prompt,
            "input_tokens_details": {"cached_tokens": u.cache_read},
            "output_tokens": u.output,
            "output_tokens_details": {"reasoning_tokens": u.reasoning},
            "total_tokens": u.total,
        }


class AnthropicConversation(Conversation):
    """claude-agent-acp: Anthropic Messages bodies on ``/v1/messages``."""

    def start(self) -> None:
        self.history = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": H.claude_reminder(self.entries)},
                    {"type": "text", "text": self.prompt},
                ],
            }
        ]

    def body(self) -> dict[str, Any]:
        return {
            "model": self.info.alias,
            "messages": list(self.history),
            "tools": H.CLAUDE_TOOLS,
            "stream": True,
        }

    def call(self, action: Action) -> tuple[str, dict[str, Any]] | None:
        if action.kind == "shell":
            return "Bash", {"command": action.command, "description": action.say}
        if action.kind == "write":
            return "Write", {"file_path": action.path, "content": action.content}
        if action.kind == "skill":
            return "Skill", {"skill": action.skill}
        return None

    def call_id(self, rng: random.Random) -> str:
        return "toolu_01" + token(rng, 22)

    def response_id(self, rng: random.Random) -> str:
        return "msg_01" + token(rng, 22)

    def _blocks(self, action: Action, call_id: str) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if action.say:
            blocks.append({"type": "text", "text": action.say})
        called = self.call(action)
        if called is not None:
            blocks.append(
                {"type": "tool_use", "id": call_id, "name": called[0], "input": called[1]}
            )
        return blocks

    def response(
        self, action: Action, call_id: str, usage: Usage, rid: str, created: int
    ) -> dict[str, Any]:
        return {
            "id": rid,
            "type": "message",
            "role": "assistant",
            "model": self.info.upstream,
            "content": self._blocks(action, call_id),
            "stop_reason": "tool_use" if self.call(action) is not None else "end_turn",
            "stop_sequence": None,
            "usage": self.usage_dict(usage),
        }

    def push(self, action: Action, call_id: str) -> None:
        self.history.append({"role": "assistant", "content": self._blocks(action, call_id)})
        if self.call(action) is not None:
            self.history.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call_id, "content": action.output}
                    ],
                }
            )

    def usage_dict(self, u: Usage) -> dict[str, Any]:
        return {
            "input_tokens": u.prompt - u.cache_read - u.cache_write,
            "cache_creation_input_tokens": u.cache_write,
            "cache_read_input_tokens": u.cache_read,
            "output_tokens": u.output,
        }


def conversation(harness: str, entries: list[tuple[str, str, str]], prompt: str) -> Conversation:
    info = H.HARNESSES[harness]
    if harness == "codex-acp":
        return ResponsesConversation(info, entries, prompt)
    if harness == "claude-agent-acp":
        return AnthropicConversation(info, entries, prompt)
    return ChatConversation(info, entries, prompt)


def next_usage(
    conv: Conversation, body_chars: int, action: Action, prev_prompt: int, rng: random.Random
) -> Usage:
    """Deterministic, plausible token counts: ~4 chars per token plus the uncaptured prompt."""
    prompt = conv.info.hidden_tokens + body_chars // 4
    reasoning = 16 + rng.randrange(240) if conv.info.key in ("codex-acp", "gemini") else 0
    output = len(conv.output_text(action)) // 3 + 12 + reasoning
    if conv.info.key == "claude-agent-acp":
        if prev_prompt == 0:
            return Usage(prompt, output, 0, prompt - 4)
        read = min(prev_prompt, prompt - 3)
        return Usage(prompt, output, read, prompt - read - 3)
    cached = (prev_prompt // 64) * 64 if prev_prompt else 0
    return Usage(prompt, output, min(cached, prompt), 0, reasoning)


def cost(info: H.HarnessInfo, u: Usage) -> float:
    p_in, p_out, p_read, p_write = info.prices
    fresh = u.prompt - u.cache_read - u.cache_write
    return (fresh * p_in + u.output * p_out + u.cache_read * p_read + u.cache_write * p_write) / 1e6
